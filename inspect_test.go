package swarm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/inspect"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

// sent is the request for call of agent that rec received.
func (r *recorder) sent(agent string, call int) (model.Request, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.reqs {
		if q.Agent == agent && q.Call == call {
			return q, true
		}
	}
	return model.Request{}, false
}

// checkRequests compares, for every model response of run id, the
// inspector's request with the one the model received.
func checkRequests(t *testing.T, rt *swarm.Runtime, rec *recorder, id string) int {
	t.Helper()
	ctx := ctxT(t)
	n := 0
	for _, r := range journal(t, rt, id) {
		if r.Type != string(swarm.EventModelResponse) {
			continue
		}
		got, err := rt.Request(ctx, id, r.Key)
		if err != nil {
			t.Fatalf("Request(%s): %v", r.Key, err)
		}
		want, ok := rec.sent(got.Agent, got.Call)
		if !ok {
			t.Fatalf("%s: the model received no call %d of %s", r.Key, got.Call, got.Agent)
		}
		if got.System != want.System {
			t.Errorf("%s: system\n got %q\nwant %q", r.Key, got.System, want.System)
		}
		wantMsgs := want.Messages
		if wantMsgs == nil {
			wantMsgs = []model.Message{}
		}
		if !reflect.DeepEqual(got.Messages, wantMsgs) {
			a, _ := json.Marshal(got.Messages)
			b, _ := json.Marshal(wantMsgs)
			t.Errorf("%s: messages\n got %s\nwant %s", r.Key, a, b)
		}
		wantTools := want.Tools
		if wantTools == nil {
			wantTools = []model.ToolDef{}
		}
		if !reflect.DeepEqual(got.Tools, wantTools) {
			t.Errorf("%s: tools\n got %+v\nwant %+v", r.Key, got.Tools, wantTools)
		}
		if string(got.ResultSchema) != string(want.ResultSchema) {
			t.Errorf("%s: result schema %s, want %s", r.Key, got.ResultSchema, want.ResultSchema)
		}
		if got.Check != inspect.Verified {
			t.Errorf("%s: check %q, want verified", r.Key, got.Check)
		}
		if got.Tokens.Total <= 0 || len(got.Tokens.Messages) != len(got.Messages) || len(got.Tokens.Tools) != len(got.Tools) {
			t.Errorf("%s: tokens %+v", r.Key, got.Tokens)
		}
		n++
	}
	return n
}

