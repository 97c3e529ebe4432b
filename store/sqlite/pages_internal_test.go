package sqlite

import (
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

// walFrames runs fn on a store at path whose WAL is never checkpointed
// and returns how many frames fn's writes added to the WAL, by b-tree
// (table or index name).
func walFrames(t *testing.T, path string, fn func(s *Store)) map[string]int {
	t.Helper()
	ctx := t.Context()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// No checkpoints: stop the checkpointer, as Close would.
	close(s.stop)
	<-s.ckptDone
	s.stop, s.ckptDone = make(chan struct{}), make(chan struct{})
	go func() { <-s.stop; close(s.ckptDone) }()
	before := frameCount(t, path)
	fn(s)
	names := map[uint32]string{}
	rows, err := s.rdb.QueryContext(ctx, "SELECT name, pageno FROM dbstat")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		var p uint32
		if err := rows.Scan(&n, &p); err != nil {
			t.Fatal(err)
		}
		names[p] = n
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for i, pg := range framePages(t, path) {
		if i >= before {
			out[names[pg]]++
		}
	}
	return out
}

func framePages(t *testing.T, path string) []uint32 {
	t.Helper()
	wal, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if len(wal) < 32 {
		return nil
	}
	ps := int(binary.BigEndian.Uint32(wal[8:12]))
	var pages []uint32
	for off := 32; off+24+ps <= len(wal); off += 24 + ps {
		pages = append(pages, binary.BigEndian.Uint32(wal[off:off+4]))
	}
	return pages
}

func frameCount(t *testing.T, path string) int { return len(framePages(t, path)) }

// TestPagesPerRun counts the WAL frames of runs that make the store calls
// of the peer benchmark's workload (see BenchmarkRunJournal), one after
// another. Schema version 8 wrote about 26 per run: 8 to the journal,
// which splits by rebalancing, and 2 to runs_owner.
func TestPagesPerRun(t *testing.T) {
	const runs = 200
	frames := walFrames(t, filepath.Join(t.TempDir(), "runs.db"), func(s *Store) {
		ctx := t.Context()
		data := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n-2) + `"`) }
		rec := func(k string, n int) store.Record {
			return store.Record{Key: k, Type: "x", Data: data(n), Time: time.Now()}
		}
		for i := range runs {
			id := fmt.Sprintf("run_%024x", i*7919)
			l, _, err := s.CreateReserving(ctx, store.Run{ID: id, Swarm: "sw"}, "node", time.Minute, []store.Record{rec("start", 140)}, store.Pool{Calls: 15, Tools: 32})
			if err != nil {
				t.Fatal(err)
			}
			steps := []struct {
				recs []store.Record
				u    store.Update
			}{
				{[]store.Record{rec("t1/model", 263), rec("t1/call", 142)}, store.Update{Turn: 1, Agent: "s"}},
				{[]store.Record{rec("t1/h/model", 166), rec("t1/tool", 126), rec("t1/done", 48)}, store.Update{Turn: 1, Agent: "o"}},
				{[]store.Record{rec("t2/model", 177), rec("t2/done", 48), rec("end", 53)}, store.Update{Turn: 2, State: store.Completed, Result: data(19)}},
			}
			for _, st := range steps {
				if _, err := s.Append(ctx, l, st.recs, st.u); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	total := 0
	for name, n := range frames {
		total += n
		t.Logf("%-28s %5.2f frames per run", name, float64(n)/runs)
	}
	perRun := float64(total) / runs
	t.Logf("%.2f WAL frames per run", perRun)
	if j := float64(frames["journal"]) / runs; j > 5 {
		t.Errorf("the journal's table takes %.2f frames per run, want at most 5 (one per write, plus splits)", j)
	}
	if frames["runs_owner"] > 0 {
		t.Errorf("runs_owner written")
	}
	if perRun > 23 {
		t.Errorf("%.2f WAL frames per run, want at most 23", perRun)
	}
}

// TestUpgradeJournal opens a store of schema version 8 with runs and
// their journals: the upgrade keeps every record in order, and the runs go
// on with their sequence numbers and keys.
func TestUpgradeJournal(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "v8.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	stmts := append([]string(nil), schema...)
	for _, step := range upgrades[:7] { // versions 2 to 8
		stmts = append(stmts, step...)
	}
	stmts = append(stmts, "INSERT INTO meta (key, value) VALUES ('schema_version', '8')",
		fmt.Sprintf("PRAGMA application_id = %d", ApplicationID))
	for i := 1; i <= 3; i++ {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO runs (rid, id, swarm, state, owner, epoch, lease_until, last_seq, created_at, updated_at)
			VALUES (%d, 'r%d', 'sw', 'running', 'node', 1, %d, 3, 1, 1)`, i, i, time.Now().Add(time.Hour).UnixNano()))
		for seq := 3; seq >= 1; seq-- {
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO journal (rid, seq, key, type, data, time) VALUES (%d, %d, 'k%d', 't', '{"n":%d}', 5)`, i, seq, seq, seq))
		}
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != SchemaVersion {
		t.Fatalf("schema version %d, %v", v, err)
	}
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("r%d", i)
		rs, err := s.Read(ctx, id, 0, 0)
		if err != nil || len(rs) != 3 {
			t.Fatalf("%s after the upgrade: %+v, %v", id, rs, err)
		}
		for j, r := range rs {
			if r.Seq != int64(j+1) || r.Key != fmt.Sprintf("k%d", j+1) || string(r.Data) != fmt.Sprintf(`{"n":%d}`, j+1) {
				t.Fatalf("%s record %d after the upgrade: %+v", id, j, r)
			}
		}
		if rs, err := s.Read(ctx, id, 1, 1); err != nil || len(rs) != 1 || rs[0].Seq != 2 {
			t.Fatalf("%s from 1, one: %+v, %v", id, rs, err)
		}
		l := store.Lease{RunID: id, Owner: "node", Epoch: 1}
		if _, err := s.Append(ctx, l, []store.Record{{Key: "k2", Type: "t"}}, store.Update{}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("append of an old key: %v, want ErrConflict", err)
		}
		if last, err := s.Append(ctx, l, []store.Record{{Key: "k4", Type: "t"}}, store.Update{}); err != nil || last != 4 {
			t.Fatalf("append after the upgrade: %d, %v", last, err)
		}
	}
	rn, err := s.Renew(ctx, "node", time.Minute)
	if err != nil || len(rn.Held) != 3 {
		t.Fatalf("Renew after the upgrade: %+v, %v", rn, err)
	}
	var n int
	if err := s.rdb.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name IN ('runs_owner', 'journal_v11')").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d of runs_owner and journal_v11 left, %v", n, err)
	}
}

