package swarm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

// guardScript: the orchestrator calls echo, then hands off to helper,
// then answers. A rejected first response is followed by a second
// attempt that calls echo again.
func guardScript(extraFirst bool) scripted.Script {
	g := []scripted.Step{
		scripted.Tools(scripted.CallTool("echo", map[string]any{"x": "a"})),
		scripted.Tools(scripted.CallTool("handoff_to_helper", map[string]any{"request": "help me"})),
		scripted.Text("done"),
	}
	if extraFirst {
		g = append([]scripted.Step{scripted.Tools(scripted.CallTool("echo", map[string]any{"x": "first"}))}, g...)
	}
	return scripted.Script{"g": g, "helper": {scripted.Text("helped")}}
}

// once is a guardrail that returns v on its first check matching want and
// Allow otherwise, and counts its checks.
type once struct {
	v      guardrail.Verdict
	match  func(c guardrail.Check) bool
	fired  atomic.Bool
	checks atomic.Int64
}

func (o *once) guardrail(points ...guardrail.Point) guardrail.Guardrail {
	return guardrail.Guardrail{Name: "block", Points: points, Check: func(_ context.Context, c guardrail.Check) (guardrail.Verdict, error) {
		o.checks.Add(1)
		if (o.match == nil || o.match(c)) && o.fired.CompareAndSwap(false, true) {
			return o.v, nil
		}
		return guardrail.Verdict{Action: guardrail.Allow}, nil
	}}
}

func guardSwarm(echoRuns *atomic.Int64, gs ...guardrail.Guardrail) *swarm.Swarm[string, string] {
	echo := swarm.NewTool("echo", "echoes", func(_ context.Context, in struct {
		X string `json:"x"`
	}) (string, error) {
		echoRuns.Add(1)
		return "echo " + in.X, nil
	})
	helper := &swarm.Agent{Name: "helper", Description: "helps", Instructions: "help"}
	return swarm.Define[string, string]("g", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{echo}, Handoffs: []swarm.Handoff{swarm.ToAgent(helper)}, Guardrails: gs}
	})
}

func eventOf(evs []swarm.Event, typ swarm.EventType, f func(swarm.Event) bool) (swarm.Event, bool) {
	for _, ev := range evs {
		if ev.Type == typ && (f == nil || f(ev)) {
			return ev, true
		}
	}
	return swarm.Event{}, false
}

// TestGuardrailVerdictsAtEachPoint drives one scripted run per point and
// verdict and checks what the verdict did.
func TestGuardrailVerdictsAtEachPoint(t *testing.T) {
	points := []guardrail.Point{guardrail.Input, guardrail.Output, guardrail.ToolCall, guardrail.ToolResult, guardrail.Handoff, guardrail.HandoffResult}
	actions := []guardrail.Action{guardrail.Allow, guardrail.Reject, guardrail.Tripwire, guardrail.Pause}
	// What each point's first check concerns.
	match := map[guardrail.Point]func(c guardrail.Check) bool{
		guardrail.Output: func(c guardrail.Check) bool { return c.Agent == "g" },
	}
	for _, pt := range points {
		for _, act := range actions {
			t.Run(string(pt)+"/"+string(act), func(t *testing.T) {
				ctx := ctxT(t)
				var echoRuns atomic.Int64
				o := &once{v: guardrail.Verdict{Action: act, Message: "bad"}, match: match[pt]}
				def := guardSwarm(&echoRuns, o.guardrail(pt))
				rec := &recording{Model: scripted.New(guardScript(pt == guardrail.Output && act == guardrail.Reject))}
				rt := recordingRuntime(t, rec)
				if err := rt.Register(def); err != nil {
					t.Fatal(err)
				}
				run, err := def.Start(ctx, rt, "hi")
				if err != nil {
					t.Fatal(err)
				}
				st, err := rt.Wait(ctx, run.ID())
				if err != nil {
					t.Fatal(err)
				}
				if o.checks.Load() == 0 {
					t.Fatal("the guardrail never checked")
				}
				evs := swarmtest.Events(t, rt, run.ID())
				verdict, ok := eventOf(evs, swarm.EventGuardrail, func(e swarm.Event) bool { return e.Verdict == string(act) })
				if !ok {
					t.Fatalf("no %s verdict journaled: %+v", act, evs)
				}
				if verdict.Guardrail != "block" || verdict.Kind != string(pt) {
					t.Errorf("verdict event %+v", verdict)
				}
				switch {
				case act == guardrail.Allow:
					assertDone(t, st, &echoRuns, 1)
				case act == guardrail.Tripwire || (act == guardrail.Reject && pt == guardrail.Input):
					if st.State != swarm.StateFailed || st.Reason != "guardrail block: bad" {
						t.Fatalf("state %s reason %q", st.State, st.Reason)
					}
				case act == guardrail.Pause:
					if st.State != swarm.StatePaused || st.Reason != "guardrail block: bad" {
						t.Fatalf("state %s reason %q", st.State, st.Reason)
					}
					if err := rt.Resume(ctx, run.ID(), "approved"); err != nil {
						t.Fatal(err)
					}
					st, err = rt.Wait(ctx, run.ID())
					if err != nil {
						t.Fatal(err)
					}
					assertDone(t, st, &echoRuns, 1)
				default: // reject
					checkReject(t, pt, st, evs, rec, &echoRuns)
				}
			})
		}
	}
}

