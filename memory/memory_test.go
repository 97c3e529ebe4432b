package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/memory"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	storemem "github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/swarmtest"
)

// supportScript: the support agent looks up what it knows of the
// customer's seat, then records what it learned.
var supportScript = scripted.Script{"support": {
	scripted.Tools(scripted.CallTool(memory.ToolSearch, map[string]any{"query": "seat preference"})),
	scripted.Tools(scripted.CallTool(memory.ToolWrite, map[string]any{"key": "preferences/seat", "text": "Prefers an aisle seat, never the middle", "tags": []string{"seat"}})),
	scripted.Text("noted"),
}}

// support returns the support swarm over a bank per customer in st.
func support(st store.Store) (*swarm.Swarm[string, string], *memory.Memory) {
	mem := &memory.Memory{Store: st, Bank: "user:{user}"}
	return swarm.Define[string, string]("support", "Customer support", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Help the customer; remember their preferences.", Tools: mem.Tools()}
	}), mem
}

func newRuntime(t *testing.T, st store.Store, script scripted.Script, owner string, defs ...swarm.Definition) *swarm.Runtime {
	t.Helper()
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), RetryBackoff: time.Millisecond,
		PollInterval: 5 * time.Millisecond, Lease: 200 * time.Millisecond, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(defs...); err != nil {
		t.Fatal(err)
	}
	return rt
}

func openSQLite(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// toolOutputs returns the outputs of run id's results of tool name.
func toolOutputs(t *testing.T, rt *swarm.Runtime, id, name string) []string {
	t.Helper()
	var out []string
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventToolResult && ev.Tool == name {
			out = append(out, ev.Output)
		}
	}
	return out
}

func runFor(t *testing.T, rt *swarm.Runtime, def *swarm.Swarm[string, string], user string) string {
	t.Helper()
	res, run, err := def.Run(swarmtest.Context(t), rt, "hello", swarm.WithValues(map[string]any{"user": user}))
	if err != nil {
		t.Fatal(err)
	}
	if res.State() != swarm.StateCompleted {
		t.Fatalf("run for %s: %s", user, res.State())
	}
	return run.ID()
}

// TestRecallAcrossProcesses writes a customer's preference in one runtime
// on a SQLite file, closes it, and finds it from a second runtime on the
// same file: what one process wrote, the next recalls. Another customer's
// bank stays empty.
func TestRecallAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "swarm.db")
	stA := openSQLite(t, path)
	defA, _ := support(stA)
	a := newRuntime(t, stA, supportScript, "A", defA)
	first := runFor(t, a, defA, "alice")
	if out := toolOutputs(t, a, first, memory.ToolSearch); len(out) != 1 || strings.Contains(out[0], "aisle") {
		t.Fatalf("first run's search = %q, want no hits", out)
	}
	a.Close()
	stA.Close()

	stB := openSQLite(t, path)
	defB, mem := support(stB)
	b := newRuntime(t, stB, supportScript, "B", defB)
	second := runFor(t, b, defB, "alice")
	out := toolOutputs(t, b, second, memory.ToolSearch)
	if len(out) != 1 || !strings.Contains(out[0], "Prefers an aisle seat") || !strings.Contains(out[0], `"bank":"user:alice"`) {
		t.Fatalf("second process's search = %q, want alice's preference", out)
	}
	bob := runFor(t, b, defB, "bob")
	if out := toolOutputs(t, b, bob, memory.ToolSearch); len(out) != 1 || strings.Contains(out[0], "aisle") {
		t.Fatalf("bob's search = %q, want nothing of alice's", out)
	}
	info, err := stB.Bank(t.Context(), "user:alice")
	if err != nil || info.Entries != 1 || info.Version != 2 {
		t.Fatalf("alice's bank = %+v, %v; want 1 entry written twice", info, err)
	}
	e, err := mem.Get(t.Context(), "user:alice", "preferences/seat")
	if err != nil || e.Tags[0] != "seat" {
		t.Fatalf("Get = %+v, %v", e, err)
	}
}

// dyingStore is a store whose process dies at the first memory write,
// right after the write reached the store (after: true) or right before
// (after: false): from then on nothing it does reaches the store, so the
// tool call's result is never journaled.
type dyingStore struct {
	store.Store
	ms          store.Memories
	after, dead atomic.Bool
	puts        atomic.Int64
}

var errKilled = errors.New("process killed")

func (d *dyingStore) Append(ctx context.Context, l store.Lease, recs []store.Record, u store.Update) (int64, error) {
	if d.dead.Load() {
		return 0, errKilled
	}
	return d.Store.Append(ctx, l, recs, u)
}

func (d *dyingStore) Renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	if d.dead.Load() {
		return store.Renewal{}, errKilled
	}
	return d.Store.Renew(ctx, owner, lease)
}