// TestRequestRebuildsEveryCall: for every model call of a run with a
// delegation (nested steps), tools and a typed result, the inspector gives
// exactly the request the model received.
func TestRequestRebuildsEveryCall(t *testing.T) {
	rec := &recorder{m: scripted.New(scripted.Script{
		"planner": {
			scripted.Tools(scripted.CallTool("handoff_to_forecaster", map[string]any{"request": "weekend forecast"})),
			scripted.Tools(scripted.CallTool("calendar", map[string]any{"day": "Saturday"})),
			scripted.Text(`{"activity": "hiking", "day": "Saturday"}`),
		},
		"forecaster": {
			scripted.Tools(scripted.CallTool("calendar", map[string]any{"day": "Sunday"})),
			scripted.Text("Sunny, 22C"),
		},
	})}
	rt, err := swarm.New(swarm.Config{Model: rec, RetryBackoff: time.Millisecond, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	calendar := swarm.NewTool("calendar", "Looks a day up", func(_ context.Context, in struct {
		Day string `json:"day"`
	}) (string, error) {
		return in.Day + " is free", nil
	})
	forecaster := &swarm.Agent{Name: "forecaster", Description: "Weather forecasts", Instructions: "You forecast weather.", Tools: []swarm.Tool{calendar}}
	def := swarm.Define[string, Activity]("planner", "Plans activities", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Plan for: {{.Input}}", Tools: []swarm.Tool{calendar}, Handoffs: []swarm.Handoff{swarm.ToAgent(forecaster)}}
	})
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	res, run, err := def.Run(ctx, rt, "something outdoors")
	if err != nil || res.State() != swarm.StateCompleted {
		t.Fatalf("run: %#v, %v", res, err)
	}
	if n := checkRequests(t, rt, rec, run.ID()); n != 5 {
		t.Errorf("%d model calls checked, want 5", n)
	}
	got, err := rt.Request(ctx, run.ID(), "t1/h/call_planner_0_0/t2/model")
	if err != nil {
		t.Fatal(err)
	}
	if got.Agent != "forecaster" || got.System == "" || len(got.Tools) != 1 || got.Tools[0].Name != "calendar" {
		t.Errorf("nested request %+v", got)
	}

	if _, err := rt.Request(ctx, "run_nope", "t1/model"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
	if _, err := rt.Request(ctx, run.ID(), "t9/model"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := rt.Request(ctx, run.ID(), "t1/done"); !errors.Is(err, swarm.ErrInvalidInput) {
		t.Errorf("not a model call: %v", err)
	}
}

// TestRequestAfterCompaction: the inspector gives the compacted history a
// long run's calls were sent, summaries included.
func TestRequestAfterCompaction(t *testing.T) {
	const rounds = 40
	rec := &recorder{m: scripted.New(longScript(rounds))}
	rt, err := swarm.New(swarm.Config{Model: rec, RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	def := longSwarm(&compact.Config{Window: 2000, Trigger: 0.7, Keep: 3}, rounds)
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	res, run, err := def.Run(ctxT(t), rt, "echo a lot")
	if err != nil || res.State() != swarm.StateCompleted {
		t.Fatalf("run: %#v, %v", res, err)
	}
	if len(compactions(t, rt, run.ID())) == 0 {
		t.Fatal("no compaction: the test would show nothing")
	}
	if n := checkRequests(t, rt, rec, run.ID()); n != rounds+1 {
		t.Errorf("%d model calls checked, want %d", n, rounds+1)
	}
}

// TestRequestOfAConversation: a conversation's calls, with compaction,
// under both history policies, are rebuilt as sent.
func TestRequestOfAConversation(t *testing.T) {
	const messages = 30
	for _, policy := range []conversation.HistoryPolicy{conversation.HistoryOwnTools, conversation.HistoryText} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			rec := &recorder{m: scripted.New(chatScript(messages, 10))}
			rt, err := swarm.New(swarm.Config{Model: rec, RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			conv := chatConv(&compact.Config{Window: 1500, Trigger: 0.7, Keep: 1}, policy)
			if err := rt.Register(conv); err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t)
			sess, err := conv.Start(ctx, rt)
			if err != nil {
				t.Fatal(err)
			}
			for i := range messages {
				if _, err := sess.Say(ctx, fmt.Sprintf("message %d", i)); err != nil {
					t.Fatal(err)
				}
			}
			if policy == conversation.HistoryOwnTools && len(compactions(t, rt, sess.ID())) == 0 {
				t.Fatal("no compaction: the test would show less")
			}
			if n := checkRequests(t, rt, rec, sess.ID()); n < messages {
				t.Errorf("%d model calls checked, want at least %d", n, messages)
			}
		})
	}
}

// TestRequestReplaysQuietly: rebuilding the requests of a run with a
// guarded tool, a delegation and a child swarm runs nothing and emits no
// span: the replay is not a drive of the run.
func TestRequestReplaysQuietly(t *testing.T) {
	ctx := ctxT(t)
	exp := tracetest.NewInMemoryExporter()
	trip, script := traced()
	rt := tracingRuntime(t, exp, memory.New(), script)
	if err := rt.Register(trip); err != nil {
		t.Fatal(err)
	}
	res, run, err := trip.Run(ctx, rt, "a trip")
	if err != nil || res.State() != swarm.StateCompleted {
		t.Fatalf("run: %#v, %v", res, err)
	}
	rt.Close() // every drive has ended its spans
	exp.Reset()
	var keys []string
	for _, r := range journal(t, rt, run.ID()) {
		if r.Type == string(swarm.EventModelResponse) {
			keys = append(keys, r.Key)
			if _, err := rt.Request(ctx, run.ID(), r.Key); err != nil {
				t.Errorf("Request(%s): %v", r.Key, err)
			}
		}
	}
	if !slices.Contains(keys, "t2/h/c2/t1/model") {
		t.Errorf("model responses %v: the delegation's is missing", keys)
	}
	for _, s := range exp.GetSpans() {
		t.Errorf("the replay emitted span %s", s.Name)
	}
}

// TestRequestOfATeam: a team lead's and a teammate's calls, whose
// requests carry mail read from their mailboxes, are rebuilt as sent.
func TestRequestOfATeam(t *testing.T) {
	ctx := ctxT(t)
	rec := &recorder{m: scripted.New(scripted.Script{
		"alice": {
			scripted.Tools(scripted.CallTool("send_message", map[string]string{"to": "lead", "content": "the parser is done"})),
			scripted.Text("Told the lead."),
		},
		"lead": {scripted.Text("Noted alice's mails.")},
	})}
	rt, err := swarm.New(swarm.Config{Model: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tr, err := team.DefineTeam("crew", "A lead and alice", team.TeamSpec{
		Lead:    &swarm.Agent{Name: "lead", Instructions: "You lead a team."},
		Members: []team.Teammate{{Name: "alice", Role: "coder"}},
	}).Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	// settled waits until both members are idle and alice has read her
	// mail.
	settled := func() {
		swarmtest.Until(t, ctx, "the team settles", func() error {
			ms, err := tr.Roster(ctx)
			if err != nil {
				return err
			}
			for _, m := range ms {
				if len(ms) != 2 || m.State != team.MemberIdle || !m.Lead && m.Unread > 0 {
					return swarmtest.Pending("%+v", ms)
				}
			}
			return nil
		})
	}
	settled()
	if _, err := tr.Send(ctx, "alice", "Tell the lead when the parser is done."); err != nil {
		t.Fatal(err)
	}
	settled()
	if reply, err := tr.Say(ctx, "Anything from alice?"); err != nil || reply != "Noted alice's mails." {
		t.Fatalf("Say = %q, %v", reply, err)
	}
	runs, err := rt.List(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range runs {
		n += checkRequests(t, rt, rec, r.ID)
	}
	if n != 3 {
		t.Errorf("%d model calls checked in %d runs, want 3", n, len(runs))
	}
}

// TestRequestOfARetriedResponse: a response an output guardrail rejected
// and its retry, which carries the guardrail's feedback, and the calls
// after a guarded delegation are rebuilt as sent.
func TestRequestOfARetriedResponse(t *testing.T) {
	rec := &recorder{m: scripted.New(guardScript(true))}
	rt, err := swarm.New(swarm.Config{Model: rec, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	reject := &once{v: guardrail.Verdict{Action: guardrail.Reject, Message: "not that"}, match: func(c guardrail.Check) bool { return c.Agent == "g" }}
	var echoes atomic.Int64
	def := guardSwarm(&echoes, reject.guardrail(guardrail.Output, guardrail.Handoff))
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	res, run, err := def.Run(ctxT(t), rt, "x")
	if err != nil || res.State() != swarm.StateCompleted {
		t.Fatalf("run: %#v, %v", res, err)
	}
	checks := reject.checks.Load()
	var keys []string
	for _, r := range journal(t, rt, run.ID()) {
		if r.Type == string(swarm.EventModelResponse) {
			keys = append(keys, r.Key)
		}
	}
	if !slices.Contains(keys, "t1/model/retry1") {
		t.Fatalf("model responses %v: no retry", keys)
	}
	if n := checkRequests(t, rt, rec, run.ID()); n != len(keys) {
		t.Errorf("%d model calls checked, want %d", n, len(keys))
	}
	if n := reject.checks.Load(); n != checks || echoes.Load() != 1 {
		t.Errorf("the replays checked %d more times and ran echo %d times", n-checks, echoes.Load())
	}
}

// TestRequestDiffersAfterTheDefinitionChanged: a request rebuilt after the
// swarm's definition changed is not what was sent, and says so.
func TestRequestDiffersAfterTheDefinitionChanged(t *testing.T) {
	ctx := ctxT(t)
	st := memory.New()
	define := func(instructions string) *swarm.Swarm[string, string] {
		return swarm.Define[string, string]("shop", "", func(string) swarm.Spec { return swarm.Spec{Instructions: instructions} })
	}
	rt, _ := newRuntime(t, scripted.Script{"shop": {scripted.Text("sold")}}, st)
	def := define("Sell it.")
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	_, run, err := def.Run(ctx, rt, "a lamp")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rt.Request(ctx, run.ID(), "t1/model"); err != nil || got.Check != inspect.Verified {
		t.Fatalf("Request: %+v, %v", got, err)
	}
	rt.Close()
	later, _ := newRuntime(t, scripted.Script{}, st)
	if err := later.Register(define("Give it away.")); err != nil {
		t.Fatal(err)
	}
	got, err := later.Request(ctx, run.ID(), "t1/model")
	if err != nil || got.Check != inspect.Differs || got.System != "Give it away." {
		t.Errorf("Request after the change: %+v, %v", got, err)
	}
}
