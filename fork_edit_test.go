package swarm_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation/conversationtest"
	"github.com/swarmrt/swarm/fork"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// forkRequests returns the model requests of agent in run id that rec
// holds.
func forkRequests(rec *conversationtest.Recorder, agent, id string) []model.Request {
	return slices.DeleteFunc(rec.Requests(agent), func(r model.Request) bool { return r.RunID != id })
}

// editScript is forkShop's script, its first response with text.
var editScript = scripted.Script{"shop": {
	{Text: "charging first", ToolCalls: []scripted.ToolCall{scripted.CallTool("charge", map[string]any{})}},
	scripted.Tools(scripted.CallTool("ship", map[string]any{})),
	scripted.Text("sold"),
}}

// editShop is forkShop on a model that keeps its requests, on st (a new
// memory store if nil).
func editShop(t *testing.T, st store.Store) (*swarm.Runtime, *swarm.Swarm[string, string], *conversationtest.Recorder, *atomic.Int32) {
	t.Helper()
	var charged atomic.Int32
	s := swarm.Define[string, string]("shop", "", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Sell {{.Input}}.", Tools: []swarm.Tool{
			swarm.NewTool("charge", "charges", func(context.Context, struct{}) (string, error) { charged.Add(1); return "charged 10 EUR", nil }),
			swarm.NewTool("ship", "ships", func(context.Context, struct{}) (string, error) { return "shipped", nil }),
		}}
	})
	q := &conversationtest.Recorder{Script: scripted.New(editScript)}
	if st == nil {
		st = memory.New()
	}
	rt, err := swarm.New(swarm.Config{Store: st, Model: q.Model(), RetryBackoff: time.Millisecond, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(s); err != nil {
		t.Fatal(err)
	}
	return rt, s, q, &charged
}

// keyOf returns the key of the n-th (0-based) record of type typ in recs.
func keyOf(t *testing.T, recs []store.Record, typ swarm.EventType, n int) string {
	t.Helper()
	for _, rec := range recs {
		if rec.Type == string(typ) {
			if n == 0 {
				return rec.Key
			}
			n--
		}
	}
	t.Fatalf("no %s record #%d in the journal", typ, n)
	return ""
}

// toolMessage returns the content of the tool message that answers a call
// of tool in req, and whether there is one.
func toolMessage(req model.Request, tool string) (string, bool) {
	for _, m := range req.Messages {
		if m.Role == model.RoleTool && m.Name == tool {
			return m.Content, true
		}
	}
	return "", false
}

// recordOf decodes the record under key in recs.
func recordOf(t *testing.T, recs []store.Record, key string) swarm.Event {
	t.Helper()
	for _, rec := range recs {
		if rec.Key == key {
			var ev swarm.Event
			if err := json.Unmarshal(rec.Data, &ev); err != nil {
				t.Fatal(err)
			}
			return ev
		}
	}
	t.Fatalf("no record %s", key)
	return swarm.Event{}
}

// TestForkEditToolResult forks a completed run at its first tool result
// with that result replaced: the tool does not run again, the fork's next
// model request carries the edited result, and the fork's journal marks
// the record edited.
func TestForkEditToolResult(t *testing.T) {
	ctx := ctxT(t)
	rt, s, q, charged := editShop(t, nil)
	_, origin, err := s.Run(ctx, rt, "a lamp")
	if err != nil {
		t.Fatal(err)
	}
	at := keyOf(t, journal(t, rt, origin.ID()), swarm.EventToolResult, 0)
	id, err := rt.Fork(ctx, origin.ID(), at, fork.Edits(fork.Edit{Key: at, Output: "card declined"}))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("fork: %+v %v", st, err)
	}
	if n := charged.Load(); n != 1 {
		t.Errorf("charge ran %d times, want 1 (the fork keeps its edited result)", n)
	}
	reqs := forkRequests(q, "shop", id)
	if len(reqs) != 2 {
		t.Fatalf("the fork made %d model calls, want 2 (the second and third rounds)", len(reqs))
	}
	if got, ok := toolMessage(reqs[0], "charge"); !ok || got != "card declined" {
		t.Errorf("the fork's next request carries charge's result %q (%v), want the edited %q", got, ok, "card declined")
	}
	fork := journal(t, rt, id)
	var start swarm.Event
	if err := json.Unmarshal(fork[0].Data, &start); err != nil {
		t.Fatal(err)
	}
	if start.ForkAt != at {
		t.Errorf("fork_at %q, want %q", start.ForkAt, at)
	}
	if ev := recordOf(t, fork, at); !ev.Edited || ev.Output != "card declined" || ev.IsError {
		t.Errorf("the fork's %s: %+v, want the edited output marked edited", at, ev)
	}
	if ev := recordOf(t, journal(t, rt, origin.ID()), at); ev.Edited || ev.Output != "charged 10 EUR" {
		t.Errorf("the origin's %s changed: %+v", at, ev)
	}
}