func (d *dyingStore) Release(ctx context.Context, l store.Lease) error {
	if d.dead.Load() {
		return errKilled
	}
	return d.Store.Release(ctx, l)
}

func (d *dyingStore) PutMemory(ctx context.Context, bank string, w store.MemoryWrite) (store.MemoryEntry, bool, error) {
	d.puts.Add(1)
	if !d.after.Load() {
		d.dead.Store(true)
		return store.MemoryEntry{}, false, errKilled
	}
	e, ok, err := d.ms.PutMemory(ctx, bank, w)
	d.dead.Store(true)
	return e, ok, err
}

func (d *dyingStore) GetMemory(ctx context.Context, bank, key string) (store.MemoryEntry, error) {
	return d.ms.GetMemory(ctx, bank, key)
}

func (d *dyingStore) ListMemories(ctx context.Context, bank string, f store.MemoryFilter) ([]store.MemoryEntry, error) {
	return d.ms.ListMemories(ctx, bank, f)
}

func (d *dyingStore) DeleteMemory(ctx context.Context, bank, key string) error {
	return d.ms.DeleteMemory(ctx, bank, key)
}

func (d *dyingStore) DeleteBank(ctx context.Context, bank string) (int, error) {
	return d.ms.DeleteBank(ctx, bank)
}

func (d *dyingStore) Bank(ctx context.Context, bank string) (store.BankInfo, error) {
	return d.ms.Bank(ctx, bank)
}

func (d *dyingStore) Banks(ctx context.Context, prefix string) ([]store.BankInfo, error) {
	return d.ms.Banks(ctx, prefix)
}

// TestCrashAroundWrite kills the process at a memory write, before the
// write reaches the store and right after, and recovers the run in a
// second process on the same SQLite file: the call runs again, and the
// write is applied exactly once either way (neither lost nor doubled).
func TestCrashAroundWrite(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after_effect_%v", after), func(t *testing.T) {
			ctx := swarmtest.Context(t)
			path := filepath.Join(t.TempDir(), "swarm.db")
			inner := openSQLite(t, path)
			d := &dyingStore{Store: inner, ms: inner}
			d.after.Store(after)
			defA, _ := support(d)
			a := newRuntime(t, d, supportScript, "A", defA)
			run, err := defA.Start(ctx, a, "hello", swarm.WithValues(map[string]any{"user": "carol"}))
			if err != nil {
				t.Fatal(err)
			}
			swarmtest.Until(t, ctx, "the process dies at the write", func() error {
				if !d.dead.Load() {
					return swarmtest.Pending("alive")
				}
				return nil
			})
			a.Close()
			want := int64(0)
			if after {
				want = 1
			}
			if info, _ := inner.Bank(ctx, "user:carol"); info.Version != want {
				t.Fatalf("bank at the crash = %+v, want version %d", info, want)
			}
			recs, _ := inner.Read(ctx, run.ID(), 0, 0)
			for _, r := range recs {
				if r.Type == string(swarm.EventToolResult) && strings.Contains(string(r.Data), memory.ToolWrite) {
					t.Fatalf("the write's result was journaled before the crash: %s", r.Data)
				}
			}

			stB := openSQLite(t, path)
			defB, _ := support(stB)
			b := newRuntime(t, stB, supportScript, "B", defB)
			swarmtest.Until(t, ctx, "B recovers the run", func() error {
				if _, err := b.Recover(ctx); err != nil {
					return err
				}
				s, err := b.Status(ctx, run.ID())
				if err != nil {
					return err
				}
				if s.State != swarm.StateCompleted {
					return swarmtest.Pending("%s", s.State)
				}
				return nil
			})
			info, err := stB.Bank(ctx, "user:carol")
			if err != nil || info.Version != 1 || info.Entries != 1 {
				t.Fatalf("bank after recovery = %+v, %v; want the write applied once (version 1)", info, err)
			}
			out := toolOutputs(t, b, run.ID(), memory.ToolWrite)
			if len(out) != 1 || !strings.Contains(out[0], `"version":1`) {
				t.Fatalf("journaled write results = %q, want one at version 1", out)
			}
		})
	}
}

