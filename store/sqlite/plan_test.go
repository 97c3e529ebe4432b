package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

// TestQueryPlans runs EXPLAIN QUERY PLAN on each list query, on the
// claim query and on the deletion statements: each filtered list searches
// an index already in its order (no scan of every run, no sort), the claim
// query searches runs_claim in its order, and no deletion statement scans
// a table.
func TestQueryPlans(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "plans.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Some runs, so that the plans are those of a store in use.
	for i := range 50 {
		r := store.Run{ID: "r" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Swarm: "sw", Parent: map[bool]string{true: "p"}[i%5 == 0]}
		if _, err := s.Create(ctx, r, "", 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	plan := func(q string, args ...any) []string {
		t.Helper()
		rows, err := s.rdb.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("explain %s: %v", q, err)
		}
		defer rows.Close()
		var steps []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			steps = append(steps, detail)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return steps
	}
	for _, c := range []struct {
		name  string
		f     store.Filter
		index string // "" for none: walking runs newest first is the plan
	}{
		{"newest", store.Filter{Limit: 50}, ""},
		{"by swarm", store.Filter{Swarm: "sw", Limit: 50}, "runs_swarm"},
		{"by state", store.Filter{State: store.Paused, Limit: 50}, "runs_state"},
		{"by parent", store.Filter{Parent: "p", Limit: 50}, "runs_parent"},
		{"by swarm and state", store.Filter{Swarm: "sw", State: store.Paused, Limit: 50, Offset: 10}, "INDEX"},
	} {
		q, args := listQuery(c.f)
		steps := plan(q, args...)
		joined := strings.Join(steps, "; ")
		if strings.Contains(joined, "TEMP B-TREE") {
			t.Errorf("list %s sorts: %s", c.name, joined)
		}
		if c.index == "" {
			continue
		}
		if !strings.Contains(joined, "SEARCH runs USING") || !strings.Contains(joined, c.index) {
			t.Errorf("list %s does not search %s: %s", c.name, c.index, joined)
		}
	}
	if joined := strings.Join(plan(expiredQuery, int64(0), 10), "; "); !strings.Contains(joined, "SEARCH runs USING INDEX runs_claim") || strings.Contains(joined, "TEMP B-TREE") {
		t.Errorf("claim query does not search runs_claim in its order: %s", joined)
	}
	// A run's records are a range of the journal's rowid, in order.
	if joined := strings.Join(plan(readQuery, "r", int64(0), int64(10)), "; "); !strings.Contains(joined, "SEARCH j USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)") || strings.Contains(joined, "TEMP B-TREE") {
		t.Errorf("read query does not read a range of the journal in order: %s", joined)
	}
	// A node's leases are found among the running runs, not all runs.
	for q, args := range map[string][]any{renewStmt: {int64(0), "o"}, heldQuery: {"o"}} {
		if joined := strings.Join(plan(q, args...), "; "); !strings.Contains(joined, "runs USING INDEX runs_claim") {
			t.Errorf("%s\ndoes not walk runs_claim: %s", q, joined)
		}
	}
	// Deleting a tree and finding runs to expire search indexes (the
	// latter in rid order, with no sort, so that it stops at its limit),
	// and every delete statement finds its rows by an index.
	stmts := map[string][]any{
		deletion.Root:     {"p"},
		deletion.Children: {"p"},
		deletion.Finished: {"completed", int64(0), 10},
		deletion.Run:      {int64(1)},
	}
	for _, q := range append(deletion.ByRun, deletion.AfterRun...) {
		stmts[q] = []any{int64(1)}
	}
	for _, q := range deletion.ByTeam {
		stmts[q] = []any{"p"}
	}
	for q, args := range stmts {
		for _, step := range plan(q, args...) {
			if strings.HasPrefix(step, "SCAN ") || strings.Contains(step, "TEMP B-TREE") {
				t.Errorf("%s\nscans or sorts: %s", q, step)
			}
		}
	}
}
