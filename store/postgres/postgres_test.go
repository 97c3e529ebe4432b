package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/postgres"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
	"github.com/swarmrt/swarm/store/storetest"
)

func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	pgtest.Server(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, pgtest.URL(t, "pool_max_conns=6"))
	})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func rec(key string) store.Record {
	return store.Record{Key: key, Type: "t", Data: json.RawMessage(`{"k":"` + key + `"}`), Time: time.Now()}
}

func keys(t *testing.T, s store.Store, id string) []string {
	t.Helper()
	rs, err := s.Read(t.Context(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, r.Key)
	}
	return out
}

// TestFencing: a stale owner in another process (its own pool) can write
// nothing once its lease has been taken over, not even part of a batch.
func TestFencing(t *testing.T) {
	ctx := ctxT(t)
	url := pgtest.URL(t, "pool_max_conns=3")
	a, b := open(t, url), open(t, url)
	defer a.Close()
	defer b.Close()
	la, err := a.Create(ctx, store.Run{ID: "r", Swarm: "s"}, "A", 50*time.Millisecond, []store.Record{rec("start")})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := b.Send(ctx, "r", store.Message{Kind: store.MsgStop, Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	lb, err := b.Claim(ctx, "r", "B", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Epoch != 2 {
		t.Fatalf("B's lease %+v, want epoch 2", lb)
	}
	before, _ := b.Get(ctx, "r")
	_, err = a.Append(ctx, la, []store.Record{rec("a1"), rec("a2"), rec("a3")},
		store.Update{Turn: 7, State: store.Completed, Result: json.RawMessage(`"late"`), AckInbox: msg.ID})
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale append: %v, want ErrLeaseLost", err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale release: %v, want ErrLeaseLost", err)
	}
	after, _ := b.Get(ctx, "r")
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("stale writes changed the row:\n%+v\n%+v", before, after)
	}
	if got := keys(t, b, "r"); !slices.Equal(got, []string{"start"}) {
		t.Fatalf("journal %q after stale writes", got)
	}
	if in, _ := b.Inbox(ctx, "r"); len(in) != 1 {
		t.Fatalf("stale append acknowledged the inbox: %+v", in)
	}
	if _, err := b.Append(ctx, lb, []store.Record{rec("b1")}, store.Update{}); err != nil {
		t.Fatalf("new owner's append: %v", err)
	}
}

