package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmrt/swarm/store/postgres/pgtest"
)

// scaleDefs is the scale-out workload: an orchestrator hands off once to a
// helper and answers, three model calls of scaleLatency each, no tools.
const scaleDefs = `version: 1
model: scripted:scale.yaml
agents:
  helper: {description: helps, instructions: help}
swarms:
  scale:
    description: a handoff and an answer
    instructions: go
    handoffs: [helper]
`

const scaleLatency = 100 * time.Millisecond

var scaleScript = strings.ReplaceAll(`scale:
  - tool_calls: [{name: handoff_to_helper, arguments: {request: "x"}}]
    delay: LAT
  - text: "done"
    delay: LAT
helper:
  - text: "ok"
    delay: LAT
`, "LAT", scaleLatency.String())

// scaleSteps is the model calls of one run of scaleDefs.
const scaleSteps = 3

// TestScaleOutPostgres runs the same number of runs through 1, 2 and 4
// `swarm serve` processes sharing one PostgreSQL database of its own (so
// that the database's counters are the nodes' alone), at a fixed model
// latency, and reports for each: runs per second, PostgreSQL commits per
// model call, and how often a backend of the database waited for a lock
// (sampled every 5 ms: the share of samples with any waiter, and the
// waiters per sample). It runs only with SWARM_SCALEOUT=1 (runs per node
// count: SWARM_SCALEOUT_RUNS, default 600):
//
//	SWARM_SCALEOUT=1 go test -run TestScaleOutPostgres -v -timeout 30m ./cmd/swarm
func TestScaleOutPostgres(t *testing.T) {
	if os.Getenv("SWARM_SCALEOUT") != "1" {
		t.Skip("set SWARM_SCALEOUT=1 to run the scale-out benchmark")
	}
	runs := 600
	if s := os.Getenv("SWARM_SCALEOUT_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("SWARM_SCALEOUT_RUNS=%q: want a positive number", s)
		}
		runs = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	base := scaleDatabase(t, ctx)
	for _, nodes := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("nodes=%d", nodes), func(t *testing.T) {
			c := newClusterAt(t, ctx, scaleSchema(t, ctx, base, "pool_max_conns=8"))
			for name, text := range map[string]string{"swarm.yaml": scaleDefs, "scale.yaml": scaleScript} {
				if err := os.WriteFile(filepath.Join(c.dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for i := range nodes {
				c.start(fmt.Sprint("node", i))
			}
			stats := pgConn(t, ctx, base)
			commits0 := dbCommits(t, ctx, stats)
			sampleCtx, stopSampling := context.WithCancel(ctx)
			var (
				wg                        sync.WaitGroup
				samples, waiting, waiters int
				mu                        sync.Mutex
				on                        = map[string]int{} // what waiters wait on, and in which statement
			)
			wg.Go(func() {
				conn := pgConn(t, sampleCtx, base)
				for sampleCtx.Err() == nil {
					rows, err := conn.Query(sampleCtx, `SELECT wait_event || ': ' || left(regexp_replace(query, '\s+', ' ', 'g'), 70)
						FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
					if err != nil {
						return
					}
					n := 0
					for rows.Next() {
						var what string
						if rows.Scan(&what) == nil {
							n++
							mu.Lock()
							on[what]++
							mu.Unlock()
						}
					}
					rows.Close()
					samples++
					waiters += n
					if n > 0 {
						waiting++
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
			start := time.Now()
			ids := c.submit("scale", "s", runs)
			last := c.waitDone("scale", ids, 10*time.Minute)
			stopSampling()
			wg.Wait()
			commits := dbCommits(t, ctx, stats) - commits0
			elapsed := last.Sub(start)
			t.Logf("%d node(s), %d runs, %s per model call: %.0f runs/s, %.2f PostgreSQL commits per model call, lock waits in %.1f%% of %d samples (%.3f waiters per sample)",
				nodes, runs, scaleLatency, float64(runs)/elapsed.Seconds(), float64(commits)/float64(runs*scaleSteps),
				100*float64(waiting)/float64(max(samples, 1)), samples, float64(waiters)/float64(max(samples, 1)))
			for what, n := range on {
				if n*20 >= waiters {
					t.Logf("  %5.1f%% of lock waiters: %s", 100*float64(n)/float64(waiters), what)
				}
			}
		})
	}
}

// scaleDatabase creates a database of the test's own on the test server
// and returns its URL; it is dropped when t ends.
func scaleDatabase(t *testing.T, ctx context.Context) string {
	t.Helper()
	base := pgtest.Server(t)
	conn := pgConn(t, ctx, base)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "swarm_scale_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Skipf("cannot create a database for the scale-out benchmark: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// scaleSchema creates an empty schema in the database of dsn and returns
// dsn with that schema as its search_path and params added.
func scaleSchema(t *testing.T, ctx context.Context, dsn string, params ...string) string {
	t.Helper()
	conn := pgConn(t, ctx, dsn)
	var b [4]byte
	_, _ = rand.Read(b[:])
	schema := "scale_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	for _, p := range params {
		k, v, _ := strings.Cut(p, "=")
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// pgConn connects to the database of dsn for the rest of t.
func pgConn(t *testing.T, ctx context.Context, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// dbCommits is the database's count of committed transactions. The
// statistics of the current transaction are a snapshot, so each read is a
// transaction of its own after clearing that snapshot.
func dbCommits(t *testing.T, ctx context.Context, conn *pgx.Conn) int64 {
	t.Helper()
	if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		t.Fatal(err)
	}
	// The counters reach pg_stat_database when backends report them
	// (at most every second while busy, at once when idle).
	time.Sleep(1500 * time.Millisecond)
	if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
