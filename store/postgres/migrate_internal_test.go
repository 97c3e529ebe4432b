package postgres

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
)

func TestReadMigrations(t *testing.T) {
	file := func(sql string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(sql)} }
	ms, err := readMigrations(fstest.MapFS{
		"migrations/0001_a.sql": file("a"),
		"migrations/0002_b.sql": file("b"),
		"migrations/0004_d.sql": file("d"),
	})
	if err != nil || len(ms) != 3 || ms[2].version != 4 || ms[2].name != "d" || ms[2].sql != "d" {
		t.Fatalf("migrations with a gap: %+v, %v", ms, err)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"a repeated version": {"migrations/0001_a.sql": file("a"), "migrations/1_b.sql": file("b")},
		"version 0":          {"migrations/0000_a.sql": file("a")},
		"no number":          {"migrations/init.sql": file("a")},
		"none":               {"migrations/README": nil},
	} {
		if ms, err := readMigrations(fsys); err == nil {
			t.Errorf("migrations with %s: %+v, want an error", name, ms)
		}
	}
}

// TestMigrationGap: the embedded migrations may skip a version number
// (taken by a change made elsewhere). A database migrated without it gets
// it when a program that has it opens the database; a program that does
// not know a recorded version refuses the database.
func TestMigrationGap(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, pgtest.URL(t, "pool_max_conns=2"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	known, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	// A database of the first release, then upgraded.
	if v, err := migrateTo(ctx, pool, known[:2]); err != nil || v != 2 {
		t.Fatalf("migrate to version 2 = %d, %v", v, err)
	}
	if v, err := migrateTo(ctx, pool, known); err != nil || v != SchemaVersion {
		t.Fatalf("migrate = %d, %v; want %d", v, err, SchemaVersion)
	}
	if _, err := pool.Exec(ctx, `SELECT 1 FROM swarm_mail, swarm_mailboxes`); err != nil {
		t.Fatalf("after the upgrade: %v", err)
	}
	// A later program fills a gap (or, without gaps, adds a version in
	// the middle) with a migration of its own.
	have := map[int]bool{}
	for _, m := range known {
		have[m.version] = true
	}
	gap := 1
	for have[gap] {
		gap++
	}
	later := append(slices.Clone(known), migration{version: gap, name: "later", sql: `CREATE TABLE swarm_gap_probe (x int)`})
	slices.SortFunc(later, func(a, b migration) int { return a.version - b.version })
	v, err := migrateTo(ctx, pool, later)
	if err != nil || v != max(gap, SchemaVersion) {
		t.Fatalf("migrate with version %d added = %d, %v", gap, v, err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO swarm_gap_probe VALUES (1)`); err != nil {
		t.Fatalf("the gap's migration did not run: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM swarm_schema_migrations`).Scan(&n); err != nil || n != len(later) {
		t.Fatalf("%d migrations recorded, %v; want %d", n, err, len(later))
	}
	// Once more: nothing to do.
	if v, err := migrateTo(ctx, pool, later); err != nil || v != max(gap, SchemaVersion) {
		t.Fatalf("second migrate = %d, %v", v, err)
	}
	// The earlier program does not know the gap's version.
	_, err = migrateTo(ctx, pool, known)
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("migrate by a program without version %d: %v, want ErrNewerSchema", gap, err)
	}
}

// TestMigrateOwnerLeases: migration 0013 carries running runs' leases
// over: a run leased before the upgrade stays leased until its lease runs
// out, and is claimable after.
func TestMigrateOwnerLeases(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	url := pgtest.URL(t, "pool_max_conns=4")
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	known, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(known, func(m migration) bool { return m.version == 13 })
	if v, err := migrateTo(ctx, pool, known[:i]); err != nil || v != 12 {
		t.Fatalf("migrate to version 12 = %d, %v", v, err)
	}
	// Run a is leased for a while, b's lease has run out, c is unowned.
	if _, err := pool.Exec(ctx, `INSERT INTO swarm_runs (id, swarm, state, owner, epoch, lease_until, created_at, updated_at) VALUES
		('a', 'sw', 'running', 'n1', 3, (extract(epoch from clock_timestamp()) * 1e9)::bigint + 2000000000, 0, 0),
		('b', 'sw', 'running', 'n1', 1, 1, 0, 0),
		('c', 'sw', 'running', '', 1, 0, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ls, err := s.ClaimExpired(ctx, "n2", time.Hour, 10)
	if err != nil || len(ls) != 2 || ls[0].RunID != "b" || ls[1].RunID != "c" {
		t.Fatalf("ClaimExpired after the upgrade = %+v, %v; want b and c", ls, err)
	}
	if _, err := s.Append(ctx, store.Lease{RunID: "a", Owner: "n1", Epoch: 3}, nil, store.Update{}); err != nil {
		t.Fatalf("append with the lease held before the upgrade: %v", err)
	}
	if rn, err := s.Renew(ctx, "n1", 50*time.Millisecond); err != nil || len(rn.Held) != 1 {
		t.Fatalf("Renew after the upgrade = %+v, %v", rn, err)
	}
	time.Sleep(2100 * time.Millisecond)
	ls, err = s.ClaimExpired(ctx, "n2", time.Hour, 10)
	if err != nil || len(ls) != 1 || ls[0].RunID != "a" || ls[0].Owner != "n2" || ls[0].Epoch != 4 {
		t.Fatalf("ClaimExpired once a's lease ran out = %+v, %v", ls, err)
	}
}
