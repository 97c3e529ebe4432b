// Package sqlval converts between the store's Go values and the column
// values of the SQL stores.
package sqlval

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Nanos encodes a time as Unix nanoseconds, the zero time as 0.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos decodes Nanos.
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Blob binds a JSON value: NULL when empty.
func Blob(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}

// NonZero binds n, or NULL for 0 (an Update field left as it is).
func NonZero(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// NonEmpty binds s, or NULL for "" (an Update field left as it is).
func NonEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Reason binds the reason u gives a run: NULL when u leaves it as it is,
// the empty string when u clears it.
func Reason(u *store.Update) any {
	if r, ok := u.NewReason(); ok {
		return r
	}
	return nil
}

// UsageJSON binds a usage as JSON text, NULL for nil.
func UsageJSON(u *model.Usage) (any, error) {
	if u == nil {
		return nil, nil
	}
	b, err := json.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("encode usage: %w", err)
	}
	return string(b), nil
}

// Where is the WHERE clause of a run filter (empty, or " WHERE ..." on the
// columns of table: swarm, state, parent, id, created_at, rid) and its
// arguments; param(n) writes the n-th placeholder ("?" for SQLite, "$n"
// for PostgreSQL).
func Where(f store.Filter, table string, param func(n int) string) (string, []any) {
	var (
		conds []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "?", param(len(args))))
	}
	for _, c := range []struct{ col, v string }{{"swarm", f.Swarm}, {"state", string(f.State)}, {"parent", f.Parent}} {
		if c.v != "" {
			add(c.col+" = ?", c.v)
		}
	}
	if f.Parent != "" {
		// Spelled out, so that the planners (which cannot see that
		// parent = $n implies it) use the partial indexes on parent.
		conds = append(conds, "parent <> ''")
	} else if f.TopLevel {
		conds = append(conds, "parent = ''")
	}
	if f.IDPrefix != "" {
		// substr counts characters in both databases, and the prefix is
		// compared as is (no LIKE wildcards to escape).
		args = append(args, utf8.RuneCountInString(f.IDPrefix))
		n := param(len(args))
		add("substr(id, 1, "+n+") = ?", f.IDPrefix)
	}
	if !f.Since.IsZero() {
		add("created_at >= ?", f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		add("created_at < ?", f.Until.UnixNano())
	}
	if f.Before != "" {
		// An unknown id makes the subquery NULL, and the comparison
		// false: no run matches.
		add("rid < (SELECT rid FROM "+table+" WHERE id = ?)", f.Before)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
