package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/memory"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	storemem "github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/postgres"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
	"github.com/swarmrt/swarm/swarmtest"
)

// reuseScript lists and searches the bank, then remembers a preference.
var reuseScript = scripted.Script{"support": {
	scripted.Tools(scripted.CallTool(memory.ToolRead, map[string]any{}), scripted.CallTool(memory.ToolSearch, map[string]any{"query": "tea"})),
	scripted.Tools(scripted.CallTool(memory.ToolWrite, map[string]any{"key": "preferences/drink", "text": "Likes green tea"})),
	scripted.Text("noted"),
}}

// TestReusedRunIDIsANewRun: a run for carol is deleted (through another
// runtime on the store: another node of a cluster) and its id started
// again for dave, then for carol again. dave's memory tools see dave's
// bank, not carol's (the bank's name is not taken from a cache of the
// deleted run), and carol's second write, at the same step as her first,
// is stored: it is another run's write, not a repeat of the first.
func TestReusedRunIDIsANewRun(t *testing.T) {
	stores := map[string]func(t *testing.T) (store.Store, store.Store){
		"memory": func(*testing.T) (store.Store, store.Store) { st := storemem.New(); return st, st },
		"sqlite": func(t *testing.T) (store.Store, store.Store) {
			path := filepath.Join(t.TempDir(), "swarm.db")
			return openSQLite(t, path), openSQLite(t, path)
		},
		"postgres": func(t *testing.T) (store.Store, store.Store) {
			u := pgtest.URL(t, "pool_max_conns=4")
			open := func() store.Store {
				st, err := postgres.Open(t.Context(), u)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			}
			return open(), open()
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := swarmtest.Context(t)
			stA, stB := open(t)
			def, mem := support(stA)
			a := newRuntime(t, stA, reuseScript, "A", def)
			defB, _ := support(stB)
			b := newRuntime(t, stB, reuseScript, "B", defB)
			run := func(user string) {
				t.Helper()
				res, _, err := def.Run(ctx, a, "hello", swarm.WithID("reused"), swarm.WithValues(map[string]any{"user": user}))
				if err != nil || res.State() != swarm.StateCompleted {
					t.Fatalf("run for %s: %v, %v", user, res, err)
				}
				if _, err := b.Delete(ctx, "reused"); err != nil {
					t.Fatal(err)
				}
			}
			run("carol")
			run("dave")
			// dave's run left no trace in its journal, deleted: what it
			// read is in dave's bank, which holds only its own write.
			got, err := mem.List(ctx, "user:dave", store.MemoryFilter{})
			if err != nil || len(got) != 1 {
				t.Fatalf("dave's bank = %+v, %v; want dave's one entry", got, err)
			}
			if info, err := stA.(store.Memories).Bank(ctx, "user:carol"); err != nil || info.Version != 1 {
				t.Fatalf("carol's bank = %+v, %v; want carol's one write only (dave's went to carol's bank)", info, err)
			}

			// carol forgets, and a new run with the id writes again at
			// the same step.
			if err := mem.Delete(ctx, "user:carol", "preferences/drink"); err != nil {
				t.Fatal(err)
			}
			res, _, err := def.Run(ctx, a, "hello", swarm.WithID("reused"), swarm.WithValues(map[string]any{"user": "carol"}))
			if err != nil || res.State() != swarm.StateCompleted {
				t.Fatalf("carol's second run: %v, %v", res, err)
			}
			out := toolOutputs(t, a, "reused", memory.ToolRead)
			if len(out) != 1 || !strings.Contains(out[0], `"bank":"user:carol"`) {
				t.Fatalf("carol's memory_read = %q", out)
			}
			if _, err := mem.Get(ctx, "user:carol", "preferences/drink"); errors.Is(err, store.ErrNotFound) {
				t.Fatal("carol's second run's write was dropped as a repeat of her deleted run's")
			} else if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReusedRunIDReadsItsOwnBank: dave's run, on the id of carol's
// deleted run, lists and searches dave's bank.
func TestReusedRunIDReadsItsOwnBank(t *testing.T) {
	ctx := swarmtest.Context(t)
	st := storemem.New()
	def, mem := support(st)
	rt := newRuntime(t, st, reuseScript, "A", def)
	if _, err := mem.Put(ctx, "user:carol", store.MemoryEntry{Key: "secret", Text: "carol's tea order"}); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"carol", "dave"} {
		res, _, err := def.Run(ctx, rt, "hello", swarm.WithID("reused"), swarm.WithValues(map[string]any{"user": user}))
		if err != nil || res.State() != swarm.StateCompleted {
			t.Fatalf("run for %s: %v, %v", user, res, err)
		}
		for _, tool := range []string{memory.ToolRead, memory.ToolSearch} {
			out := toolOutputs(t, rt, "reused", tool)
			if len(out) != 1 || !strings.Contains(out[0], `"bank":"user:`+user+`"`) {
				t.Errorf("%s's %s = %q, want %s's bank", user, tool, out, user)
			}
			if user == "dave" && strings.Contains(out[0], "carol") {
				t.Errorf("dave's %s = %q, holds carol's entry", tool, out)
			}
		}
		if _, err := rt.Delete(context.WithoutCancel(ctx), "reused"); err != nil {
			t.Fatal(err)
		}
	}
}