func assertDone(t *testing.T, st swarm.Status, echoRuns *atomic.Int64, echoes int64) {
	t.Helper()
	if st.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", st.State, st.Reason)
	}
	if n := echoRuns.Load(); n != echoes {
		t.Errorf("echo ran %d times, want %d", n, echoes)
	}
}

func checkReject(t *testing.T, pt guardrail.Point, st swarm.Status, evs []swarm.Event, m *recording, echoRuns *atomic.Int64) {
	t.Helper()
	switch pt {
	case guardrail.Output:
		// The rejected response's call never ran; the model was asked
		// again with the rejection.
		assertDone(t, st, echoRuns, 1)
		res, _ := eventOf(evs, swarm.EventToolResult, nil)
		if res.Output != "echo a" {
			t.Errorf("echo result %q, want the second attempt's", res.Output)
		}
		reqs := m.Requests("g")
		if len(reqs) < 2 || !strings.Contains(lastUser(reqs[1]), "rejected by guardrail block: bad") {
			t.Errorf("second request does not carry the rejection: %+v", reqs)
		}
	case guardrail.ToolCall:
		assertDone(t, st, echoRuns, 0)
		res, _ := eventOf(evs, swarm.EventToolResult, nil)
		if !res.IsError || !strings.Contains(res.Output, "guardrail block rejected this call: bad") {
			t.Errorf("result %+v", res)
		}
	case guardrail.ToolResult:
		assertDone(t, st, echoRuns, 1)
		res, _ := eventOf(evs, swarm.EventToolResult, nil)
		if !res.IsError || !strings.Contains(res.Output, "guardrail block rejected the result: bad") {
			t.Errorf("result %+v", res)
		}
	case guardrail.Handoff:
		assertDone(t, st, echoRuns, 1)
		if _, ok := eventOf(evs, swarm.EventModelResponse, func(e swarm.Event) bool { return e.Agent == "helper" }); ok {
			t.Error("helper ran after its handoff was rejected")
		}
		res, _ := eventOf(evs, swarm.EventToolResult, func(e swarm.Event) bool { return e.Tool == "handoff_to_helper" })
		if !res.IsError || !strings.Contains(res.Output, "rejected this handoff: bad") {
			t.Errorf("result %+v", res)
		}
	case guardrail.HandoffResult:
		assertDone(t, st, echoRuns, 1)
		res, _ := eventOf(evs, swarm.EventHandoffReturned, nil)
		if !res.IsError || !strings.Contains(res.Output, "rejected the result: bad") {
			t.Errorf("return %+v", res)
		}
	default:
		t.Fatalf("no reject check for %s", pt)
	}
}

// recording is a model that keeps a copy of each request, by agent.
type recording struct {
	model.Model
	mu   sync.Mutex
	reqs map[string][]model.Request
}

func (m *recording) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	if m.reqs == nil {
		m.reqs = map[string][]model.Request{}
	}
	cp := *req
	cp.Messages = append([]model.Message(nil), req.Messages...)
	m.reqs[req.Agent] = append(m.reqs[req.Agent], cp)
	m.mu.Unlock()
	return m.Model.Generate(ctx, req)
}

// Requests returns the requests made for agent.
func (m *recording) Requests(agent string) []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[agent]
}

