package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/store/storetest"
)

func open(t testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "runs.db"))
	})
}

func TestConformanceNoGroupCommit(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "runs.db"), sqlite.WithMaxBatch(1), sqlite.WithFullSync())
	})
}

func TestOpenURL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%d.db") // characters special in URIs
	s, err := store.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := s.Create(t.Context(), store.Run{ID: "r"}, "o", time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the literal path: %v", err)
	}
	if _, err := store.Open(t.Context(), "sqlite:"); err == nil {
		t.Fatal("Open(sqlite:) with no path succeeded")
	}
}

// fileSum returns the file's contents, to check that Open left it alone.
func fileSum(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNotOurs(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()

	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("remember the milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file shorter than the SQLite header, and one that starts like it.
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("SQL"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "fake.db")
	if err := os.WriteFile(fake, append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xff}, 200)...), 0o644); err != nil {
		t.Fatal(err)
	}

	// Someone else's database: a table and no application_id.
	other := filepath.Join(dir, "other.db")
	// Someone else's database with their own application_id and no tables.
	otherID := filepath.Join(dir, "other-id.db")
	// Someone else's database with OUR application_id but no meta table.
	fakeID := filepath.Join(dir, "fake-id.db")
	for path, stmts := range map[string][]string{
		other:   {"CREATE TABLE contacts (name TEXT, phone TEXT)", "INSERT INTO contacts VALUES ('ann', '555')"},
		otherID: {"PRAGMA application_id = 1234", "PRAGMA user_version = 3"},
		fakeID:  {"PRAGMA application_id = " + strconv.Itoa(sqlite.ApplicationID), "CREATE TABLE runs (x)"},
	} {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range stmts {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		db.Close()
	}

	for _, path := range []string{text, short, fake, other, otherID, fakeID} {
		before := fileSum(t, path)
		s, err := sqlite.Open(ctx, path)
		if err == nil {
			s.Close()
			t.Errorf("Open(%s) succeeded", filepath.Base(path))
			continue
		}
		if !errors.Is(err, sqlite.ErrNotStore) {
			t.Errorf("Open(%s) = %v, want ErrNotStore", filepath.Base(path), err)
		}
		t.Logf("Open(%s): %v", filepath.Base(path), err)
		if !bytes.Equal(before, fileSum(t, path)) {
			t.Errorf("Open(%s) modified the file", filepath.Base(path))
		}
		for _, ext := range []string{"-wal", "-journal"} {
			if _, err := os.Stat(path + ext); err == nil {
				t.Errorf("Open(%s) left a %s file", filepath.Base(path), ext)
			}
		}
	}
	// The other program's data is intact.
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var phone string
	if err := db.QueryRow("SELECT phone FROM contacts WHERE name = 'ann'").Scan(&phone); err != nil || phone != "555" {
		t.Fatalf("other program's data: %q, %v", phone, err)
	}

	// A directory is not a store either.
	if _, err := sqlite.Open(ctx, dir); err == nil {
		t.Error("Open of a directory succeeded")
	}
	// A missing parent directory is an error, not created.
	if _, err := sqlite.Open(ctx, filepath.Join(dir, "no", "such", "dir.db")); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
}

func TestNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	open(t, path).Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE meta SET value = ? WHERE key = 'schema_version'", strconv.Itoa(sqlite.SchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlite.Open(t.Context(), path)
	if !errors.Is(err, sqlite.ErrNewerSchema) {
		t.Fatalf("Open of a newer schema: %v, want ErrNewerSchema", err)
	}
}

