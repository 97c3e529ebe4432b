// Command scale measures how the latency of a store's everyday operations
// grows with the number of runs it holds: each operation through the
// store's API on an empty store and on one holding -finished finished runs,
// -paused paused runs and -running runs leased to another node, in SQLite
// and in PostgreSQL. The two stores are measured together, their
// operations interleaved, so that both see the same load on the machine.
// It prints a table of medians (ms) and ratios per store.
//
// Run it from the repository's root (about 8 minutes on 2 cores, 1.3 GB
// of disk at the most):
//
//	go run ./bench/scale                      # 1,000,000 finished + 100,000 paused runs
//	go run ./bench/scale -finished 100000 -paused 10000 -stores sqlite
//
// The filled store is written with bulk SQL in the store's own schema, the
// way the runtime leaves runs: each is inserted running and leased, with
// one journal record, and then updated to its final state (in PostgreSQL
// the update leaves the old version behind until a vacuum). In PostgreSQL
// the finished runs' node (node-gone) has a lease that ran out, and the
// node holding the running runs (node-other) renews its lease -renewals
// times before the measurements; the first poll after that, which finds
// node-gone's lease out and sweeps it, is timed on its own. PostgreSQL's
// table is measured as the fill left it (autovacuum is off for the
// measured schemas, so that no vacuum runs at a moment of its own), then
// after a VACUUM (what autovacuum does once 2% of the table changed), then
// after an ANALYZE, then with 2% of the table's runs finished since
// (about what autovacuum lets accumulate). PostgreSQL's stores live in schemas of their own
// (search_path), dropped at the end; SQLite's in a temporary directory,
// removed at the end.
//
// The operations: start (Create a run leased to this node, with one
// record), claim (Claim by id of a runnable run), poll (ClaimExpired with
// nothing runnable: what an idle node runs), resume (Send a resume to a
// paused run), status (Get), and List newest first, 50 runs: by state
// (paused), by swarm, and with no filter.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/postgres"
	"github.com/swarmrt/swarm/store/sqlite"
)

type options struct {
	finished, paused, running int
	renewals                  int
	reps                      int
	stores                    string
	pgURL                     string
	dir                       string
}