// TestConcurrentClaimExpiredNodes: claimers in separate pools (separate
// nodes) take every expired run exactly once.
func TestConcurrentClaimExpiredNodes(t *testing.T) {
	const runs, nodes = 200, 6
	ctx := ctxT(t)
	url := pgtest.URL(t, "pool_max_conns=2")
	setup := open(t, url)
	defer setup.Close()
	for i := range runs {
		if _, err := setup.Create(ctx, store.Run{ID: fmt.Sprintf("r%03d", i), Swarm: "s"}, "dead", time.Millisecond, nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond)
	var (
		mu  sync.Mutex
		got = map[string]string{}
		wg  sync.WaitGroup
	)
	for n := range nodes {
		s := open(t, url)
		defer s.Close()
		for g := range 3 {
			owner := fmt.Sprintf("n%d-%d", n, g)
			wg.Go(func() {
				for {
					ls, err := s.ClaimExpired(ctx, owner, time.Hour, 7)
					if err != nil {
						t.Errorf("ClaimExpired: %v", err)
						return
					}
					if len(ls) == 0 {
						return
					}
					mu.Lock()
					for _, l := range ls {
						if prev, dup := got[l.RunID]; dup {
							t.Errorf("run %s claimed by %s and %s", l.RunID, prev, owner)
						}
						got[l.RunID] = owner
						if l.Epoch != 2 {
							t.Errorf("run %s claimed at epoch %d", l.RunID, l.Epoch)
						}
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(got) != runs {
		t.Fatalf("%d runs claimed, want %d", len(got), runs)
	}
}

// TestConcurrentMigrations: nodes opening a fresh database at once migrate
// it exactly once.
func TestConcurrentMigrations(t *testing.T) {
	ctx := ctxT(t)
	url := pgtest.URL(t, "pool_max_conns=2")
	var wg sync.WaitGroup
	stores := make([]*postgres.Store, 8)
	for i := range stores {
		wg.Go(func() {
			s, err := postgres.Open(ctx, url)
			if err != nil {
				t.Errorf("Open %d: %v", i, err)
				return
			}
			stores[i] = s
		})
	}
	wg.Wait()
	for _, s := range stores {
		if s == nil {
			t.FailNow()
		}
		defer s.Close()
		if v, err := s.SchemaVersion(ctx); err != nil || v != postgres.SchemaVersion {
			t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, postgres.SchemaVersion)
		}
	}
	var n int
	if err := stores[0].Pool().QueryRow(ctx, `SELECT count(*) FROM swarm_schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	files, err := os.ReadDir("migrations") // versions may skip numbers
	if err != nil {
		t.Fatal(err)
	}
	if n != len(files) {
		t.Fatalf("%d migration rows, want %d", n, len(files))
	}
}

// TestNewerSchema: a database migrated by a newer version is refused and
// left as it is.
func TestNewerSchema(t *testing.T) {
	ctx := ctxT(t)
	url := pgtest.URL(t, "pool_max_conns=2")
	s := open(t, url)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO swarm_schema_migrations (version, name) VALUES ($1, 'future')`, postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err := postgres.Open(ctx, url)
	if !errors.Is(err, postgres.ErrNewerSchema) {
		t.Fatalf("Open of a newer schema: %v, want ErrNewerSchema", err)
	}
	t.Logf("error: %v", err)
	_, err = store.Open(ctx, url)
	if !errors.Is(err, postgres.ErrNewerSchema) {
		t.Fatalf("store.Open of a newer schema: %v, want ErrNewerSchema", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := ctxT(t)
	pgtest.Server(t)
	if os.Getenv("PGDATABASE") == "" {
		_, err := store.Open(ctx, "postgres://127.0.0.1:5432")
		if !errors.Is(err, postgres.ErrNoDatabase) {
			t.Errorf("URL without a database: %v, want ErrNoDatabase", err)
		}
		t.Logf("no database: %v", err)
	}
	_, err := store.Open(ctx, "postgresql://someone:s3cret@127.0.0.1:1/test?connect_timeout=5")
	if err == nil || !strings.Contains(err.Error(), "cannot reach the database") || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("unreachable database: %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the password is in the error: %v", err)
	}
	t.Logf("unreachable: %v", err)
	// A database that does not exist will not come by waiting.
	_, err = store.Open(ctx, "postgres://127.0.0.1:5432/no_such_database_here")
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("missing database: %v, want an error that is not ErrUnavailable", err)
	}
	_, err = store.Open(ctx, "postgres://127.0.0.1:5432/test?pool_max_conns=zero")
	if err == nil || !strings.Contains(err.Error(), "bad connection string") {
		t.Errorf("bad pool setting: %v", err)
	}
	// Both schemes, with pool settings from the URL.
	for _, scheme := range []string{"postgres", "postgresql"} {
		url := pgtest.URL(t, "pool_max_conns=3")
		s, err := store.Open(ctx, strings.Replace(url, "postgres", scheme, 1))
		if err != nil {
			t.Fatalf("store.Open(%s): %v", scheme, err)
		}
		if got := s.(*postgres.Store).Pool().Config().MaxConns; got != 3 {
			t.Errorf("pool_max_conns=3 gave MaxConns %d", got)
		}
		s.Close()
	}
}

// TestReconnect: after the database ends every connection of the store (as
// a restart does), the pool and the listener reconnect.
func TestReconnect(t *testing.T) {
	ctx := ctxT(t)
	app := fmt.Sprintf("swarm_reconnect_%d", time.Now().UnixNano())
	url := pgtest.URL(t, "pool_max_conns=3", "application_name="+app)
	s := open(t, url)
	defer s.Close()
	changes := make(chan store.Change, 100)
	if err := s.Watch(ctx, func(c store.Change) { changes <- c }); err != nil {
		t.Fatal(err)
	}
	l, err := s.Create(ctx, store.Run{ID: "r", Swarm: "s"}, "o", time.Hour, []store.Record{rec("a")})
	if err != nil {
		t.Fatal(err)
	}
	<-changes
	admin, err := pgx.Connect(ctx, pgtest.Server(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed < 2 {
		t.Fatalf("terminated %d backends, want the pool's and the listener's", killed)
	}
	// Reads are tried again on a fresh connection: the first one after
	// the connections ended succeeds.
	if r, err := s.Get(ctx, "r"); err != nil || r.LastSeq != 1 {
		t.Fatalf("get after the connections were terminated: %+v, %v", r, err)
	}
	// A write on a dead connection may fail once (it is not repeated, as
	// it may have been done); the pool then replaces the connection. The
	// append is atomic, so a retry is safe.
	var appendErr error
	for range 5 {
		if _, appendErr = s.Append(ctx, l, []store.Record{rec("b")}, store.Update{}); appendErr == nil || errors.Is(appendErr, store.ErrConflict) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if appendErr != nil && !errors.Is(appendErr, store.ErrConflict) {
		t.Fatalf("append after the connections were terminated: %v", appendErr)
	}
	if got := keys(t, s, "r"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("journal %q", got)
	}
	// The listener comes back; notifications flow again.
	for s.Stats().Reconnects == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the listener did not reconnect")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if _, err := s.Append(ctx, l, []store.Record{rec("c")}, store.Update{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case c := <-changes:
			if c.RunID == "r" && c.Kind == store.ChangeAppended {
				if s.Stats().Notifications == 0 {
					t.Fatal("Stats counts no notification")
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("no notification after the reconnect")
		}
	}
}
