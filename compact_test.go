package swarm_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// windowed is a model that measures each request against a window (about
// four bytes a token, as the runtime estimates) and counts summary calls.
type windowed struct {
	model.Model
	window    int
	over      atomic.Int64
	largest   atomic.Int64
	summaries atomic.Int64
	orphans   atomic.Int64
}

func (w *windowed) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	n := len(req.System)
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	calls := map[string]bool{}
	for _, m := range req.Messages {
		n += len(m.Content) + 16
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.ID) + len(c.Arguments)
			calls[c.ID] = true
		}
		if m.Role == model.RoleTool && !calls[m.ToolCallID] {
			w.orphans.Add(1) // a result whose call is not in the request
		}
	}
	tokens := int64(n / 4)
	if tokens > int64(w.window) {
		w.over.Add(1)
	}
	if tokens > w.largest.Load() {
		w.largest.Store(tokens)
	}
	if strings.HasSuffix(req.Agent, "_compact") {
		w.summaries.Add(1)
	}
	return w.Model.Generate(ctx, req)
}

// longScript: rounds tool calls of echo with padding, then an answer; the
// summarizer answers each summary call.
func longScript(rounds int) scripted.Script {
	pad := strings.Repeat("x", 200)
	var steps []scripted.Step
	for i := range rounds {
		steps = append(steps, scripted.Tools(scripted.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "echo", Arguments: map[string]any{"pad": pad}}))
	}
	steps = append(steps, scripted.Text("done"))
	var sums []scripted.Step
	for i := range rounds {
		sums = append(sums, scripted.Text(fmt.Sprintf("summary %d: echoed padding", i)))
	}
	return scripted.Script{"long": steps, "long_compact": sums}
}

func longSwarm(c *swarm.Compaction, rounds int) *swarm.Swarm[string, string] {
	echo := swarm.NewTool("echo", "echoes", func(_ context.Context, in struct {
		Pad string `json:"pad"`
	}) (string, error) {
		return "echoed " + in.Pad, nil
	})
	return swarm.Define[string, string]("long", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{echo}, MaxTurns: rounds + 5, Compaction: c}
	})
}

// TestCompactionKeepsRequestsInTheWindow: a run of 150 rounds (300
// messages) with a 2,000-token window never sends a request over the
// window, never sends a tool result without its call, and journals each
// compaction with its range and tokens; the journal keeps every message.
func TestCompactionKeepsRequestsInTheWindow(t *testing.T) {
	const rounds, window = 150, 2000
	for _, compact := range []bool{true, false} {
		t.Run(fmt.Sprint("compact=", compact), func(t *testing.T) {
			ctx := ctxT(t)
			m := &windowed{Model: scripted.New(longScript(rounds)), window: window}
			rt, err := swarm.New(swarm.Config{Model: m, RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			var c *swarm.Compaction
			if compact {
				c = &swarm.Compaction{Window: window, Trigger: 0.7, Keep: 3}
			}
			def := longSwarm(c, rounds)
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}
			res, run, err := def.Run(ctx, rt, "echo a lot")
			if err != nil {
				t.Fatal(err)
			}
			if res.State() != swarm.StateCompleted {
				t.Fatalf("result %#v", res)
			}
			if !compact {
				if m.over.Load() == 0 {
					t.Fatal("without compaction the requests should pass the window (the test would show nothing)")
				}
				return
			}
			if n := m.over.Load(); n != 0 {
				t.Errorf("%d requests over the window (largest %d tokens)", n, m.largest.Load())
			}
			if n := m.orphans.Load(); n != 0 {
				t.Errorf("%d tool results sent without their call", n)
			}
			evs := swarmtest.Events(t, rt, run.ID())
			compactions, results := 0, 0
			for _, ev := range evs {
				switch ev.Type {
				case swarm.EventCompacted:
					compactions++
					ci := ev.Compaction
					if ci == nil || ci.To <= ci.From || ci.TokensAfter >= ci.TokensBefore || ev.Text == "" {
						t.Errorf("compacted event %+v %+v", ev, ci)
					}
				case swarm.EventToolResult:
					results++
				}
			}
			if compactions == 0 || int64(compactions) != m.summaries.Load() {
				t.Errorf("%d compactions journaled, %d summary calls", compactions, m.summaries.Load())
			}
			if results != rounds {
				t.Errorf("journal holds %d tool results, want all %d", results, rounds)
			}
		})
	}
}

// TestCompactionCrashRecovers kills a run right after it journals its
// first compaction and recovers it elsewhere: the summary is not asked
// for again, and the run completes within the window.
func TestCompactionCrashRecovers(t *testing.T) {
	const rounds, window = 30, 2000
	ctx := ctxT(t)
	def := longSwarm(&swarm.Compaction{Window: window, Trigger: 0.7, Keep: 3}, rounds)
	mem := memory.New()
	d := &dieAfterCompaction{Store: mem}
	ma := &windowed{Model: scripted.New(longScript(rounds)), window: window}
	a, err := swarm.New(swarm.Config{Store: d, Model: ma, Lease: 60 * time.Millisecond, RetryBackoff: time.Millisecond, Owner: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := a.Start(ctx, "long", []byte(`"go"`))
	if err != nil {
		t.Fatal(err)
	}
	for !d.dead.Load() {
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(80 * time.Millisecond)
	summariesA := ma.summaries.Load()
	recs, _ := mem.Read(ctx, id, 0, 0)
	journaled := 0
	for _, r := range recs {
		if r.Type == string(swarm.EventCompacted) {
			journaled++
		}
	}
	mb := &windowed{Model: scripted.New(longScript(rounds)), window: window}
	b, err := swarm.New(swarm.Config{Store: mem, Model: mb, RetryBackoff: time.Millisecond, Owner: "B", PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Register(def); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := b.Wait(ctx, id)
	if err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("state %+v %v", st, err)
	}
	evs := swarmtest.Events(t, b, id)
	total := 0
	for _, ev := range evs {
		if ev.Type == swarm.EventCompacted {
			total++
		}
	}
	if got := summariesA + mb.summaries.Load(); got != int64(total) {
		t.Errorf("%d summary calls (A %d, B %d) for %d compactions journaled: a recorded summary was asked for again", got, summariesA, mb.summaries.Load(), total)
	}
	if journaled == 0 || mb.over.Load() != 0 || mb.orphans.Load() != 0 {
		t.Errorf("journaled at death %d; after recovery: %d requests over the window, %d orphans", journaled, mb.over.Load(), mb.orphans.Load())
	}
}

// dieAfterCompaction is a store whose process dies right after it
// journals a compaction.
type dieAfterCompaction struct {
	store.Store
	dead atomic.Bool
}

func (d *dieAfterCompaction) Append(ctx context.Context, l store.Lease, recs []store.Record, u store.Update) (int64, error) {
	if d.dead.Load() {
		return 0, errKilled
	}
	n, err := d.Store.Append(ctx, l, recs, u)
	for _, r := range recs {
		if err == nil && r.Type == string(swarm.EventCompacted) {
			d.dead.Store(true)
		}
	}
	return n, err
}

func (d *dieAfterCompaction) Renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	if d.dead.Load() {
		return store.Renewal{}, errKilled
	}
	return d.Store.Renew(ctx, owner, lease)
}

func (d *dieAfterCompaction) Release(ctx context.Context, l store.Lease) error {
	if d.dead.Load() {
		return errKilled
	}
	return d.Store.Release(ctx, l)
}