func main() {
	var o options
	flag.IntVar(&o.finished, "finished", 1_000_000, "finished runs in the filled store")
	flag.IntVar(&o.paused, "paused", 100_000, "paused runs in the filled store")
	flag.IntVar(&o.running, "running", 1_000, "running runs leased to another node in the filled store")
	flag.IntVar(&o.renewals, "renewals", 100, "lease renewals of the running runs' node before PostgreSQL is measured")
	flag.IntVar(&o.reps, "reps", 201, "measurements of each operation (the median is reported)")
	flag.StringVar(&o.stores, "stores", "sqlite,postgres", "comma-separated stores to measure: sqlite, postgres")
	flag.StringVar(&o.pgURL, "postgres", "postgres://127.0.0.1:5432/test?sslmode=disable", "PostgreSQL database (a schema of its own is created in it and dropped)")
	flag.StringVar(&o.dir, "dir", "", "directory for the SQLite files (default: a temporary one)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// ops are the measured operations, in table order.
var ops = []string{"start", "claim", "poll", "resume", "status", "list state", "list swarm", "list newest"}

// column is one measured store: the medians of each operation, in ms.
type column struct {
	name string
	ms   map[string]float64
}

func run(o options) error {
	if o.finished < 0 || o.paused < 0 || o.running < 0 || o.renewals < 0 || o.reps < 1 {
		return errors.New("-finished, -paused, -running and -renewals must not be negative, -reps must be positive")
	}
	ctx := context.Background()
	host, _ := os.Hostname()
	fmt.Printf("# %s, %d CPUs, %s/%s, %s; %d finished + %d paused + %d running runs; medians of %d\n\n",
		host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), o.finished, o.paused, o.running, o.reps)
	for _, name := range strings.Split(o.stores, ",") {
		var (
			pairs []pair
			err   error
		)
		switch strings.TrimSpace(name) {
		case "sqlite":
			pairs, err = measureSQLite(ctx, o)
		case "postgres":
			pairs, err = measurePostgres(ctx, o)
		default:
			err = fmt.Errorf("unknown store %q (want sqlite or postgres)", name)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		printTable(name, pairs)
	}
	return nil
}

// pair is a measurement of an empty store and of a filled one, taken
// together (their operations interleaved, so that both see the same load
// on the machine).
type pair struct{ empty, filled column }

func printTable(name string, pairs []pair) {
	fmt.Printf("\n%s (ms)\n\n| operation |", name)
	for _, p := range pairs {
		fmt.Printf(" %s | %s | ratio |", p.empty.name, p.filled.name)
	}
	fmt.Print("\n| --- |")
	for range pairs {
		fmt.Print(" ---: | ---: | ---: |")
	}
	fmt.Println()
	for _, op := range ops {
		fmt.Printf("| %s |", op)
		for _, p := range pairs {
			fmt.Printf(" %.3f | %.3f | %.2f× |", p.empty.ms[op], p.filled.ms[op], p.filled.ms[op]/p.empty.ms[op])
		}
		fmt.Println()
	}
}

// fill is the bulk filler of one store: it writes the runs of the filled
// store, and its ids tell which run has which state.
type fill struct {
	finished, paused, running int
	every                     int // every every-th of the first finished+paused runs is paused
}

func newFill(o options) fill {
	f := fill{finished: o.finished, paused: o.paused, running: o.running, every: 1}
	if o.paused > 0 {
		f.every = max(1, (o.finished+o.paused)/o.paused)
	}
	return f
}

// total is the number of finished and paused runs (ids f<i> and p<i>, i in
// 1..total) before the running ones (h<i>).
func (f fill) total() int { return f.finished + f.paused }

// pausedIDs picks n of the paused runs, spread over the store; each pass
// picks other ones.
func (f fill) pausedIDs(n, pass int) []string {
	if f.paused == 0 {
		return nil
	}
	count := f.total() / f.every
	ids := make([]string, 0, n)
	for k := range min(n, count) {
		i := (k*count/min(n, count)+pass)%count*f.every + f.every
		ids = append(ids, fmt.Sprintf("p%d", i))
	}
	return ids
}

// anyIDs picks n runs, spread over the store.
func (f fill) anyIDs(n int) []string {
	ids := make([]string, 0, n)
	for k := range min(n, f.total()) {
		i := k*f.total()/min(n, f.total()) + 1
		p := "f"
		if i%f.every == 0 && f.paused > 0 {
			p = "p"
		}
		ids = append(ids, fmt.Sprintf("%s%d", p, i))
	}
	return ids
}

// statements are the statements that fill a store with tables runs and
// journal, now being the time in Unix nanoseconds, in dialect pg or not.
// seq(n) is a table expression of the integers 1..n as column i.
func (f fill) statements(runs, journal string, seq func(n int) string, now int64, pg bool) []string {
	pausedWhen := fmt.Sprintf("i %% %d = 0", f.every)
	if f.paused == 0 {
		pausedWhen = "false"
	}
	concat := func(a, b string) string { return a + " || " + b }
	lease := now + int64(time.Hour)
	// SQLite's journal is keyed by pos, (rid << 24) | seq.
	pos, posValue := "pos, ", "(rid << 24) | 1, "
	if pg {
		pos, posValue = "", ""
	}
	st := []string{
		// Every run is created running, leased, with its first record.
		fmt.Sprintf(`INSERT INTO %s (id, swarm, parent, state, epoch, owner, lease_until, last_seq, created_at, updated_at)
			SELECT CASE WHEN %s THEN %s ELSE %s END, %s, '', 'running', 1, 'node-gone', %d + i, 1, %d + i, %d + i FROM %s`,
			runs, pausedWhen, concat("'p'", "i"), concat("'f'", "i"), concat("'sw'", "(i % 20)"), now-int64(time.Hour), now-int64(2*time.Hour), now-int64(2*time.Hour), seq(f.total())),
		fmt.Sprintf(`INSERT INTO %s (%srid, seq, key, type, data, time)
			SELECT %srid, 1, 'start', 'run_started', %s, created_at FROM %s`, journal, pos, posValue, blob(`{"input":"a question of a few words"}`, pg), runs),
		// Then each finishes or pauses, and gives its lease back.
		fmt.Sprintf(`UPDATE %s SET state = CASE WHEN id LIKE 'p%%' THEN 'paused' ELSE 'completed' END,
			owner = '', lease_until = 0, turn = 1, result = CASE WHEN id LIKE 'f%%' THEN %s END,
			usage = '{"input_tokens":120,"output_tokens":40}', updated_at = created_at + 1000000000`, runs, blob(`"an answer of a few words"`, pg)),
	}
	if f.running > 0 {
		st = append(st, fmt.Sprintf(`INSERT INTO %s (id, swarm, parent, state, epoch, owner, lease_until, last_seq, created_at, updated_at)
			SELECT %s, %s, '', 'running', 1, 'node-other', %d, 0, %d + i, %d + i FROM %s`,
			runs, concat("'h'", "i"), concat("'sw'", "(i % 20)"), now, now, now, seq(f.running)))
	}
	if pg {
		// A lease per owner (schema version 13): node-gone's ran out,
		// node-other renews its own (see the renewals in
		// measurePostgres), and its runs' leases have run out since
		// they were claimed.
		st = append(st, fmt.Sprintf(`INSERT INTO swarm_leases (owner, until) VALUES ('node-gone', %d), ('node-other', %d)`,
			now-int64(time.Hour), lease))
	} else {
		st = append(st, fmt.Sprintf(`UPDATE %s SET lease_until = %d WHERE owner = 'node-other'`, runs, lease))
	}
	return st
}

func blob(s string, pg bool) string {
	if pg {
		return "convert_to('" + s + "', 'UTF8')"
	}
	return "CAST('" + s + "' AS BLOB)"
}

func measureSQLite(ctx context.Context, o options) ([]pair, error) {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "swarm-scale-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	empty, full := filepath.Join(dir, "empty.db"), filepath.Join(dir, "filled.db")
	for _, path := range []string{empty, full} {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, err
		}
		s.Close()
	}
	f := newFill(o)
	start := time.Now()
	if err := fillSQLite(ctx, full, f); err != nil {
		return nil, err
	}
	fi, err := os.Stat(full)
	if err != nil {
		return nil, err
	}
	fmt.Printf("sqlite: filled in %s, %d MB\n", time.Since(start).Round(time.Second), fi.Size()>>20)
	var stores []store.Store
	for _, path := range []string{empty, full} {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		stores = append(stores, s)
	}
	ms, err := measure(ctx, []target{{stores[0], fill{every: 1}}, {stores[1], f}}, o.reps, 0)
	if err != nil {
		return nil, err
	}
	return []pair{{column{"empty", ms[0]}, column{"filled", ms[1]}}}, nil
}

func fillSQLite(ctx context.Context, path string, f fill) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=synchronous(off)&_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	seq := func(n int) string {
		return fmt.Sprintf("(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) SELECT i FROM s)", n)
	}
	for _, q := range f.statements("runs", "journal", seq, time.Now().UnixNano(), false) {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
	}
	return tx.Commit()
}