// TestForkEditModelText edits the text of the first model response, before
// the fork point: the fork's next request carries the edited text, with
// the response's tool call, and the tool does not run again.
func TestForkEditModelText(t *testing.T) {
	ctx := ctxT(t)
	rt, s, q, charged := editShop(t, nil)
	_, origin, err := s.Run(ctx, rt, "a lamp")
	if err != nil {
		t.Fatal(err)
	}
	recs := journal(t, rt, origin.ID())
	edit := keyOf(t, recs, swarm.EventModelResponse, 0)
	at := keyOf(t, recs, swarm.EventModelResponse, 1)
	id, err := rt.Fork(ctx, origin.ID(), at, fork.Edits(fork.Edit{Key: edit, Output: "charging, then shipping"}))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("fork: %+v %v", st, err)
	}
	if n := charged.Load(); n != 1 {
		t.Errorf("charge ran %d times, want 1", n)
	}
	reqs := forkRequests(q, "shop", id)
	if len(reqs) == 0 {
		t.Fatal("the fork made no model call")
	}
	i := slices.IndexFunc(reqs[0].Messages, func(m model.Message) bool { return m.Role == model.RoleAssistant })
	if i < 0 || reqs[0].Messages[i].Content != "charging, then shipping" || len(reqs[0].Messages[i].ToolCalls) != 1 {
		t.Errorf("the fork's next request: %+v, want the edited text with its tool call", reqs[0].Messages)
	}
	if ev := recordOf(t, journal(t, rt, id), edit); !ev.Edited || ev.Text != "charging, then shipping" {
		t.Errorf("the fork's %s: %+v", edit, ev)
	}
}

// TestForkEditErrors: an edit of an unknown step, of a step after the fork
// point, of a record that cannot be edited, twice of one step, or of the
// final answer (recorded with the run's end) is refused as invalid input,
// and creates nothing.
func TestForkEditErrors(t *testing.T) {
	ctx := ctxT(t)
	rt, s, _, _ := editShop(t, nil)
	_, origin, err := s.Run(ctx, rt, "a lamp")
	if err != nil {
		t.Fatal(err)
	}
	recs := journal(t, rt, origin.ID())
	first, second := keyOf(t, recs, swarm.EventToolResult, 0), keyOf(t, recs, swarm.EventToolResult, 1)
	call := keyOf(t, recs, swarm.EventToolCall, 0)
	final := keyOf(t, recs, swarm.EventModelResponse, 2)
	before, _ := rt.List(ctx, store.Filter{})
	for _, c := range []struct {
		name, at string
		edits    []fork.Edit
		want     string
	}{
		{"unknown step", "", []fork.Edit{{Key: "t9/tool/x", Output: "x"}}, `no step "t9/tool/x"`},
		{"after the fork point", first, []fork.Edit{{Key: second, Output: "x"}}, "after the fork point"},
		{"not editable", call, []fork.Edit{{Key: call, Output: "x"}}, "cannot be edited"},
		{"edited twice", "", []fork.Edit{{Key: first, Output: "x"}, {Key: first, Output: "y"}}, "edited twice"},
		{"final answer", "", []fork.Edit{{Key: final, Output: "x"}}, "recorded together with"},
		{"from the start", "start", []fork.Edit{{Key: first, Output: "x"}}, "a re-run from the start"},
	} {
		_, err := rt.Fork(ctx, origin.ID(), c.at, fork.Edits(c.edits...))
		if !errors.Is(err, swarm.ErrInvalidInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalidInput saying %q", c.name, err, c.want)
		}
	}
	if after, _ := rt.List(ctx, store.Filter{}); len(after) != len(before) {
		t.Errorf("%d runs after refused forks, want %d", len(after), len(before))
	}
}