// TestUpgradeFromVersion1: a store written before the budget pool, the
// mailboxes and the teams existed is upgraded in place when opened, keeping its runs.
func TestUpgradeFromVersion1(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "runs.db")
	s := open(t, path)
	if _, err := s.Create(ctx, store.Run{ID: "old", Swarm: "sw"}, "o", time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"pool_calls", "pool_tokens", "pool_cost", "pool_lifted", "pool_tools"} {
		if _, err := db.Exec("ALTER TABLE runs DROP COLUMN " + q); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"ALTER TABLE inbox DROP COLUMN parts", "DROP TABLE mail", "DROP TABLE mailboxes", "DROP TABLE tasks", "DROP TABLE requests", "DROP TABLE snapshots", "DROP TABLE blob_refs", "DROP TABLE blobs", "UPDATE meta SET value = '1' WHERE key = 'schema_version'"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s = open(t, path)
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != sqlite.SchemaVersion {
		t.Fatalf("schema version after upgrade = %d, %v; want %d", v, err, sqlite.SchemaVersion)
	}
	if r, err := s.Get(ctx, "old"); err != nil || r.Swarm != "sw" {
		t.Fatalf("run after upgrade: %+v, %v", r, err)
	}
	if p, err := s.Spend(ctx, "old", store.Pool{Calls: 1}); err != nil || p.Calls != 1 {
		t.Fatalf("Spend after upgrade: %+v, %v", p, err)
	}
	if task, err := s.AddTask(ctx, "old", store.Task{Subject: "after the upgrade"}); err != nil || task.ID != 1 {
		t.Fatalf("AddTask after upgrade: %+v, %v", task, err)
	}
	if r, err := s.AddRequest(ctx, "old", store.Request{ID: "q", Kind: "shutdown", From: "lead", To: "a"}); err != nil || r.State != store.RequestPending {
		t.Fatalf("AddRequest after upgrade: %+v, %v", r, err)
	}
	if _, err := s.Post(ctx, []string{"old"}, store.Mail{ID: "m"}); err != nil {
		t.Fatalf("Post after upgrade: %v", err)
	}
	if ms, cur, err := s.Mailbox(ctx, "old", 0); err != nil || len(ms) != 1 || cur != 0 {
		t.Fatalf("Mailbox after upgrade: %+v, %d, %v", ms, cur, err)
	}
}

// TestUpgradeFromVersion12: the messages in an inbox written before
// messages had parts are kept, without parts, and messages with parts
// are stored after the upgrade.
func TestUpgradeFromVersion12(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "runs.db")
	s := open(t, path)
	l, err := s.Create(ctx, store.Run{ID: "old", Swarm: "sw"}, "o", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, l, []store.Record{{Key: "p", Type: "paused", Time: time.Now()}}, store.Update{State: store.Paused}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, "old", store.Message{Kind: store.MsgResume, Text: "before"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE inbox DROP COLUMN parts", "UPDATE meta SET value = '12' WHERE key = 'schema_version'"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s = open(t, path)
	defer s.Close()
	in, err := s.Inbox(ctx, "old")
	if err != nil || len(in) != 1 || in[0].Text != "before" || in[0].Parts != nil {
		t.Fatalf("inbox after upgrade: %+v, %v", in, err)
	}
	ls, err := s.ClaimExpired(ctx, "o2", time.Hour, 1)
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim after upgrade: %v, %v", ls, err)
	}
	if _, err := s.Append(ctx, ls[0], []store.Record{{Key: "q", Type: "paused", Time: time.Now()}}, store.Update{State: store.Paused, AckInbox: in[0].ID}); err != nil {
		t.Fatal(err)
	}
	parts := []model.Part{model.TextPart("after")}
	if _, err := s.Send(ctx, "old", store.Message{Kind: store.MsgResume, Text: "with parts", Parts: parts}); err != nil {
		t.Fatalf("send with parts after upgrade: %v", err)
	}
	if in, err := s.Inbox(ctx, "old"); err != nil || len(in) != 1 || !reflect.DeepEqual(in[0].Parts, parts) {
		t.Fatalf("inbox after a send with parts: %+v, %v", in, err)
	}
}

func TestEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	defer s.Close()
	if _, err := s.Create(t.Context(), store.Run{ID: "r"}, "o", time.Hour, nil); err != nil {
		t.Fatal(err)
	}
}

func TestReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "runs.db")
	s := open(t, path)
	l, err := s.Create(ctx, store.Run{ID: "r1", Swarm: "sw", Parent: "p", MaxTurns: 5}, "o", time.Hour,
		[]store.Record{{Key: "a", Type: "start", Data: json.RawMessage(`{"x":1}`), Time: time.Unix(0, 123456789)}})
	if err != nil {
		t.Fatal(err)
	}
	usage := model.Usage{InputTokens: 7, Calls: 1}
	if _, err := s.Append(ctx, l, []store.Record{{Key: "b", Type: "end"}},
		store.Update{State: store.Completed, Result: json.RawMessage(`"ok"`), Usage: &usage, Turn: 2}); err != nil {
		t.Fatal(err)
	}
	l2, err := s.Create(ctx, store.Run{ID: "r2", Swarm: "sw"}, "o", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.Send(ctx, "r2", store.Message{Kind: store.MsgStop, Text: "halt"})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.Get(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "r1"); !errors.Is(err, sqlite.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := s.Append(ctx, l2, nil, store.Update{}); !errors.Is(err, sqlite.ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}

	s = open(t, path)
	defer s.Close()
	after, err := s.Get(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if after.State != store.Completed || string(after.Result) != `"ok"` || after.Usage != usage || after.Turn != 2 ||
		after.LastSeq != 2 || after.Parent != "p" || after.MaxTurns != 5 || !after.CreatedAt.Equal(before.CreatedAt) ||
		!after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("after reopen r1 = %+v, before %+v", after, before)
	}
	rs, err := s.Read(ctx, "r1", 0, 0)
	if err != nil || len(rs) != 2 || rs[0].Key != "a" || string(rs[0].Data) != `{"x":1}` || !rs[0].Time.Equal(time.Unix(0, 123456789)) {
		t.Fatalf("after reopen journal = %+v, %v", rs, err)
	}
	in, err := s.Inbox(ctx, "r2")
	if err != nil || len(in) != 1 || in[0].ID != msg.ID || in[0].Text != "halt" {
		t.Fatalf("after reopen inbox = %+v, %v", in, err)
	}
	// The lease survived too.
	if _, err := s.Append(ctx, l2, []store.Record{{Key: "x", Type: "t"}}, store.Update{AckInbox: msg.ID}); err != nil {
		t.Fatalf("Append with a lease from before the reopen: %v", err)
	}
}

// TestGroupCommit checks that concurrent writes share transactions.
func TestGroupCommit(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "runs.db"))
	defer s.Close()
	const runs, appends = 200, 5
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	start := make(chan struct{})
	for i := range runs {
		wg.Go(func() {
			<-start
			id := fmt.Sprint(i)
			l, err := s.Create(ctx, store.Run{ID: id}, "o", time.Hour, nil)
			for j := 0; err == nil && j < appends; j++ {
				_, err = s.Append(ctx, l, []store.Record{{Key: strconv.Itoa(j), Type: "t"}}, store.Update{})
			}
			if err != nil {
				errs <- err
			}
		})
	}
	before := s.Stats()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := s.Stats()
	writes := st.Writes - before.Writes
	txs := st.Transactions - before.Transactions
	t.Logf("%d writes in %d transactions, largest batch %d", writes, txs, st.MaxBatch)
	if writes != runs*(1+appends) {
		t.Fatalf("Stats counted %d writes, want %d", writes, runs*(1+appends))
	}
	if txs >= writes || st.MaxBatch < 2 {
		t.Fatalf("no group commit: %d writes in %d transactions (largest batch %d)", writes, txs, st.MaxBatch)
	}
	for i := range runs {
		r, err := s.Get(ctx, fmt.Sprint(i))
		if err != nil || r.LastSeq != appends {
			t.Fatalf("run %d: LastSeq %d, %v", i, r.LastSeq, err)
		}
	}
}