func recordingRuntime(t *testing.T, m model.Model) *swarm.Runtime {
	t.Helper()
	rt, err := swarm.New(swarm.Config{Model: m, RetryBackoff: time.Millisecond, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func lastUser(req model.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

// TestGuardrailRejectsAreBounded: an output guardrail that rejects every
// response fails the run after guardrail.MaxRetries retries.
func TestGuardrailRejectsAreBounded(t *testing.T) {
	ctx := ctxT(t)
	var steps []scripted.Step
	for range guardrail.MaxRetries + 2 {
		steps = append(steps, scripted.Text("no"))
	}
	m := &recording{Model: scripted.New(scripted.Script{"g": steps})}
	rt := recordingRuntime(t, m)
	never := guardrail.Guardrail{Name: "never", Points: []guardrail.Point{guardrail.Output}, Check: func(context.Context, guardrail.Check) (guardrail.Verdict, error) {
		return guardrail.Verdict{Action: guardrail.Reject, Message: "try harder"}, nil
	}}
	def := swarm.Define[string, string]("g", "", func(string) swarm.Spec { return swarm.Spec{Guardrails: []guardrail.Guardrail{never}} })
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	_, run, err := def.Run(ctx, rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := rt.Status(ctx, run.ID())
	if st.State != swarm.StateFailed || !strings.HasPrefix(st.Reason, "guardrail never: rejected 4 responses in a row") {
		t.Fatalf("state %s reason %q", st.State, st.Reason)
	}
	if n := len(m.Requests("g")); n != guardrail.MaxRetries+1 {
		t.Errorf("%d model calls, want %d", n, guardrail.MaxRetries+1)
	}
}

// TestGuardrailErrorTrips: a check that fails trips the run (fail closed),
// and a bad definition is refused at start.
func TestGuardrailErrorTrips(t *testing.T) {
	ctx := ctxT(t)
	rt, _ := newRuntime(t, scripted.Script{"g": {scripted.Text("hello")}}, nil)
	broken := guardrail.Guardrail{Name: "broken", Points: []guardrail.Point{guardrail.Output}, Check: func(context.Context, guardrail.Check) (guardrail.Verdict, error) {
		return guardrail.Verdict{}, errors.New("classifier down")
	}}
	def := swarm.Define[string, string]("g", "", func(string) swarm.Spec { return swarm.Spec{Guardrails: []guardrail.Guardrail{broken}} })
	bad := swarm.Define[string, string]("bad", "", func(string) swarm.Spec {
		return swarm.Spec{Guardrails: []guardrail.Guardrail{{Name: "nopoints", Check: broken.Check}}}
	})
	if err := rt.Register(def, bad); err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Start(ctx, rt, "x"); !errors.Is(err, swarm.ErrInvalid) {
		t.Fatalf("start with a guardrail checking nothing: %v", err)
	}
	_, run, err := def.Run(ctx, rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := rt.Status(ctx, run.ID())
	if st.State != swarm.StateFailed || st.Reason != "guardrail broken: check failed: classifier down" {
		t.Fatalf("state %s reason %q", st.State, st.Reason)
	}
}

// TestRecordedVerdictNotRerunAfterCrash kills a run after each of its
// appends and recovers it: a check whose verdict was journaled before the
// crash is never run again.
func TestRecordedVerdictNotRerunAfterCrash(t *testing.T) {
	var mu sync.Mutex
	checks := map[string]int{}
	g := guardrail.Guardrail{Name: "audit", Points: []guardrail.Point{guardrail.Input, guardrail.ToolCall, guardrail.ToolResult, guardrail.Handoff, guardrail.HandoffResult},
		Check: func(_ context.Context, c guardrail.Check) (guardrail.Verdict, error) {
			mu.Lock()
			checks[string(c.Point)+"/"+c.CallID]++
			mu.Unlock()
			return guardrail.Verdict{Action: guardrail.Allow}, nil
		}}
	var echoRuns atomic.Int64
	def := guardSwarm(&echoRuns, g)
	script := guardScript(false)
	for k := int64(1); k < 12; k++ {
		if !t.Run(fmt.Sprint("after_append_", k), func(t *testing.T) {
			mu.Lock()
			clear(checks)
			mu.Unlock()
			b, id, st, atDeath := crashAndRecover(t, def, script, []byte(`"hi"`), k, func() {})
			if st.State != swarm.StateCompleted {
				t.Fatalf("state %s (%s)", st.State, st.Reason)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, ev := range swarmtest.Events(t, b, id) {
				if ev.Type != swarm.EventGuardrail {
					continue
				}
				n := checks[ev.Kind+"/"+ev.CallID]
				if atDeath[id+"/"+ev.Key] && n > 1 {
					t.Errorf("verdict %s was journaled before the crash but checked %d times", ev.Key, n)
				}
				if n == 0 {
					t.Errorf("verdict %s journaled but never checked", ev.Key)
				}
			}
		}) {
			break
		}
	}
}

// TestHeldBackStreaming: with HoldStream, a subscriber never sees the text
// of a response the output guardrail trips on; without it, it does (the
// complaint the option answers).
func TestHeldBackStreaming(t *testing.T) {
	for _, hold := range []bool{true, false} {
		t.Run(fmt.Sprint("hold=", hold), func(t *testing.T) {
			ctx := ctxT(t)
			gate := make(chan struct{})
			wait := swarm.NewTool("wait", "waits", func(ctx context.Context, _ struct{}) (string, error) {
				select {
				case <-gate:
				case <-ctx.Done():
				}
				return "ok", nil
			})
			rt, _ := newRuntime(t, scripted.Script{"s": {
				scripted.Tools(scripted.CallTool("wait", map[string]any{})),
				scripted.Text("the launch code is 1234"),
			}}, nil)
			trip := guardrail.Guardrail{Name: "secrets", Points: []guardrail.Point{guardrail.Output}, Check: func(_ context.Context, c guardrail.Check) (guardrail.Verdict, error) {
				if strings.Contains(c.Text, "code") {
					return guardrail.Verdict{Action: guardrail.Tripwire, Message: "leaks a secret"}, nil
				}
				return guardrail.Verdict{Action: guardrail.Allow}, nil
			}}
			def := swarm.Define[string, string]("s", "", func(string) swarm.Spec {
				return swarm.Spec{Tools: []swarm.Tool{wait}, Guardrails: []guardrail.Guardrail{trip}, HoldStream: hold}
			})
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}
			run, err := def.Start(ctx, rt, "x")
			if err != nil {
				t.Fatal(err)
			}
			var streamed strings.Builder
			opened := false
			for ev, err := range run.Events(ctx, 0, swarm.WithDeltas()) {
				if err != nil {
					t.Fatal(err)
				}
				if !opened {
					opened = true
					close(gate)
				}
				if ev.Type == swarm.EventDelta {
					streamed.WriteString(ev.Text)
				}
			}
			st, _ := rt.Status(ctx, run.ID())
			if st.State != swarm.StateFailed || st.Reason != "guardrail secrets: leaks a secret" {
				t.Fatalf("state %s reason %q", st.State, st.Reason)
			}
			leaked := strings.Contains(streamed.String(), "1234")
			if hold && leaked {
				t.Errorf("held-back stream leaked %q", streamed.String())
			}
			if !hold && !leaked {
				t.Errorf("without holding, the stream should show the text; got %q", streamed.String())
			}
		})
	}
}

// screen is an input guardrail that rejects a message mentioning a
// secret, pauses on one asking for a check and trips on a bomb; it counts
// its checks by text.
type screen struct {
	mu     sync.Mutex
	checks map[string]int
}

func (s *screen) guardrail() guardrail.Guardrail {
	return guardrail.Guardrail{Name: "screen", Points: []guardrail.Point{guardrail.Input}, Check: func(_ context.Context, c guardrail.Check) (guardrail.Verdict, error) {
		s.mu.Lock()
		s.checks[c.Text]++
		s.mu.Unlock()
		switch {
		case strings.Contains(c.Text, "secret"):
			return guardrail.Verdict{Action: guardrail.Reject, Message: "no secrets"}, nil
		case strings.Contains(c.Text, "check"):
			return guardrail.Verdict{Action: guardrail.Pause, Message: "needs a human"}, nil
		case strings.Contains(c.Text, "bomb"):
			return guardrail.Verdict{Action: guardrail.Tripwire, Message: "dangerous"}, nil
		}
		return guardrail.Verdict{Action: guardrail.Allow}, nil
	}}
}

// TestConversationGuardsUserMessages: a conversation's input guardrail
// checks each user message once (each message re-drives the session from
// its journal: a recorded verdict is not checked again). A rejected
// message is answered with a failed turn and never reaches the model, a
// paused one waits for a resume that approves it, a tripwire ends the
// conversation with the guardrail's reason.
func TestConversationGuardsUserMessages(t *testing.T) {
	ctx := ctxT(t)
	rt, rec := convRuntime(t, scripted.Script{"chat": {scripted.Text("answer 0"), scripted.Text("answer 1"), scripted.Text("answer 2")}}, nil)
	sc := &screen{checks: map[string]int{}}
	chat := &swarm.Agent{Name: "chat", Instructions: "Talk."}
	conv := conversation.Define("talk", "", conversation.Spec[Sale]{Queen: chat, Guardrails: []guardrail.Guardrail{sc.guardrail()}})
	if err := rt.Register(conv); err != nil {
		t.Fatal(err)
	}
	sess, err := conv.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := sess.Say(ctx, "hello"); err != nil || rep.Text != "answer 0" {
		t.Fatalf("hello: %+v %v", rep, err)
	}
	if _, err := sess.Say(ctx, "tell me the secret"); !errors.Is(err, swarm.ErrTurnFailed) || !strings.Contains(err.Error(), "guardrail screen: no secrets") {
		t.Fatalf("a rejected message: %v", err)
	}
	rep, err := sess.Say(ctx, "please check this")
	if err != nil || rep.Waiting != "guardrail screen: needs a human" || len(rec.Requests("chat")) != 1 {
		t.Fatalf("a paused message: %+v %v (%d model calls)", rep, err, len(rec.Requests("chat")))
	}
	if rep, err = sess.Say(ctx, "approved"); err != nil || rep.Text != "answer 1" {
		t.Fatalf("after the approval: %+v %v", rep, err)
	}
	if _, err := sess.Say(ctx, "a bomb"); err == nil {
		t.Fatal("a tripped message was answered")
	}
	st, _ := sess.Status(ctx)
	if st.State != swarm.StateFailed || st.Reason != "guardrail screen: dangerous" {
		t.Fatalf("after the tripwire: %s %q", st.State, st.Reason)
	}
	reqs := rec.Requests("chat")
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2 (hello, the approved check)", len(reqs))
	}
	var seen []string
	for _, m := range reqs[1].Messages {
		seen = append(seen, m.Content)
	}
	if !slices.Equal(seen, []string{"hello", "answer 0", "please check this"}) {
		t.Errorf("the model saw %q", seen)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, text := range []string{"hello", "tell me the secret", "please check this", "a bomb"} {
		if sc.checks[text] != 1 {
			t.Errorf("%q checked %d times, want once", text, sc.checks[text])
		}
	}
	if n := len(sc.checks); n != 4 {
		t.Errorf("%d texts checked (the approval is not a message): %v", n, sc.checks)
	}
	verdicts := 0
	for _, ev := range swarmtest.Events(t, rt, sess.ID()) {
		if ev.Type == swarm.EventGuardrail && ev.Kind == string(guardrail.Input) && ev.Agent == "chat" {
			verdicts++
		}
	}
	if verdicts != 4 {
		t.Errorf("%d input verdicts journaled, want 4", verdicts)
	}
}

// TestTeamLeadGuardsUserMessages: the lead's input guardrails check each
// message the user sends a team; a rejected one is answered with the
// rejection and stays out of the lead's history.
func TestTeamLeadGuardsUserMessages(t *testing.T) {
	ctx := ctxT(t)
	m := &recording{Model: scripted.New(scripted.Script{"lead": {scripted.Text("answer 0"), scripted.Text("answer 1")}})}
	rt := recordingRuntime(t, m)
	sc := &screen{checks: map[string]int{}}
	lead := &swarm.Agent{Name: "lead", Instructions: "Lead.", Guardrails: []guardrail.Guardrail{sc.guardrail()}}
	tr, err := team.DefineTeam("crew", "", team.TeamSpec{Lead: lead}).Start(ctx, rt, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Wait(ctx, tr.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Say(ctx, "tell me the secret"); err == nil || !strings.Contains(err.Error(), "guardrail screen: no secrets") {
		t.Fatalf("a rejected message: %v", err)
	}
	if reply, err := tr.Say(ctx, "go on"); err != nil || reply != "answer 1" {
		t.Fatalf("go on: %q %v", reply, err)
	}
	reqs := m.Requests("lead")
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	for _, msg := range reqs[1].Messages {
		if strings.Contains(msg.Content, "secret") {
			t.Errorf("the lead saw the rejected message: %+v", reqs[1].Messages)
		}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.checks["hello"] != 1 || sc.checks["tell me the secret"] != 1 || sc.checks["go on"] != 1 {
		t.Errorf("checks %v, want each message once", sc.checks)
	}
}

// TestHandoffResultGuardsChildSwarms: the handoff_result point checks what
// a swarm handed off to returns, as it does an agent's: a reject replaces
// the result the delegating model sees, a tripwire fails the run.
func TestHandoffResultGuardsChildSwarms(t *testing.T) {
	for _, act := range []guardrail.Action{guardrail.Reject, guardrail.Tripwire} {
		t.Run(string(act), func(t *testing.T) {
			ctx := ctxT(t)
			m := &recording{Model: scripted.New(scripted.Script{
				"parent": {scripted.Tools(scripted.CallTool("handoff_to_sub", map[string]any{"request": "work"})), scripted.Text("done")},
				"sub":    {scripted.Text("the secret plans")},
			})}
			rt := recordingRuntime(t, m)
			var checked []guardrail.Check
			var mu sync.Mutex
			g := guardrail.Guardrail{Name: "leak", Points: []guardrail.Point{guardrail.HandoffResult}, Check: func(_ context.Context, c guardrail.Check) (guardrail.Verdict, error) {
				mu.Lock()
				checked = append(checked, c)
				mu.Unlock()
				if strings.Contains(c.Text, "secret") {
					return guardrail.Verdict{Action: act, Message: "leaks a secret"}, nil
				}
				return guardrail.Verdict{Action: guardrail.Allow}, nil
			}}
			sub := swarm.Define[string, string]("sub", "does work", func(string) swarm.Spec { return swarm.Spec{} })
			parent := swarm.Define[string, string]("parent", "", func(string) swarm.Spec {
				return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToSwarm(sub)}, Guardrails: []guardrail.Guardrail{g}}
			})
			if err := rt.Register(sub, parent); err != nil {
				t.Fatal(err)
			}
			run, err := parent.Start(ctx, rt, "go")
			if err != nil {
				t.Fatal(err)
			}
			st, err := rt.Wait(ctx, run.ID())
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			if len(checked) != 1 || checked[0].Target != "sub" || checked[0].Text != "the secret plans" {
				t.Errorf("checks %+v", checked)
			}
			mu.Unlock()
			if act == guardrail.Tripwire {
				if st.State != swarm.StateFailed || st.Reason != "guardrail leak: leaks a secret" {
					t.Fatalf("state %s reason %q", st.State, st.Reason)
				}
				return
			}
			reqs := m.Requests("parent")
			if st.State != swarm.StateCompleted || len(reqs) != 2 {
				t.Fatalf("state %s (%s), %d requests", st.State, st.Reason, len(reqs))
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-1]
			if last.Role != model.RoleTool || !last.IsError || last.Content != "error: guardrail leak rejected the result: leaks a secret" {
				t.Errorf("the parent saw %+v", last)
			}
		})
	}
}

// TestTeamGuardrailsCheckTeammates: a team's guardrails check every
// member's steps, and a teammate's own guardrails (after the team's) its
// steps only: a call the teammate's guardrail rejects never runs, and its
// model gets the rejection and another turn.
func TestTeamGuardrailsCheckTeammates(t *testing.T) {
	ctx := ctxT(t)
	m := &recording{Model: scripted.New(scripted.Script{
		"lead": {scripted.Tools(scripted.CallTool("danger", map[string]any{})), scripted.Text("lead done")},
		"bob":  {scripted.Tools(scripted.CallTool("danger", map[string]any{})), scripted.Text("bob done")},
	})}
	rt := recordingRuntime(t, m)
	var ran atomic.Int64
	danger := swarm.NewTool("danger", "does harm", func(context.Context, struct{}) (string, error) {
		ran.Add(1)
		return "harm done", nil
	})
	var mu sync.Mutex
	seen := map[string][]string{} // guardrail -> agents whose calls it checked
	guard := func(name string) guardrail.Guardrail {
		return guardrail.Guardrail{Name: name, Points: []guardrail.Point{guardrail.ToolCall}, Check: func(_ context.Context, c guardrail.Check) (guardrail.Verdict, error) {
			mu.Lock()
			seen[name] = append(seen[name], c.Agent)
			mu.Unlock()
			if name == "bob" {
				return guardrail.Verdict{Action: guardrail.Reject, Message: "no harm"}, nil
			}
			return guardrail.Verdict{Action: guardrail.Allow}, nil
		}}
	}
	crew := team.DefineTeam("crew", "", team.TeamSpec{
		Lead:       &swarm.Agent{Name: "lead", Instructions: "Lead.", Tools: []swarm.Tool{danger}},
		Members:    []team.Teammate{{Name: "bob", Role: "helper", Prompt: "work", Tools: []swarm.Tool{danger}, Guardrails: []guardrail.Guardrail{guard("bob")}}},
		Guardrails: []guardrail.Guardrail{guard("team")},
	})
	tr, err := crew.Start(ctx, rt, "start")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Wait(ctx, tr.ID()); err != nil {
		t.Fatal(err)
	}
	for {
		s, err := rt.Status(ctx, tr.ID()+"~bob")
		if err == nil && s.State == swarm.StatePaused && s.Reason == swarm.AwaitingMail {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("bob did not finish its prompt")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("the tool ran %d times; want once, for the lead", n)
	}
	if reqs := m.Requests("bob"); len(reqs) != 2 || !strings.Contains(fmt.Sprint(reqs[1].Messages), "no harm") {
		t.Errorf("bob: %d requests; the second should carry the rejection: %+v", len(reqs), reqs)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(seen["team"])
	if fmt.Sprint(seen["team"]) != "[bob lead]" || fmt.Sprint(seen["bob"]) != "[bob]" {
		t.Errorf("checked calls: %v; want the team's guardrail on lead and bob, bob's on bob only", seen)
	}
}

// refusals is a store that counts the appends it refuses.
type refusals struct {
	store.Store
	n atomic.Int64
}

func (s *refusals) Append(ctx context.Context, l store.Lease, recs []store.Record, u store.Update) (int64, error) {
	seq, err := s.Store.Append(ctx, l, recs, u)
	if err != nil {
		s.n.Add(1)
	}
	return seq, err
}

// resultTrip is a guardrail at a call's point and its result's that allows
// the call and trips on the result, counting its checks by point.
func resultTrip(pts [2]guardrail.Point, checks *sync.Map) guardrail.Guardrail {
	return guardrail.Guardrail{Name: "screen", Points: pts[:], Check: func(_ context.Context, c guardrail.Check) (guardrail.Verdict, error) {
		n, _ := checks.LoadOrStore(c.Point, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		if c.Point == pts[1] {
			return guardrail.Verdict{Action: guardrail.Tripwire, Message: "leaks"}, nil
		}
		return guardrail.Verdict{Action: guardrail.Allow}, nil
	}}
}

// TestGuardrailAtCallAndResult: one guardrail that checks a call and its
// result journals both verdicts, each under its own key, so a tripwire on
// the result fails the run at once: the tool (or the agent handed off to)
// runs once and no append is refused. A run recovered after any of its
// appends ends the same way.
func TestGuardrailAtCallAndResult(t *testing.T) {
	for _, pts := range [][2]guardrail.Point{{guardrail.ToolCall, guardrail.ToolResult}, {guardrail.Handoff, guardrail.HandoffResult}} {
		t.Run(string(pts[0]), func(t *testing.T) {
			ctx := ctxT(t)
			var checks sync.Map
			var echoRuns atomic.Int64
			def := guardSwarm(&echoRuns, resultTrip(pts, &checks))
			script := guardScript(false)
			st := &refusals{Store: memory.New()}
			m := &recording{Model: scripted.New(script)}
			rt, err := swarm.New(swarm.Config{Store: st, Model: m, RetryBackoff: time.Millisecond, PollInterval: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rt.Close() })
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}
			run, err := def.Start(ctx, rt, "hi")
			if err != nil {
				t.Fatal(err)
			}
			s, err := rt.Wait(ctx, run.ID())
			if err != nil {
				t.Fatalf("wait: %v", err)
			}
			if s.State != swarm.StateFailed || s.Reason != "guardrail screen: leaks" {
				t.Fatalf("state %s reason %q; want the result's tripwire", s.State, s.Reason)
			}
			if n := st.n.Load(); n != 0 {
				t.Errorf("the store refused %d appends", n)
			}
			evs := swarmtest.Events(t, rt, run.ID())
			runs := echoRuns.Load()
			if pts[0] == guardrail.Handoff {
				runs = int64(len(m.Requests("helper")))
			}
			if runs != 1 {
				t.Errorf("the guarded step ran %d times, want once", runs)
			}
			keys := map[string]string{}
			for _, ev := range evs {
				if ev.Type == swarm.EventGuardrail {
					if k, dup := keys[ev.Kind]; dup {
						t.Errorf("two %s verdicts (%s, %s)", ev.Kind, k, ev.Key)
					}
					keys[ev.Kind] = ev.Key
				}
			}
			if keys[string(pts[0])] == "" || keys[string(pts[1])] == "" || keys[string(pts[0])] == keys[string(pts[1])] {
				t.Errorf("verdict keys by point %v; want one per point, each its own", keys)
			}
			for _, pt := range pts {
				if n, _ := checks.Load(pt); n == nil || n.(*atomic.Int64).Load() != 1 {
					t.Errorf("%s checked %v times, want once", pt, n)
				}
			}

			for k := int64(1); k < int64(len(evs)); k++ {
				if !t.Run(fmt.Sprint("after_append_", k), func(t *testing.T) {
					_, _, s, _ := crashAndRecover(t, def, script, []byte(`"hi"`), k, func() {})
					if s.State != swarm.StateFailed || s.Reason != "guardrail screen: leaks" {
						t.Fatalf("recovered: state %s reason %q; want the result's tripwire", s.State, s.Reason)
					}
				}) {
					break
				}
			}
		})
	}
}

// TestGuardrailLegacyResultVerdictReplays: a journal written before a
// result's verdict had a key of its own holds a result-only guardrail's
// verdict under "<step>/guard/<name>". A process that dies right after
// journaling it is recovered by one that reuses that verdict instead of
// checking the result again.
func TestGuardrailLegacyResultVerdictReplays(t *testing.T) {
	ctx := ctxT(t)
	var echoRuns atomic.Int64
	o := &once{v: guardrail.Verdict{Action: guardrail.Reject, Message: "bad"}}
	def := guardSwarm(&echoRuns, o.guardrail(guardrail.ToolResult))
	script := guardScript(false)
	mem := memory.New()
	open := func(st store.Store, owner string) *swarm.Runtime {
		rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), Owner: owner, Lease: 60 * time.Millisecond,
			RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		return rt
	}
	// A journals a result's verdict as releases before keys of their own
	// did, and dies right after.
	legacy := &dieAfter{Killable: swarmtest.NewKillable(t, mem), match: func(r *store.Record) bool {
		k, ok := strings.CutSuffix(r.Key, "/result")
		if ok && strings.Contains(k, "/guard/") {
			r.Key = k
		}
		return ok
	}}
	a := open(legacy, "A")
	id, err := a.Start(ctx, def.ID(), []byte(`"hi"`))
	if err != nil {
		t.Fatal(err)
	}
	awaitDeath(t, ctx, legacy, "the result's verdict was never journaled")
	recs, err := mem.Read(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := recs[len(recs)-1]; !strings.HasPrefix(last.Key, "t1/tool/") || !strings.HasSuffix(last.Key, "/guard/block") {
		t.Fatalf("the journal ends with %s; want the verdict under its legacy key", last.Key)
	}
	time.Sleep(80 * time.Millisecond) // A's lease runs out
	b := open(mem, "B")
	if _, err := b.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := b.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", s.State, s.Reason)
	}
	if n := o.checks.Load(); n != 1 {
		t.Errorf("the result was checked %d times; want once, its journaled verdict reused", n)
	}
	res, _ := eventOf(swarmtest.Events(t, b, id), swarm.EventToolResult, nil)
	if !res.IsError || !strings.Contains(res.Output, "guardrail block rejected the result: bad") {
		t.Errorf("result %+v; want the journaled rejection", res)
	}
}