// TestForkEditRecovered: a fork with an edit whose process dies before it
// journals anything of its own is recovered by another runtime, which
// replays the edited record, not the origin's: its model request carries
// the edited tool result.
func TestForkEditRecovered(t *testing.T) {
	ctx := ctxT(t)
	mem := memory.New()
	rt, s, _, _ := editShop(t, mem)
	_, origin, err := s.Run(ctx, rt, "a lamp")
	if err != nil {
		t.Fatal(err)
	}
	at := keyOf(t, journal(t, rt, origin.ID()), swarm.EventToolResult, 0)
	// A process whose store stops answering at its first append: the fork
	// is created, and its owner dies as it records its first step.
	d := dieOnCreate{swarmtest.NewKillable(t, mem)}
	a, err := swarm.New(swarm.Config{Store: d, Model: scripted.New(editScript), Lease: 60 * time.Millisecond, RetryBackoff: time.Millisecond, Owner: "A"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Register(s); err != nil {
		t.Fatal(err)
	}
	id, err := a.Fork(ctx, origin.ID(), at, fork.Edits(fork.Edit{Key: at, Output: "card declined"}))
	if err != nil {
		t.Fatal(err)
	}
	q := &conversationtest.Recorder{Script: scripted.New(editScript)}
	b, err := swarm.New(swarm.Config{Store: mem, Model: q.Model(), Lease: time.Second, RetryBackoff: time.Millisecond, Owner: "B", PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Register(s); err != nil {
		t.Fatal(err)
	}
	for {
		ids, err := b.Recover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ids, id) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the fork's lease never ran out for another runtime to recover it")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if st, err := b.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("recovered fork: %+v %v", st, err)
	}
	reqs := forkRequests(q, "shop", id)
	if len(reqs) == 0 {
		t.Fatal("the recovered fork made no model call")
	}
	if got, ok := toolMessage(reqs[0], "charge"); !ok || got != "card declined" {
		t.Errorf("the recovered fork's request carries charge's result %q (%v), want the edited %q", got, ok, "card declined")
	}
}

// TestForkEditHandoffResult edits what an agent handoff returned: the
// orchestrator's next request carries the edited answer and the agent is
// not asked again. The agent's own answer cannot be edited: it was
// journaled together with the return that passed it on.
func TestForkEditHandoffResult(t *testing.T) {
	ctx := ctxT(t)
	rt, rec := convRuntime(t, scripted.Script{
		"planner": {
			scripted.Tools(scripted.CallTool("handoff_to_weather", map[string]any{"request": "weekend forecast"})),
			scripted.Text(`{"activity": "hiking", "day": "Saturday"}`),
		},
		"weather": {scripted.Text("Sunny, 22C")},
	}, nil)
	_, origin, err := planner().Run(ctx, rt, "something outdoors")
	if err != nil {
		t.Fatal(err)
	}
	recs := journal(t, rt, origin.ID())
	returned := keyOf(t, recs, swarm.EventHandoffReturned, 0)
	answer := keyOf(t, recs, swarm.EventModelResponse, 1) // weather's
	if _, err := rt.Fork(ctx, origin.ID(), "", fork.Edits(fork.Edit{Key: answer, Output: "Rain"})); !errors.Is(err, swarm.ErrInvalidInput) || !strings.Contains(err.Error(), returned) {
		t.Errorf("edit of the agent's answer: %v, want ErrInvalidInput naming %s", err, returned)
	}
	id, err := rt.Fork(ctx, origin.ID(), "", fork.Edits(fork.Edit{Key: returned, Output: "Rain all weekend"}))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("fork: %+v %v", st, err)
	}
	if n := len(rec.Requests("weather")); n != 1 {
		t.Errorf("weather was asked %d times, want 1", n)
	}
	reqs := forkRequests(rec, "planner", id)
	if len(reqs) != 1 {
		t.Fatalf("the fork's planner made %d calls, want 1", len(reqs))
	}
	if got, ok := toolMessage(reqs[0], "handoff_to_weather"); !ok || got != "Rain all weekend" {
		t.Errorf("the fork's request carries the handoff's result %q (%v), want the edited one", got, ok)
	}
}

// dieOnCreate is a store whose process dies right after it creates a run:
// the run is stored, nothing after it.
type dieOnCreate struct{ *swarmtest.Killable }

func (d dieOnCreate) Create(ctx context.Context, r store.Run, owner string, lease time.Duration, records []store.Record) (store.Lease, error) {
	l, err := d.Killable.Create(ctx, r, owner, lease, records)
	d.Kill()
	return l, err
}
