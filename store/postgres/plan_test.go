package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
)

// TestQueryPlans runs EXPLAIN on each list query and on the claim query
// over 100,000 runs, most of them created running and then finished, as
// every run is, and some held by a node: without statistics (autovacuum
// off, never analyzed) and after ANALYZE. A filtered list must scan its
// own index in rid order (no sort, no walk of the primary key), the claim
// query swarm_runs_claim_due up to now (not the runs another node holds),
// the deletion of a tree and the search for runs to expire their indexes;
// no query may scan the table.
func TestQueryPlans(t *testing.T) {
	url := pgtest.URL(t) // skips loudly without a server
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{
		`ALTER TABLE swarm_runs SET (autovacuum_enabled = false)`,
		`INSERT INTO swarm_runs (id, swarm, parent, state, epoch, owner, lease_until, created_at, updated_at)
			SELECT 'r' || i, 'sw' || (i % 20), CASE WHEN i % 10 = 0 THEN 'p' || (i % 100) ELSE '' END,
				'running', 1, 'node', i, 0, 0
			FROM generate_series(1, 100000) i`,
		// Runs finish (or pause) after they are created.
		`UPDATE swarm_runs SET state = CASE WHEN rid % 20 = 1 THEN 'paused' ELSE 'completed' END, owner = '', lease_until = 0
			WHERE rid % 20 <> 0`,
		// The rest are held by a node that renews their lease: an idle
		// node's poll must not read them.
		`UPDATE swarm_runs SET lease_until = 9000000000000000000 WHERE state = 'running'`,
		`INSERT INTO swarm_leases (owner, until) VALUES ('node', 9000000000000000000)`,
		// And a node that is gone, whose last runs wait for a claim.
		`INSERT INTO swarm_leases (owner, until) VALUES ('gone', 1)`,
		`UPDATE swarm_runs SET owner = 'gone', lease_until = 5 WHERE rid % 1000 = 0`,
		// Blobs, a few per run, the most shared by two runs.
		`ALTER TABLE swarm_blobs SET (autovacuum_enabled = false)`,
		`ALTER TABLE swarm_blob_refs SET (autovacuum_enabled = false)`,
		`INSERT INTO swarm_blobs (hash, data) SELECT md5(i::text) || md5((-i)::text), '\x00' FROM generate_series(1, 100000) i`,
		`INSERT INTO swarm_blob_refs (rid, hash) SELECT i, md5(i::text) || md5((-i)::text) FROM generate_series(1, 100000) i
			UNION ALL SELECT i + 1, md5(i::text) || md5((-i)::text) FROM generate_series(1, 100000, 2) i`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	type node struct {
		Type  string `json:"Node Type"`
		Index string `json:"Index Name"`
		Cond  string `json:"Index Cond"`
		Rel   string `json:"Relation Name"`
		Plans []node `json:"Plans"`
	}
	explain := func(q string, args ...any) []node {
		t.Helper()
		var out []struct{ Plan node }
		var raw []byte
		if err := s.pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+q, args...).Scan(&raw); err != nil {
			t.Fatalf("explain %s: %v", q, err)
		}
		if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
			t.Fatalf("explain output %s: %v", raw, err)
		}
		var flat []node
		var walk func(n node)
		walk = func(n node) {
			flat = append(flat, n)
			for _, c := range n.Plans {
				walk(c)
			}
		}
		walk(out[0].Plan)
		return flat
	}
	describe := func(ns []node) string {
		var b []string
		for _, n := range ns {
			b = append(b, strings.TrimSpace(n.Type+" "+n.Index+" "+n.Rel))
		}
		return strings.Join(b, " > ")
	}
	check := func(stats string) {
		for _, c := range []struct {
			name  string
			f     store.Filter
			index string
		}{
			{"by swarm", store.Filter{Swarm: "sw3", Limit: 50}, "swarm_runs_swarm_rid"},
			{"by state", store.Filter{State: store.Paused, Limit: 50}, "swarm_runs_state_rid"},
			{"by parent", store.Filter{Parent: "p10", Limit: 50}, "swarm_runs_parent_rid"},
		} {
			q, args := listQuery(c.f)
			plan := explain(q, args...)
			for _, n := range plan {
				if n.Type == "Sort" || n.Type == "Seq Scan" || n.Index == "swarm_runs_pkey" {
					t.Errorf("%s: list %s: %s", stats, c.name, describe(plan))
				}
			}
			if !strings.Contains(describe(plan), c.index) {
				t.Errorf("%s: list %s does not use %s: %s", stats, c.name, c.index, describe(plan))
			}
		}
		// The claim query reads the unowned runs' index and, for each
		// owner whose lease ran out (a scan of swarm_leases, a row per
		// owner), its runs' entries of swarm_runs_held up to now (not a
		// walk of the running runs, nor a bitmap scan, which would not
		// mark dead entries); it locks once.
		plan := explain(s.q.claimExpired, "owner", int64(time.Minute), 10)
		locks := 0
		var unowned, held bool
		for _, n := range plan {
			switch {
			case n.Type == "Seq Scan" && n.Rel != "swarm_leases", n.Type == "Bitmap Heap Scan":
				t.Errorf("%s: claim query scans %s: %s", stats, n.Rel, describe(plan))
			case n.Type == "LockRows":
				locks++
			case n.Index == "swarm_runs_unowned":
				unowned = true
			case n.Index == "swarm_runs_held":
				held = strings.Contains(n.Cond, "lease_until <=")
			}
		}
		if locks != 1 || !unowned || !held {
			t.Errorf("%s: claim query locks %d times, reads swarm_runs_unowned %v, swarm_runs_held up to now %v: %s",
				stats, locks, unowned, held, describe(plan))
		}
		// So do the sweep of gone owners' leases and a renewal.
		for _, c := range []struct {
			name, q string
			args    []any
		}{
			{"sweep", deleteOwnersSQL, []any{[]string{"gone"}}},
			{"renew", s.q.renew, []any{"node", int64(time.Minute)}},
		} {
			plan := explain(c.q, c.args...)
			if !strings.Contains(describe(plan), "swarm_runs_held") {
				t.Errorf("%s: %s does not read swarm_runs_held: %s", stats, c.name, describe(plan))
			}
			for _, n := range plan {
				if n.Type == "Seq Scan" && n.Rel == "swarm_runs" {
					t.Errorf("%s: %s: %s", stats, c.name, describe(plan))
				}
			}
		}
		// Deleting a tree and finding runs to expire read indexes (the
		// latter in rid order, stopping at its limit), not the table.
		for _, c := range []struct {
			name, q string
			args    []any
		}{
			{"delete tree", deletion.Children, []any{"p10"}},
			{"expire", deletion.Finished, []any{"completed", int64(0), 10}},
			{"collect blobs", deletion.AfterRun[1], []any{int64(1)}},
			{"drop blob references", deletion.AfterRun[2], []any{int64(1)}},
		} {
			plan := explain(c.q, c.args...)
			for _, n := range plan {
				if n.Type == "Seq Scan" || n.Type == "Sort" {
					t.Errorf("%s: %s: %s", stats, c.name, describe(plan))
				}
			}
		}
	}
	check("without statistics")
	if _, err := s.pool.Exec(ctx, "ANALYZE swarm_runs, swarm_blobs, swarm_blob_refs"); err != nil {
		t.Fatal(err)
	}
	check("after ANALYZE")
}