func measurePostgres(ctx context.Context, o options) ([]pair, error) {
	base, err := pgx.Connect(ctx, o.pgURL)
	if err != nil {
		return nil, err
	}
	defer base.Close(ctx)
	var stores []store.Store
	var conns []*pgx.Conn
	for range 2 {
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "swarm_scale_" + hex.EncodeToString(b[:])
		if _, err := base.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			return nil, err
		}
		defer func() {
			if _, err := base.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
				fmt.Fprintf(os.Stderr, "scale: drop schema %s: %v\n", schema, err)
			}
		}()
		s, conn, err := openSchema(ctx, o.pgURL, schema)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		defer conn.Close(ctx)
		stores, conns = append(stores, s), append(conns, conn)
	}
	f := newFill(o)
	start := time.Now()
	var now int64
	if err := conns[1].QueryRow(ctx, `SELECT (extract(epoch from clock_timestamp()) * 1000000000)::bigint`).Scan(&now); err != nil {
		return nil, err
	}
	seq := func(n int) string { return fmt.Sprintf("generate_series(1, %d) i", n) }
	for _, q := range f.statements("swarm_runs", "swarm_journal", seq, now, true) {
		if _, err := conns[1].Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("fill: %w", err)
		}
	}
	var size int64
	if err := conns[1].QueryRow(ctx, `SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'`).Scan(&size); err != nil {
		return nil, err
	}
	fmt.Printf("postgres: filled in %s, %d MB\n", time.Since(start).Round(time.Second), size>>20)
	// Heartbeats: the node holding the running runs renews them, as it
	// does every third of a lease (before schema version 13 each renewal
	// updated every one of their rows).
	start = time.Now()
	for range o.renewals {
		if _, err := stores[1].Renew(ctx, "node-other", time.Hour); err != nil {
			return nil, err
		}
	}
	fmt.Printf("postgres: %d renewals of node-other's %d runs in %s\n", o.renewals, o.running, time.Since(start).Round(time.Millisecond))
	// The first poll after the fill finds node-gone's lease out, reads
	// the entries of the runs it ran (all finished) and sweeps its row.
	start = time.Now()
	if _, err := stores[1].ClaimExpired(ctx, "node-bench", time.Hour, 100); err != nil {
		return nil, err
	}
	fmt.Printf("postgres: first poll of the filled store (sweeps node-gone's lease) in %s\n", time.Since(start).Round(time.Millisecond))
	var pairs []pair
	// The last state is about what autovacuum (after 2% of the table
	// changed) lets accumulate: that many more runs finished since the
	// vacuum.
	churn := f.total() / 50
	for pass, c := range []struct {
		name string
		sql  []string
	}{
		{"filled", nil},
		{"vacuumed", []string{"VACUUM swarm_runs"}},
		{"analyzed", []string{"ANALYZE swarm_runs"}},
		{"2% finished since", []string{
			fmt.Sprintf(`INSERT INTO swarm_runs (id, swarm, parent, state, epoch, owner, lease_until, last_seq, created_at, updated_at)
				SELECT 'g' || i, 'sw' || (i %% 20), '', 'running', 1, 'node-other', %d + i, 1, %d + i, %d + i FROM %s`,
				now-int64(time.Minute), now, now, seq(churn)),
			`UPDATE swarm_runs SET state = 'completed', owner = '', lease_until = 0 WHERE id LIKE 'g%'`,
		}},
	} {
		for _, q := range c.sql {
			if _, err := conns[1].Exec(ctx, q); err != nil {
				return nil, err
			}
		}
		// Write what the fill or the vacuum dirtied now, not while
		// the operations are measured.
		if _, err := conns[1].Exec(ctx, "CHECKPOINT"); err != nil {
			fmt.Fprintf(os.Stderr, "scale: checkpoint (measuring without): %v\n", err)
		}
		ms, err := measure(ctx, []target{{stores[0], fill{every: 1}}, {stores[1], f}}, o.reps, pass)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, pair{column{"empty", ms[0]}, column{c.name, ms[1]}})
	}
	return pairs, nil
}