// TestConcurrentRunsOneBank runs many customers' conversations for one
// customer at once, from two runtimes on one SQLite file: every write is
// applied, each with its own version.
func TestConcurrentRunsOneBank(t *testing.T) {
	ctx := swarmtest.Context(t)
	path := filepath.Join(t.TempDir(), "swarm.db")
	const perRuntime = 4
	var wg sync.WaitGroup
	var ids sync.Map
	for _, owner := range []string{"A", "B"} {
		st := openSQLite(t, path)
		def, _ := support(st)
		rt := newRuntime(t, st, supportScript, owner, def)
		for i := range perRuntime {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, run, err := def.Run(ctx, rt, "hello", swarm.WithValues(map[string]any{"user": "dave"}))
				if err != nil || res.State() != swarm.StateCompleted {
					t.Errorf("run %s/%d: %v %v", owner, i, res, err)
					return
				}
				ids.Store(run.ID(), rt)
			}()
		}
	}
	wg.Wait()
	st := openSQLite(t, path)
	info, err := st.Bank(ctx, "user:dave")
	if err != nil || info.Version != 2*perRuntime || info.Entries != 1 {
		t.Fatalf("bank after %d concurrent runs = %+v, %v; want version %d, 1 entry", 2*perRuntime, info, err, 2*perRuntime)
	}
	versions := map[string]bool{}
	ids.Range(func(k, v any) bool {
		for _, o := range toolOutputs(t, v.(*swarm.Runtime), k.(string), memory.ToolWrite) {
			var r struct{ Version int64 }
			if err := json.Unmarshal([]byte(o), &r); err != nil {
				t.Fatal(err)
			}
			if versions[fmt.Sprint(r.Version)] {
				t.Errorf("two writes got version %d", r.Version)
			}
			versions[fmt.Sprint(r.Version)] = true
		}
		return true
	})
	if len(versions) != 2*perRuntime {
		t.Fatalf("%d distinct write versions, want %d", len(versions), 2*perRuntime)
	}
}

// TestBankPlaceholders fills bank names from the run: its values (looked
// up through parents), its id and its root.
func TestBankPlaceholders(t *testing.T) {
	ctx := swarmtest.Context(t)
	st := storemem.New()
	mem := &memory.Memory{Store: st}
	var got []string
	probe := swarm.NewTool("probe", "", func(ctx context.Context, _ struct{}) (string, error) {
		for _, b := range []string{"user:{user}", "run:{run}", "team:{root}", "x:{missing}"} {
			mem.Bank = b
			name, err := mem.BankFor(ctx)
			if err != nil {
				name = "error: " + err.Error()
			}
			got = append(got, name)
		}
		return "ok", nil
	})
	def := swarm.Define[string, string]("p", "", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{probe}} })
	rt := newRuntime(t, st, scripted.Script{"p": {scripted.Tools(scripted.CallTool("probe", map[string]any{})), scripted.Text("done")}}, "A", def)
	_, run, err := def.Run(ctx, rt, "x", swarm.WithValues(map[string]any{"user": "eve", "n": 3}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0] != "user:eve" || got[1] != "run:"+run.ID() || got[2] != "team:"+run.ID() ||
		!strings.Contains(got[3], "not started with the value") {
		t.Fatalf("filled banks = %q", got)
	}
	mem.Bank = "user:{user}"
	if _, err := mem.BankFor(ctx); !errors.Is(err, memory.ErrNoBank) {
		t.Fatalf("BankFor outside a run: %v, want ErrNoBank", err)
	}
	mem.Bank = "user:{user"
	if _, err := mem.BankFor(swarm.WithCallKey(ctx, run.ID(), "s")); err == nil {
		t.Fatal("an unclosed placeholder was accepted")
	}
}

// TestWriteRefused refuses writes two ways, through the tools in a run:
// CheckWrite rejects one, the bank's limit another; the model sees each
// reason, and nothing is stored.
func TestWriteRefused(t *testing.T) {
	st := storemem.New()
	mem := &memory.Memory{Store: st, Bank: "agent:desk", Limits: store.BankLimits{MaxEntries: 1},
		CheckWrite: func(_ context.Context, bank string, e store.MemoryEntry) error {
			if strings.Contains(e.Text, "card number") {
				return errors.New("no card numbers in memory")
			}
			return nil
		}}
	def := swarm.Define[string, string]("desk", "", func(string) swarm.Spec { return swarm.Spec{Tools: mem.Tools()} })
	script := scripted.Script{"desk": {
		scripted.Tools(scripted.CallTool(memory.ToolWrite, map[string]any{"key": "card", "text": "card number 4111"})),
		scripted.Tools(scripted.CallTool(memory.ToolWrite, map[string]any{"key": "a", "text": "first"})),
		scripted.Tools(scripted.CallTool(memory.ToolWrite, map[string]any{"key": "b", "text": "second"})),
		scripted.Text("done"),
	}}
	rt := newRuntime(t, st, script, "A", def)
	_, run, err := def.Run(swarmtest.Context(t), rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	out := toolOutputs(t, rt, run.ID(), memory.ToolWrite)
	if len(out) != 3 || !strings.Contains(out[0], "no card numbers in memory") || !strings.Contains(out[1], `"version":1`) ||
		!strings.Contains(out[2], "is full") {
		t.Fatalf("write results = %q", out)
	}
	if es, _ := st.ListMemories(t.Context(), "agent:desk", store.MemoryFilter{}); len(es) != 1 || es[0].Key != "a" {
		t.Fatalf("bank holds %+v, want only a", es)
	}
}