// TestJournalBounds checks the packing of the journal's key: a run holds at
// most maxSeq records, and a record past it fails with a clear error.
func TestJournalBounds(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.Create(ctx, store.Run{ID: "r"}, "o", time.Hour, []store.Record{{Key: "a", Type: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	// Pretend the run is full.
	if err := s.write(ctx, func(w *writer) error {
		_, err := w.conn.ExecContext(ctx, "UPDATE runs SET last_seq = ? WHERE id = 'r'", maxSeq)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(ctx, l, []store.Record{{Key: "b", Type: "t"}}, store.Update{})
	if err == nil || !strings.Contains(err.Error(), "at most 16777215") {
		t.Fatalf("append past the last seq: %v", err)
	}
	if rs, err := s.Read(ctx, "r", 0, 0); err != nil || len(rs) != 1 {
		t.Fatalf("after the refused append: %+v, %v", rs, err)
	}
	// A Read from past the bound is empty, not another run's records.
	if _, err := s.Create(ctx, store.Run{ID: "r2"}, "o", time.Hour, []store.Record{{Key: "a", Type: "t"}}); err != nil {
		t.Fatal(err)
	}
	for _, after := range []int64{maxSeq, 1 << 24, 1 << 30, -5} {
		rs, err := s.Read(ctx, "r", after, 0)
		want := 0
		if after < 0 {
			want = 1
		}
		if err != nil || len(rs) != want {
			t.Fatalf("Read after %d: %+v, %v", after, rs, err)
		}
	}
}