// openSchema opens a store in schema, and a connection of its own to
// fill and vacuum it. Autovacuum is off for its tables, so that no vacuum
// runs at a moment of its own.
func openSchema(ctx context.Context, pgURL, schema string) (*postgres.Store, *pgx.Conn, error) {
	u, err := url.Parse(pgURL)
	if err != nil {
		return nil, nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	s, err := postgres.Open(ctx, u.String())
	if err != nil {
		return nil, nil, err
	}
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	for _, t := range []string{"swarm_runs", "swarm_journal", "swarm_inbox"} {
		if _, err := conn.Exec(ctx, "ALTER TABLE "+t+" SET (autovacuum_enabled = false)"); err != nil {
			s.Close()
			conn.Close(ctx)
			return nil, nil, err
		}
	}
	return s, conn, nil
}

// step is one measured operation: prepare (not timed), do (timed), then
// after (not timed).
type step struct {
	prepare, do, after func(i int) error
}

// target is a store to measure and what its fill put in it.
type target struct {
	s store.Store
	f fill
}

// measure runs each operation reps times (after a few unmeasured) on
// each target, interleaved: the operations in turn, each on one target
// after the other (which goes first changes at each iteration). It
// returns the medians in ms, per target.
func measure(ctx context.Context, targets []target, reps, pass int) ([]map[string]float64, error) {
	const warm = 10
	n := reps + warm
	steps := make([]map[string]step, len(targets))
	times := make([]map[string][]time.Duration, len(targets))
	for t, tg := range targets {
		var err error
		if steps[t], err = operations(ctx, tg.s, tg.f, n, pass); err != nil {
			return nil, err
		}
		times[t] = map[string][]time.Duration{}
	}
	for i := range n {
		for _, op := range ops {
			for k := range targets {
				t := (i + k) % len(targets)
				st := steps[t][op]
				if st.prepare != nil {
					if err := st.prepare(i); err != nil {
						return nil, fmt.Errorf("%s: %w", op, err)
					}
				}
				start := time.Now()
				err := st.do(i)
				d := time.Since(start)
				if err == nil && st.after != nil {
					err = st.after(i)
				}
				if err != nil {
					return nil, fmt.Errorf("%s: %w", op, err)
				}
				if i >= warm {
					times[t][op] = append(times[t][op], d)
				}
			}
		}
	}
	out := make([]map[string]float64, len(targets))
	for t := range targets {
		out[t] = map[string]float64{}
		for op, ds := range times[t] {
			slices.Sort(ds)
			out[t][op] = float64(ds[len(ds)/2].Microseconds()) / 1000
		}
	}
	return out, nil
}

// operations are the measured operations on s for n iterations. Runs they
// create have ids unique to the call. Paused runs to resume and runs to
// read come from f when it holds enough (other ones at each pass), else
// are created first.
func operations(ctx context.Context, s store.Store, f fill, n, pass int) (map[string]step, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	const owner, lease = "node-bench", time.Hour
	id := func(kind string, i int) string { return fmt.Sprintf("%s-%s-%d", kind, tag, i) }
	rec := func() []store.Record {
		return []store.Record{{Key: "start", Type: "run_started", Data: []byte(`{"input":"a question of a few words"}`), Time: time.Now()}}
	}
	paused, reads := f.pausedIDs(n, pass), f.anyIDs(n)
	if len(paused) < n || len(reads) < n {
		// And 50 more, so that every list by state finds a page.
		paused, reads = nil, nil
		for i := range n + 50 {
			pid := id("paused", i)
			l, err := s.Create(ctx, store.Run{ID: pid, Swarm: "sw3"}, owner, lease, rec())
			if err != nil {
				return nil, err
			}
			if _, err := s.Append(ctx, l, []store.Record{{Key: "pause", Type: "paused", Time: time.Now()}}, store.Update{State: store.Paused, Reason: "a question"}); err != nil {
				return nil, err
			}
			paused, reads = append(paused, pid), append(reads, pid)
		}
	}
	return map[string]step{
		"start": {do: func(i int) error {
			_, err := s.Create(ctx, store.Run{ID: id("start", i), Swarm: "sw3"}, owner, lease, rec())
			return err
		}},
		"claim": {
			prepare: func(i int) error {
				_, err := s.Create(ctx, store.Run{ID: id("claim", i), Swarm: "sw3"}, "", 0, rec())
				return err
			},
			do: func(i int) error { _, err := s.Claim(ctx, id("claim", i), owner, lease); return err },
		},
		"poll": {do: func(int) error {
			ls, err := s.ClaimExpired(ctx, owner, lease, 100)
			if err == nil && len(ls) > 0 {
				err = fmt.Errorf("the idle poll claimed %d runs: nothing should be runnable", len(ls))
			}
			return err
		}},
		"resume": {
			do: func(i int) error {
				_, err := s.Send(ctx, paused[i], store.Message{Kind: store.MsgResume, Text: "yes"})
				return err
			},
			// Held again, so that the idle poll finds nothing.
			after: func(i int) error { _, err := s.Claim(ctx, paused[i], owner, lease); return err },
		},
		"status": {do: func(i int) error { _, err := s.Get(ctx, reads[i]); return err }},
		"list state": {do: func(int) error {
			return list(ctx, s, store.Filter{State: store.Paused, Limit: 50})
		}},
		"list swarm": {do: func(int) error {
			return list(ctx, s, store.Filter{Swarm: "sw3", Limit: 50})
		}},
		"list newest": {do: func(int) error { return list(ctx, s, store.Filter{Limit: 50}) }},
	}, nil
}

func list(ctx context.Context, s store.Store, f store.Filter) error {
	rs, err := s.List(ctx, f)
	if err == nil && len(rs) == 0 {
		err = fmt.Errorf("no runs listed for %+v", f)
	}
	return err
}