// TestBatchIsolation checks that failing requests in a batch do not affect
// the others.
func TestBatchIsolation(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "runs.db"))
	defer s.Close()
	const n = 300
	leases := make([]store.Lease, n)
	for i := range n {
		l, err := s.Create(ctx, store.Run{ID: fmt.Sprint(i)}, "o", time.Hour, []store.Record{{Key: "dup", Type: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		leases[i] = l
	}
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := range n {
		wg.Go(func() {
			l := leases[i]
			var err error
			switch i % 3 {
			case 0: // fine
				_, err = s.Append(ctx, l, []store.Record{{Key: "a", Type: "t"}, {Key: "b", Type: "t"}}, store.Update{Turn: 1})
			case 1: // conflict after a good record
				_, err = s.Append(ctx, l, []store.Record{{Key: "a", Type: "t"}, {Key: "dup", Type: "t"}}, store.Update{Turn: 1})
				if errors.Is(err, store.ErrConflict) {
					err = nil
				} else {
					err = fmt.Errorf("want ErrConflict, got %v", err)
				}
			case 2: // stale lease
				l.Epoch++
				_, err = s.Append(ctx, l, []store.Record{{Key: "a", Type: "t"}}, store.Update{Turn: 1})
				if errors.Is(err, store.ErrLeaseLost) {
					err = nil
				} else {
					err = fmt.Errorf("want ErrLeaseLost, got %v", err)
				}
			}
			if err != nil {
				bad.Add(1)
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if bad.Load() > 0 {
		return
	}
	for i := range n {
		r, err := s.Get(ctx, fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		want, turn := int64(1), 0
		if i%3 == 0 {
			want, turn = 3, 1
		}
		if r.LastSeq != want || r.Turn != turn {
			t.Fatalf("run %d: LastSeq %d Turn %d, want %d %d", i, r.LastSeq, r.Turn, want, turn)
		}
		rs, err := s.Read(ctx, r.ID, 0, 0)
		if err != nil || int64(len(rs)) != want {
			t.Fatalf("run %d: %d records, %v", i, len(rs), err)
		}
	}
	t.Logf("stats: %+v", s.Stats())
}

// TestTwoProcesses opens the same file twice, as two processes would: a
// writer in each, and reads across them.
func TestTwoProcesses(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "runs.db")
	a := open(t, path)
	defer a.Close()
	b := open(t, path)
	defer b.Close()

	const runs = 50
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			s := a
			if i%2 == 1 {
				s = b
			}
			id := fmt.Sprint(i)
			l, err := s.Create(ctx, store.Run{ID: id}, "o"+id, 50*time.Millisecond, []store.Record{{Key: "start", Type: "t"}})
			if err != nil {
				t.Error(err)
				return
			}
			for j := range 5 {
				if _, err := s.Append(ctx, l, []store.Record{{Key: strconv.Itoa(j), Type: "t"}}, store.Update{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	list, err := b.List(ctx, store.Filter{})
	if err != nil || len(list) != runs {
		t.Fatalf("List from the second store: %d runs, %v", len(list), err)
	}
	for _, r := range list {
		if r.LastSeq != 6 {
			t.Fatalf("run %s: LastSeq %d", r.ID, r.LastSeq)
		}
	}
	// Recovery from the other process: both race to claim the expired runs.
	time.Sleep(100 * time.Millisecond)
	var claimed sync.Map
	var total atomic.Int32
	for _, s := range []*sqlite.Store{a, b} {
		wg.Go(func() {
			for {
				ls, err := s.ClaimExpired(ctx, fmt.Sprintf("%p", s), time.Hour, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ls) == 0 {
					return
				}
				for _, l := range ls {
					if _, dup := claimed.LoadOrStore(l.RunID, l); dup {
						t.Errorf("run %s claimed twice", l.RunID)
					}
					total.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if total.Load() != runs {
		t.Fatalf("claimed %d runs, want %d", total.Load(), runs)
	}
}

func TestCloseNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	path := filepath.Join(t.TempDir(), "runs.db")
	for range 5 {
		s := open(t, path)
		if _, err := s.Create(t.Context(), store.Run{ID: strconv.Itoa(runtime.NumGoroutine())}, "o", time.Hour, nil); err != nil && !errors.Is(err, store.ErrExists) {
			t.Fatal(err)
		}
		if _, err := s.List(t.Context(), store.Filter{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	var after int
	for range 100 {
		after = runtime.NumGoroutine()
		if after <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	t.Fatalf("%d goroutines before, %d after closing:\n%s", before, after, buf[:runtime.Stack(buf, true)])
}

func TestCloseWhileWriting(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "runs.db"))
	l, err := s.Create(ctx, store.Run{ID: "r"}, "o", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var ok atomic.Int64
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				_, err := s.Append(ctx, l, []store.Record{{Key: fmt.Sprint(w, "-", i), Type: "t"}}, store.Update{})
				if errors.Is(err, sqlite.ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				ok.Add(1)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// Every append that succeeded is in the file.
	s = open(t, s.Path())
	defer s.Close()
	r, err := s.Get(ctx, "r")
	if err != nil || r.LastSeq != ok.Load() {
		t.Fatalf("LastSeq %d after %d successful appends (%v)", r.LastSeq, ok.Load(), err)
	}
}

func TestCancelledContext(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "runs.db"))
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Create(ctx, store.Run{ID: "r"}, "o", time.Hour, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create with a cancelled context: %v", err)
	}
	if _, err := s.Get(t.Context(), "r"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancelled Create wrote the run: %v", err)
	}
	if _, err := s.Get(ctx, "r"); err == nil {
		t.Fatal("Get with a cancelled context succeeded")
	}
}

// TestOddStrings: odd but valid strings round-trip (the conformance
// suite's BadInput covers invalid arguments).
func TestOddStrings(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "runs.db"))
	defer s.Close()
	odd := "it's a \"run\"; DROP TABLE runs; --\x00\u2603"
	if _, err := s.Create(ctx, store.Run{ID: odd, Swarm: odd}, odd, time.Hour, []store.Record{{Key: odd, Type: odd}}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Get(ctx, odd)
	if err != nil || r.Swarm != odd || r.Owner != odd {
		t.Fatalf("odd strings: %+v, %v", r, err)
	}
}

var payload = json.RawMessage(`{"role":"assistant","content":"hello there, this is a small message"}`)

func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "runs.db"))
	defer s.Close()
	l, err := s.Create(ctx, store.Run{ID: "r"}, "o", time.Hour, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	now := time.Now()
	for b.Loop() {
		k := strconv.Itoa(i)
		i++
		rs := []store.Record{
			{Key: k + "a", Type: "msg", Data: payload, Time: now},
			{Key: k + "b", Type: "msg", Data: payload, Time: now},
			{Key: k + "c", Type: "msg", Data: payload, Time: now},
			{Key: k + "d", Type: "msg", Data: payload, Time: now},
		}
		if _, err := s.Append(ctx, l, rs, store.Update{Turn: i}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendParallel(b *testing.B) {
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "runs.db"))
	defer s.Close()
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(64) // many runs in flight, as in a swarm
	b.RunParallel(func(pb *testing.PB) {
		id := strconv.FormatInt(next.Add(1), 10)
		l, err := s.Create(ctx, store.Run{ID: id}, "o", time.Hour, nil)
		if err != nil {
			b.Error(err)
			return
		}
		now := time.Now()
		for i := 0; pb.Next(); i++ {
			k := strconv.Itoa(i)
			rs := []store.Record{
				{Key: k + "a", Type: "msg", Data: payload, Time: now},
				{Key: k + "b", Type: "msg", Data: payload, Time: now},
			}
			if _, err := s.Append(ctx, l, rs, store.Update{Turn: i}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	st := s.Stats()
	b.ReportMetric(float64(st.Writes)/float64(st.Transactions), "writes/tx")
	b.ReportMetric(float64(st.PagesWritten)/float64(st.Writes), "pages/write")
}

// BenchmarkManyRuns starts 10,000 runs at once; each creates its run, waits
// for a (simulated) model call and finishes with one terminal append.
func BenchmarkManyRuns(b *testing.B) {
	const runs = 10000
	delay := 1 * time.Second
	if testing.Short() {
		delay = 0
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		s := open(b, filepath.Join(b.TempDir(), "runs.db"))
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		var failed atomic.Int32
		for i := range runs {
			wg.Go(func() {
				id := "run-" + strconv.Itoa(i)
				l, err := s.Create(ctx, store.Run{ID: id, Swarm: "s", MaxTurns: 1}, "o", time.Minute,
					[]store.Record{{Key: "start", Type: "run.start", Data: payload, Time: time.Now()}})
				if err == nil {
					time.Sleep(delay)
					usage := model.Usage{InputTokens: 10, OutputTokens: 5, Calls: 1}
					_, err = s.Append(ctx, l, []store.Record{{Key: "end", Type: "run.end", Data: payload, Time: time.Now()}},
						store.Update{State: store.Completed, Result: payload, Usage: &usage, Turn: 1})
				}
				if err != nil && failed.Add(1) == 1 {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		wall := time.Since(start)
		b.StopTimer()
		st := s.Stats()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(st.Transactions), "txs")
		b.ReportMetric(float64(st.PagesWritten)/float64(st.Writes), "pages/write")
		b.StartTimer()
	}
}

const childEnv = "SWARM_SQLITE_TEST_CHILD_DB"

// TestChildProcess is the other process of TestCrossProcess; it does
// nothing unless started by it.
func TestChildProcess(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		t.Skip("helper for TestCrossProcess")
	}
	writeAndClaim(t, path, "child", os.Stdout)
}

// writeAndClaim creates and appends to runs of its own, and claims expired
// runs, printing the ids of those it claimed.
func writeAndClaim(t *testing.T, path, who string, out io.Writer) {
	ctx := context.Background()
	s := open(t, path)
	defer s.Close()
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			id := fmt.Sprintf("%s-%d", who, i)
			l, err := s.Create(ctx, store.Run{ID: id, Swarm: who}, who, time.Hour, []store.Record{{Key: "start", Type: "t"}})
			for j := 0; err == nil && j < 5; j++ {
				_, err = s.Append(ctx, l, []store.Record{{Key: strconv.Itoa(j), Type: "t", Data: payload}}, store.Update{Turn: j})
			}
			if err != nil {
				t.Errorf("%s: %v", id, err)
			}
		})
	}
	wg.Go(func() {
		// Claim orphans until none is left to the dead owner. Their
		// leases expire while both processes are running.
		for {
			ls, err := s.ClaimExpired(ctx, who, time.Hour, 3)
			if err != nil {
				t.Errorf("ClaimExpired: %v", err)
				return
			}
			for _, l := range ls {
				fmt.Fprintln(out, "claimed", l.RunID)
			}
			if len(ls) > 0 {
				continue
			}
			left, err := s.List(ctx, store.Filter{Swarm: "orphans"})
			if err != nil {
				t.Errorf("List: %v", err)
				return
			}
			if !slices.ContainsFunc(left, func(r store.Run) bool { return r.Owner == "dead" }) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	wg.Wait()
}

// TestCrossProcess writes to one file from two processes at once.
func TestCrossProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "runs.db")
	s := open(t, path)
	const orphans = 100
	// The orphans' leases expire once the child has had time to start;
	// until then both processes write their own runs.
	for i := range orphans {
		if _, err := s.Create(ctx, store.Run{ID: fmt.Sprint("orphan-", i), Swarm: "orphans"}, "dead", time.Second, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildProcess$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	var childOut bytes.Buffer
	cmd.Stdout = &childOut
	cmd.Stderr = &childOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var parentOut bytes.Buffer
	writeAndClaim(t, path, "parent", &parentOut)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, childOut.String())
	}

	claimed := map[string]string{}
	for who, out := range map[string]string{"parent": parentOut.String(), "child": childOut.String()} {
		for line := range strings.Lines(out) {
			id, ok := strings.CutPrefix(strings.TrimSpace(line), "claimed ")
			if !ok {
				continue
			}
			if prev, dup := claimed[id]; dup {
				t.Errorf("%s claimed by %s and %s", id, prev, who)
			}
			claimed[id] = who
		}
	}
	if len(claimed) != orphans {
		t.Errorf("%d orphans claimed, want %d\nchild output:\n%s", len(claimed), orphans, childOut.String())
	}
	s = open(t, path)
	defer s.Close()
	for _, who := range []string{"parent", "child"} {
		runs, err := s.List(ctx, store.Filter{Swarm: who})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 100 {
			t.Fatalf("%d runs of %s, want 100", len(runs), who)
		}
		for _, r := range runs {
			if r.LastSeq != 6 || r.Owner != who {
				t.Fatalf("run %s: LastSeq %d Owner %q", r.ID, r.LastSeq, r.Owner)
			}
		}
	}
	for id, who := range claimed {
		if r, err := s.Get(ctx, id); err != nil || r.Owner != who || r.Epoch != 2 {
			t.Fatalf("orphan %s: %+v, %v; claimed by %s", id, r, err, who)
		}
	}
	t.Logf("parent claimed %d, child %d", strings.Count(parentOut.String(), "claimed"), strings.Count(childOut.String(), "claimed"))
}

func TestRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	open(t, "rel.db").Close()
	if _, err := os.Stat(filepath.Join(dir, "rel.db")); err != nil {
		t.Fatal(err)
	}
	// A path starting with two slashes is a path, not a URI authority.
	open(t, "/"+filepath.Join(dir, "dbl.db")).Close()
	if _, err := os.Stat(filepath.Join(dir, "dbl.db")); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "runs.db"))
	defer s.Close()
	usage := model.Usage{InputTokens: 100, OutputTokens: 20, Calls: 2}
	for i := range 1000 {
		l, err := s.Create(ctx, store.Run{ID: strconv.Itoa(i), Swarm: "s"}, "o", time.Hour, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Append(ctx, l, nil, store.Update{Usage: &usage, Result: payload}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Get(ctx, strconv.Itoa(int(n.Add(1)%1000))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Several openers of a new file at once (the CLI and a second process
// starting together) all succeed: only one creates the schema, and the
// others wait for the switch to WAL mode instead of failing.
func TestConcurrentOpenOfNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			st, err := sqlite.Open(context.Background(), path)
			if err != nil {
				errs <- err
				return
			}
			errs <- st.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestWatchSeesOtherProcessInbox: a message sent through another Store on
// the same file (another process, in real life) is reported to this
// Store's watchers, a stop as ChangeInbox, a resume as ChangeInbox and
// ChangeRunnable; messages sent before the first Watch are not.
func TestWatchSeesOtherProcessInbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "runs.db")
	owner := open(t, path)
	defer owner.Close()
	other := open(t, path)
	defer other.Close()

	if _, err := owner.Create(ctx, store.Run{ID: "busy"}, "owner", time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	pl, err := owner.Create(ctx, store.Run{ID: "waiting"}, "owner", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Append(ctx, pl, nil, store.Update{State: store.Paused, Reason: "ok?"}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Send(ctx, "busy", store.Message{Kind: store.MsgStop, Text: "before watching"}); err != nil {
		t.Fatal(err)
	}
	changes := make(chan store.Change, 100)
	if err := owner.Watch(ctx, func(c store.Change) { changes <- c }); err != nil {
		t.Fatal(err)
	}
	// Messages are reported in the order they were sent, so the one sent
	// before Watch would come before those of "waiting".
	expect := func(forbidden string, want ...store.Change) {
		t.Helper()
		for len(want) > 0 {
			select {
			case c := <-changes:
				if c.RunID == forbidden {
					t.Fatalf("a message sent before Watch was reported: %+v", c)
				}
				want = slices.DeleteFunc(want, func(w store.Change) bool { return w == c })
			case <-ctx.Done():
				t.Fatalf("no notification of %+v from the other store", want)
			}
		}
	}
	if _, err := other.Send(ctx, "waiting", store.Message{Kind: store.MsgResume, Text: "yes"}); err != nil {
		t.Fatal(err)
	}
	expect("busy", store.Change{RunID: "waiting", Kind: store.ChangeInbox}, store.Change{RunID: "waiting", Kind: store.ChangeRunnable})
	if _, err := other.Send(ctx, "busy", store.Message{Kind: store.MsgStop, Text: "now"}); err != nil {
		t.Fatal(err)
	}
	expect("", store.Change{RunID: "busy", Kind: store.ChangeInbox})
}

// BenchmarkRunJournal replays, one run after another, the store calls of
// one run of the peer benchmark's workload (go run ./bench: a handoff, then
// the answer): CreateReserving with the start record and the first block of
// the budget, two appends, the final append that completes the run, and
// Get. It reports the WAL pages written and transactions per run. The
// create+spend variant makes the first reservation with a Spend of its own,
// as the runtime did before store.Reserver (and does on stores without it).
func BenchmarkRunJournal(b *testing.B) {
	b.Run("reserving", func(b *testing.B) { benchRunJournal(b, true) })
	b.Run("create+spend", func(b *testing.B) { benchRunJournal(b, false) })
}

func benchRunJournal(b *testing.B, reserving bool) {
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "runs.db"))
	defer s.Close()
	data := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`) }
	usage := func(n int64) *model.Usage { return &model.Usage{InputTokens: 100 * n, OutputTokens: 10 * n, Calls: n} }
	before := s.Stats()
	i := 0
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		i++
		now := time.Now()
		id := fmt.Sprintf("run_%024x", i)
		rec := func(key, typ string, n int) store.Record {
			return store.Record{Key: key, Type: typ, Data: data(n), Time: now}
		}
		first := store.Pool{Calls: 15, Tools: 32}
		row, start := store.Run{ID: id, Swarm: "orchestrator", Agent: "orchestrator"}, []store.Record{rec("start", "started", 140)}
		var (
			l   store.Lease
			err error
		)
		if reserving {
			l, _, err = s.CreateReserving(ctx, row, "node", time.Minute, start, first)
		} else if l, err = s.Create(ctx, row, "node", time.Minute, start); err == nil {
			_, err = s.Spend(ctx, id, first)
		}
		if err != nil {
			b.Fatal(err)
		}
		steps := []struct {
			recs []store.Record
			u    store.Update
		}{
			{[]store.Record{rec("t1/model", "model_response", 263), rec("t1/call/c1", "handoff_started", 142)},
				store.Update{Turn: 1, Agent: "specialist", Usage: usage(1)}},
			{[]store.Record{rec("t1/h/c1/t1/model", "model_response", 166), rec("t1/tool/c1", "handoff_returned", 126), rec("t1/done", "turn_completed", 48)},
				store.Update{Turn: 1, Agent: "orchestrator", Usage: usage(2)}},
			{[]store.Record{rec("t2/model", "model_response", 177), rec("t2/done", "turn_completed", 48), rec("end", "completed", 53)},
				store.Update{Turn: 2, Agent: "orchestrator", Usage: usage(3), State: store.Completed, Result: data(19), ClearReason: true}},
		}
		for _, st := range steps {
			if _, err := s.Append(ctx, l, st.recs, st.u); err != nil {
				b.Fatal(err)
			}
		}
		if r, err := s.Get(ctx, id); err != nil || r.State != store.Completed || r.LastSeq != 9 {
			b.Fatalf("run %s: %+v, %v", id, r, err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/1e3/float64(i), "cpu-µs/run")
	st := s.Stats()
	b.ReportMetric(float64(st.PagesWritten-before.PagesWritten)/float64(i), "pages/run")
	b.ReportMetric(float64(st.Transactions-before.Transactions)/float64(i), "txs/run")
}
