// Command scale measures how the latency of a store's everyday operations
// grows with the number of runs it holds: each operation through the
// store's API on an empty store and on one holding -finished finished runs,
// -paused paused runs and -running runs leased to another node, in SQLite
// and in PostgreSQL. It prints one table of medians (ms) and the ratios.
//
// Run it from the repository's root:
//
//	go run ./bench/scale                      # 1,000,000 finished + 100,000 paused runs
//	go run ./bench/scale -finished 100000 -paused 10000 -stores sqlite
//
// The filled store is written with bulk SQL in the store's own schema, the
// way the runtime leaves runs: each is inserted running, with one journal
// record, and then (in PostgreSQL, where an update leaves the old version
// behind until a vacuum) updated to its final state. PostgreSQL's table is
// measured as the fill left it (never vacuumed nor analyzed: autovacuum is
// off for the measured schema, so no vacuum runs at a random moment) and
// once more after VACUUM ANALYZE. PostgreSQL's store lives in a schema of
// its own (search_path), dropped at the end; SQLite's in a temporary
// directory, removed at the end.
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
	flag.IntVar(&o.reps, "reps", 101, "measurements of each operation (the median is reported)")
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
	if o.finished < 0 || o.paused < 0 || o.running < 0 || o.reps < 1 {
		return errors.New("-finished, -paused and -running must not be negative, -reps must be positive")
	}
	ctx := context.Background()
	host, _ := os.Hostname()
	fmt.Printf("# %s, %d CPUs, %s/%s, %s; %d finished + %d paused + %d running runs; medians of %d\n\n",
		host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), o.finished, o.paused, o.running, o.reps)
	for _, name := range strings.Split(o.stores, ",") {
		var (
			cols []column
			err  error
		)
		switch strings.TrimSpace(name) {
		case "sqlite":
			cols, err = measureSQLite(ctx, o)
		case "postgres":
			cols, err = measurePostgres(ctx, o)
		default:
			err = fmt.Errorf("unknown store %q (want sqlite or postgres)", name)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		printTable(name, cols)
	}
	return nil
}

func printTable(name string, cols []column) {
	fmt.Printf("\n%s (ms)\n\n| operation |", name)
	for i, c := range cols {
		fmt.Printf(" %s |", c.name)
		if i > 0 {
			fmt.Printf(" ratio |")
		}
	}
	fmt.Print("\n| --- |")
	for i := range cols {
		fmt.Print(" ---: |")
		if i > 0 {
			fmt.Print(" ---: |")
		}
	}
	fmt.Println()
	for _, op := range ops {
		fmt.Printf("| %s |", op)
		for i, c := range cols {
			fmt.Printf(" %.3f |", c.ms[op])
			if i > 0 {
				fmt.Printf(" %.2f× |", c.ms[op]/cols[0].ms[op])
			}
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
	st := []string{
		// Every run is created running, leased, with its first record.
		fmt.Sprintf(`INSERT INTO %s (id, swarm, parent, state, epoch, owner, lease_until, last_seq, created_at, updated_at)
			SELECT CASE WHEN %s THEN %s ELSE %s END, %s, '', 'running', 1, 'node-gone', %d, 1, %d + i, %d + i FROM %s`,
			runs, pausedWhen, concat("'p'", "i"), concat("'f'", "i"), concat("'sw'", "(i % 20)"), now-int64(time.Hour), now-int64(2*time.Hour), now-int64(2*time.Hour), seq(f.total())),
		fmt.Sprintf(`INSERT INTO %s (rid, seq, key, type, data, time)
			SELECT rid, 1, 'start', 'run_started', %s, created_at FROM %s`, journal, blob(`{"input":"a question of a few words"}`, pg), runs),
		// Then each finishes or pauses, and gives its lease back.
		fmt.Sprintf(`UPDATE %s SET state = CASE WHEN id LIKE 'p%%' THEN 'paused' ELSE 'completed' END,
			owner = '', lease_until = 0, turn = 1, result = CASE WHEN id LIKE 'f%%' THEN %s END,
			usage = '{"input_tokens":120,"output_tokens":40}', updated_at = created_at + 1000000000`, runs, blob(`"an answer of a few words"`, pg)),
	}
	if f.running > 0 {
		st = append(st, fmt.Sprintf(`INSERT INTO %s (id, swarm, parent, state, epoch, owner, lease_until, last_seq, created_at, updated_at)
			SELECT %s, %s, '', 'running', 1, 'node-other', %d, 0, %d + i, %d + i FROM %s`,
			runs, concat("'h'", "i"), concat("'sw'", "(i % 20)"), lease, now, now, seq(f.running)))
	}
	return st
}

func blob(s string, pg bool) string {
	if pg {
		return "convert_to('" + s + "', 'UTF8')"
	}
	return "CAST('" + s + "' AS BLOB)"
}

func measureSQLite(ctx context.Context, o options) ([]column, error) {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "swarm-scale-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var cols []column
	for _, n := range []int{0, 1} {
		path := filepath.Join(dir, fmt.Sprintf("scale-%d.db", n))
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			return nil, err
		}
		f := newFill(o)
		name := "empty"
		if n == 1 {
			name = "filled"
			s.Close()
			start := time.Now()
			if err := fillSQLite(ctx, path, f); err != nil {
				return nil, err
			}
			fi, _ := os.Stat(path)
			fmt.Printf("sqlite: filled in %s, %d MB\n", time.Since(start).Round(time.Second), fi.Size()>>20)
			if s, err = sqlite.Open(ctx, path); err != nil {
				return nil, err
			}
		} else {
			f = fill{every: 1}
		}
		ms, err := measure(ctx, s, f, o.reps, 0)
		s.Close()
		os.Remove(path)
		if err != nil {
			return nil, err
		}
		cols = append(cols, column{name, ms})
	}
	return cols, nil
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

func measurePostgres(ctx context.Context, o options) ([]column, error) {
	base, err := pgx.Connect(ctx, o.pgURL)
	if err != nil {
		return nil, err
	}
	defer base.Close(ctx)
	var cols []column
	for _, n := range []int{0, 1} {
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "swarm_scale_" + hex.EncodeToString(b[:])
		if _, err := base.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			return nil, err
		}
		c, err := measureSchema(ctx, o, n == 1, schema)
		if _, derr := base.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+schema+" CASCADE"); derr != nil && err == nil {
			err = derr
		}
		if err != nil {
			return nil, err
		}
		cols = append(cols, c...)
	}
	return cols, nil
}

func measureSchema(ctx context.Context, o options, filled bool, schema string) ([]column, error) {
	u, err := url.Parse(o.pgURL)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	s, err := postgres.Open(ctx, u.String())
	if err != nil {
		return nil, err
	}
	defer s.Close()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	// No vacuum at a moment of its own: the table is measured as the
	// fill left it, then after VACUUM ANALYZE.
	for _, t := range []string{"swarm_runs", "swarm_journal", "swarm_inbox"} {
		if _, err := conn.Exec(ctx, "ALTER TABLE "+t+" SET (autovacuum_enabled = false)"); err != nil {
			return nil, err
		}
	}
	if !filled {
		ms, err := measure(ctx, s, fill{every: 1}, o.reps, 0)
		return []column{{"empty", ms}}, err
	}
	f := newFill(o)
	start := time.Now()
	var now int64
	if err := conn.QueryRow(ctx, `SELECT (extract(epoch from clock_timestamp()) * 1000000000)::bigint`).Scan(&now); err != nil {
		return nil, err
	}
	seq := func(n int) string { return fmt.Sprintf("generate_series(1, %d) i", n) }
	for _, q := range f.statements("swarm_runs", "swarm_journal", seq, now, true) {
		if _, err := conn.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("fill: %w", err)
		}
	}
	var size int64
	_ = conn.QueryRow(ctx, `SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind = 'r'`, schema).Scan(&size)
	fmt.Printf("postgres: filled in %s, %d MB\n", time.Since(start).Round(time.Second), size>>20)
	ms, err := measure(ctx, s, f, o.reps, 0)
	if err != nil {
		return nil, err
	}
	cols := []column{{"filled", ms}}
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE swarm_runs"); err != nil {
		return nil, err
	}
	ms, err = measure(ctx, s, f, o.reps, 1)
	return append(cols, column{"filled, vacuumed", ms}), err
}

// step is one measured operation: prepare (not timed), do (timed), then
// after (not timed).
type step struct {
	prepare, do, after func(i int) error
}

// measure runs each operation reps times, the operations in turn, and
// returns the median of each in ms. Runs it creates are unique to the
// call. Paused runs to resume and runs to read come from f when it holds
// any, else are created first.
func measure(ctx context.Context, s store.Store, f fill, reps, pass int) (map[string]float64, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	const owner, lease = "node-bench", time.Hour
	id := func(kind string, i int) string { return fmt.Sprintf("%s-%s-%d", kind, tag, i) }
	rec := func(i int) []store.Record {
		return []store.Record{{Key: "start", Type: "run_started", Data: []byte(`{"input":"a question of a few words"}`), Time: time.Now()}}
	}
	warm := 10
	n := reps + warm
	paused, reads := f.pausedIDs(n, pass), f.anyIDs(n)
	if len(paused) < n || len(reads) < n {
		// And 50 more, so that every list by state finds a page.
		paused, reads = nil, nil
		for i := range n + 50 {
			pid := id("paused", i)
			l, err := s.Create(ctx, store.Run{ID: pid, Swarm: "sw3"}, owner, lease, rec(i))
			if err != nil {
				return nil, err
			}
			if _, err := s.Append(ctx, l, []store.Record{{Key: "pause", Type: "paused", Time: time.Now()}}, store.Update{State: store.Paused, Reason: "a question"}); err != nil {
				return nil, err
			}
			paused, reads = append(paused, pid), append(reads, pid)
		}
	}
	steps := map[string]step{
		"start": {do: func(i int) error {
			_, err := s.Create(ctx, store.Run{ID: id("start", i), Swarm: "sw3"}, owner, lease, rec(i))
			return err
		}},
		"claim": {
			prepare: func(i int) error {
				_, err := s.Create(ctx, store.Run{ID: id("claim", i), Swarm: "sw3"}, "", 0, rec(i))
				return err
			},
			do: func(i int) error { _, err := s.Claim(ctx, id("claim", i), owner, lease); return err },
		},
		"poll": {do: func(i int) error {
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
		"list state": {do: func(i int) error {
			return list(ctx, s, store.Filter{State: store.Paused, Limit: 50})
		}},
		"list swarm": {do: func(i int) error {
			return list(ctx, s, store.Filter{Swarm: "sw3", Limit: 50})
		}},
		"list newest": {do: func(i int) error { return list(ctx, s, store.Filter{Limit: 50}) }},
	}
	times := map[string][]time.Duration{}
	for i := range n {
		for _, op := range ops {
			st := steps[op]
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
				return nil, fmt.Errorf("%s (%d): %w", op, i, err)
			}
			if i >= warm {
				times[op] = append(times[op], d)
			}
		}
	}
	out := map[string]float64{}
	for op, ds := range times {
		slices.Sort(ds)
		out[op] = float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	return out, nil
}

func list(ctx context.Context, s store.Store, f store.Filter) error {
	rs, err := s.List(ctx, f)
	if err == nil && len(rs) == 0 {
		err = fmt.Errorf("no runs listed for %+v", f)
	}
	return err
}
