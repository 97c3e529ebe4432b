package conversation_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/conversation/conversationtest"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// The shop conversation, its context, recorder and effects (shared with
// the root package's tests).
type (
	Sale    = conversationtest.Sale
	effects = conversationtest.Effects
)

var (
	shop        = conversationtest.Shop
	convRuntime = conversationtest.Runtime
)

func TestConversationHandoverPersistsAndContextRenders(t *testing.T) {
	ctx := ctxT(t)
	fx := conversationtest.NewEffects()
	rt, rec := convRuntime(t, scripted.Script{
		"receptionist": {scripted.Tools(
			scripted.CallTool("lookup_customer", map[string]any{"name": "Ada"}),
			scripted.CallTool("transfer_to_sales", map[string]any{"topic": "CRM"}),
		)},
		"sales": {
			scripted.Text("CRM costs $10 a seat."),
			scripted.Tools(scripted.CallTool("apply_discount", map[string]any{"percent": 20})),
			scripted.Text("Done: 20% off."),
		},
	}, nil)
	var steps []string
	conv := shop(fx, func(s *conversation.Spec[Sale]) {
		s.OnStep = func(ctx context.Context, st conversation.Step[Sale]) {
			steps = append(steps, fmt.Sprintf("%d.%d %s→%s %s", st.Message, st.Turn, st.Agent, st.HandoverTo, st.Context.Topic))
		}
	})
	sess, err := conv.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := sess.Status(ctx); s.State != swarm.StatePaused || s.Reason != swarm.AwaitingMessage || s.Agent != "receptionist" {
		t.Fatalf("new session: %+v", s)
	}
	rep, err := sess.Say(ctx, "Hi, I'm Ada and I'd like a CRM")
	if err != nil {
		t.Fatal(err)
	}
	want := conversation.Reply[Sale]{Message: 1, Text: "CRM costs $10 a seat.", Agent: "sales", Active: "sales", Context: Sale{Customer: "Ada", Topic: "CRM"}}
	if rep != want {
		t.Errorf("reply 1 = %+v, want %+v", rep, want)
	}
	// The second message goes to sales, which stayed active.
	rep, err = sess.Say(ctx, "Any discount?")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Agent != "sales" || rep.Context.Discount != 20 || rep.Message != 2 {
		t.Errorf("reply 2 = %+v", rep)
	}
	sales := rec.Requests("sales")
	if len(sales) != 3 {
		t.Fatalf("%d sales requests", len(sales))
	}
	if want := "Sell CRM to Ada (discount 0%)."; sales[0].System != want {
		t.Errorf("sales instructions %q, want %q", sales[0].System, want)
	}
	if want := "Sell CRM to Ada (discount 20%)."; sales[2].System != want {
		t.Errorf("sales instructions after the tool %q, want %q", sales[2].System, want)
	}
	if got, err := sess.Context(ctx); err != nil || got != (Sale{Customer: "Ada", Topic: "CRM", Discount: 20}) {
		t.Errorf("context %+v %v", got, err)
	}
	if want := []string{"1.1 receptionist→sales CRM", "1.2 sales→ CRM", "2.1 sales→ CRM", "2.2 sales→ CRM"}; !slices.Equal(steps, want) {
		t.Errorf("steps %q, want %q", steps, want)
	}
	tr, err := sess.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 4 || tr[1] != (conversation.Utterance{Message: 1, Agent: "sales", Text: "CRM costs $10 a seat."}) || tr[2].Agent != "" {
		t.Errorf("transcript %+v", tr)
	}
	// The handover's result names its target; the journal is well formed.
	var handover swarm.Event
	for _, ev := range swarmtest.Events(t, rt, sess.ID()) {
		if ev.Type == swarm.EventToolResult && ev.Tool == "transfer_to_sales" {
			handover = ev
		}
	}
	if handover.Target != "sales" || handover.IsError || !strings.Contains(string(handover.Shared), `"topic":"CRM"`) {
		t.Errorf("handover result %+v", handover)
	}
	swarmtest.AssertJournal(t, rt, sess.ID())
	swarmtest.AssertScriptConsumed(t, rec.Script, sess.ID())
	if fx.Count() != 2 {
		t.Errorf("tools ran %d times", fx.Count())
	}
}

func TestConversationOnlyFirstHandoverHonoured(t *testing.T) {
	ctx := ctxT(t)
	rt, rec := convRuntime(t, scripted.Script{
		"receptionist": {scripted.Tools(
			scripted.CallTool("transfer_to_support", nil),
			scripted.CallTool("transfer_to_sales", map[string]any{"topic": "CRM"}),
		)},
		"support": {scripted.Text("What is broken?")},
	}, nil)
	sess, err := shop(conversationtest.NewEffects(), nil).Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sess.Say(ctx, "help")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Agent != "support" || rep.Context.Topic != "" {
		t.Errorf("reply %+v", rep)
	}
	results := map[string]swarm.Event{}
	for _, ev := range swarmtest.Events(t, rt, sess.ID()) {
		if ev.Type == swarm.EventToolResult {
			results[ev.Tool] = ev
		}
	}
	if r := results["transfer_to_support"]; r.IsError || r.Target != "support" {
		t.Errorf("first handover %+v", r)
	}
	if r := results["transfer_to_sales"]; !r.IsError || !strings.Contains(r.Output, "only the first handover") || r.Target != "" {
		t.Errorf("second handover %+v", r)
	}
	swarmtest.AssertScriptConsumed(t, rec.Script, sess.ID())
}

func TestConversationUnreachableHandover(t *testing.T) {
	ctx := ctxT(t)
	rt, rec := convRuntime(t, scripted.Script{
		"receptionist": {scripted.Tools(scripted.CallTool("transfer_to_support", nil))},
		"support": {
			scripted.Tools(scripted.CallTool("transfer_to_sales", map[string]any{"topic": "x"}), scripted.CallTool("transfer_to_nobody", nil)),
			scripted.Text("I cannot transfer you; what is broken?"),
		},
	}, nil)
	sess, err := shop(conversationtest.NewEffects(), nil).Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sess.Say(ctx, "my printer")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Agent != "support" || rep.Active != "support" {
		t.Errorf("reply %+v", rep)
	}
	var outs []string
	for _, ev := range swarmtest.Events(t, rt, sess.ID()) {
		if ev.Type == swarm.EventToolResult && ev.Agent == "support" {
			if !ev.IsError {
				t.Errorf("%s succeeded: %s", ev.Tool, ev.Output)
			}
			outs = append(outs, ev.Output)
		}
	}
	slices.Sort(outs)
	if len(outs) != 2 || !strings.Contains(outs[0], "cannot transfer to sales") || !strings.Contains(outs[0], "may not transfer to any agent") ||
		!strings.Contains(outs[1], `unknown tool "transfer_to_nobody"`) {
		t.Errorf("results %q", outs)
	}
	// Support is offered no handover at all; the receptionist only its own.
	tools := func(q model.Request) (names []string) {
		for _, d := range q.Tools {
			names = append(names, d.Name)
		}
		return names
	}
	if got := tools(rec.Requests("support")[0]); len(got) != 0 {
		t.Errorf("support offered %q", got)
	}
	if got := tools(rec.Requests("receptionist")[0]); !slices.Equal(got, []string{"lookup_customer", "transfer_to_sales", "transfer_to_support"}) {
		t.Errorf("receptionist offered %q", got)
	}
}

func TestConversationReturnToQueen(t *testing.T) {
	ctx := ctxT(t)
	rt, rec := convRuntime(t, scripted.Script{
		"receptionist": {
			scripted.Tools(scripted.CallTool("transfer_to_sales", map[string]any{"topic": "CRM"})),
			scripted.Text("Anything else?"),
		},
		"sales": {scripted.Text("CRM is great.")},
	}, nil)
	conv := shop(conversationtest.NewEffects(), func(s *conversation.Spec[Sale]) { s.ReturnToQueen = true })
	sess, err := conv.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sess.Say(ctx, "CRM?")
	if err != nil || rep.Agent != "sales" || rep.Active != "receptionist" {
		t.Fatalf("reply 1 %+v %v", rep, err)
	}
	rep, err = sess.Say(ctx, "thanks")
	if err != nil || rep.Agent != "receptionist" {
		t.Fatalf("reply 2 %+v %v", rep, err)
	}
	swarmtest.AssertScriptConsumed(t, rec.Script, sess.ID())
}

// The default history policy hides other agents' tool calls and results
// but shows user and assistant text; HistoryFull shows everything.
func TestConversationHistoryPolicy(t *testing.T) {
	script := scripted.Script{
		"receptionist": {{
			Text: "Let me find you a seller.",
			ToolCalls: []scripted.ToolCall{
				scripted.CallTool("lookup_customer", map[string]any{"name": "Ada"}),
				scripted.CallTool("transfer_to_sales", map[string]any{"topic": "CRM"}),
			},
		}},
		"sales": {
			scripted.Tools(scripted.CallTool("apply_discount", map[string]any{"percent": 5})),
			scripted.Text("5% off CRM."),
			scripted.Text("Bye."),
		},
	}
	for _, tc := range []struct {
		policy      conversation.HistoryPolicy
		names       bool
		othersTools bool
		text        string
	}{
		{conversation.HistoryOwnTools, false, false, "Let me find you a seller."},
		{conversation.HistoryOwnTools, true, false, "[receptionist] Let me find you a seller."},
		{conversation.HistoryFull, false, true, "Let me find you a seller."},
		{conversation.HistoryText, false, false, "Let me find you a seller."},
	} {
		t.Run(fmt.Sprint(tc.policy, tc.names), func(t *testing.T) {
			ctx := ctxT(t)
			rt, rec := convRuntime(t, script, nil)
			conv := shop(conversationtest.NewEffects(), func(s *conversation.Spec[Sale]) {
				s.AgentHistory = map[string]conversation.HistoryPolicy{"sales": tc.policy}
				s.NameSpeakers = tc.names
			})
			sess, err := conv.Start(ctx, rt)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sess.Say(ctx, "I want a CRM"); err != nil {
				t.Fatal(err)
			}
			if _, err := sess.Say(ctx, "bye"); err != nil {
				t.Fatal(err)
			}
			reqs := rec.Requests("sales")
			if len(reqs) != 3 {
				t.Fatalf("%d sales requests", len(reqs))
			}
			// First request of sales: it must not see the receptionist's calls
			// (unless full), but sees the user and the receptionist's text.
			first := reqs[0].Messages
			var sawUser, sawText, sawOthersTools bool
			for _, m := range first {
				switch {
				case m.Role == model.RoleUser && m.Content == "I want a CRM":
					sawUser = true
				case m.Role == model.RoleAssistant && m.Content == tc.text:
					sawText = true
				}
				if m.Role == model.RoleTool || len(m.ToolCalls) > 0 {
					sawOthersTools = true
				}
			}
			if !sawUser || !sawText || sawOthersTools != tc.othersTools {
				t.Errorf("sales saw user %v, text %v, others' tools %v (want %v): %+v", sawUser, sawText, sawOthersTools, tc.othersTools, first)
			}
			// Sales sees its own tool call in the same message.
			if second := reqs[1].Messages; second[len(second)-1].Role != model.RoleTool || second[len(second)-1].Name != "apply_discount" {
				t.Errorf("sales does not see its own result: %+v", second)
			}
			// In the next message, its own earlier calls are hidden only by
			// HistoryText.
			ownEarlier := false
			for _, m := range reqs[2].Messages {
				if m.Role == model.RoleTool && m.Name == "apply_discount" {
					ownEarlier = true
				}
			}
			if ownEarlier != (tc.policy != conversation.HistoryText) {
				t.Errorf("policy %v: own earlier tool result visible: %v", tc.policy, ownEarlier)
			}
			last := reqs[2].Messages[len(reqs[2].Messages)-1]
			if last.Role != model.RoleUser || last.Content != "bye" {
				t.Errorf("last message %+v", last)
			}
		})
	}
}

func TestConversationMaxTurnsFailsOnlyTheTurn(t *testing.T) {
	ctx := ctxT(t)
	st := memory.New()
	loop := scripted.Tools(scripted.CallTool("lookup_customer", map[string]any{"name": "Ada"}))
	script := scripted.Script{"receptionist": {loop, loop, scripted.Text("Hello again.")}}
	fx := conversationtest.NewEffects()
	conv := shop(fx, func(s *conversation.Spec[Sale]) { s.MaxTurns = 2 })
	rt, _ := convRuntime(t, script, st)
	sess, err := conv.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sess.Say(ctx, "loop")
	if !errors.Is(err, swarm.ErrTurnFailed) || !strings.Contains(err.Error(), "max turns (2)") {
		t.Fatalf("err %v", err)
	}
	if rep.Agent != "receptionist" || rep.Context.Customer != "Ada" {
		t.Errorf("failed reply %+v", rep)
	}
	// Another process continues the session: the failed turn is not run
	// again, and the next message is answered.
	rt2, rec2 := convRuntime(t, script, st)
	sess2, err := conv.Attach(ctx, rt2, sess.ID())
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	rep, err = sess2.Say(sctx, "hello")
	cancel()
	if err != nil {
		for _, ev := range swarmtest.Events(t, rt2, sess.ID()) {
			t.Logf("%d %s %s %s %s %s", ev.Seq, ev.Type, ev.Key, ev.Agent, ev.Reason, ev.Message)
		}
		s, _ := rt2.Status(ctx, sess.ID())
		t.Logf("%+v", s)
	}
	if err != nil || rep.Text != "Hello again." || rep.Message != 2 {
		t.Fatalf("reply %+v %v", rep, err)
	}
	if n := len(rec2.Requests("receptionist")); n != 1 {
		t.Errorf("%d model calls after the restart, want 1", n)
	}
	if fx.Count() != 2 {
		t.Errorf("tool ran %d times, want 2", fx.Count())
	}
	// The history of message 2 holds the first user message, but nothing
	// of the failed turn.
	msgs := rec2.Requests("receptionist")[0].Messages
	if len(msgs) != 2 || msgs[0].Content != "loop" || msgs[1].Content != "hello" {
		t.Errorf("history %+v", msgs)
	}
}

func TestConversationCloseAndBadInput(t *testing.T) {
	ctx := ctxT(t)
	rt, _ := convRuntime(t, scripted.Script{}, nil)
	conv := shop(conversationtest.NewEffects(), nil)
	sess, err := conv.Start(ctx, rt, swarm.WithID("chat-1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := conv.Start(ctx, rt, swarm.WithID("chat-1"))
	if err != nil || again.ID() != "chat-1" {
		t.Fatalf("idempotent start: %v", err)
	}
	if _, err := sess.Say(ctx, "  "); !errors.Is(err, swarm.ErrInvalidInput) {
		t.Errorf("empty message: %v", err)
	}
	if err := sess.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Say(ctx, "hello?"); !errors.Is(err, swarm.ErrInvalidState) {
		t.Errorf("say after close: %v", err)
	}
	if _, err := conv.Attach(ctx, rt, "nope"); !errors.Is(err, swarm.ErrNotFound) {
		t.Errorf("attach unknown: %v", err)
	}
	if _, err := conversation.Context[Sale](ctx); !errors.Is(err, conversation.ErrNoConversation) {
		t.Errorf("context outside a conversation: %v", err)
	}
	if _, err := rt.Start(ctx, "shop", []byte(`{"topic": 3}`)); !errors.Is(err, swarm.ErrInvalidInput) {
		t.Errorf("bad initial context: %v", err)
	}
}

func TestConversationDefinitionErrors(t *testing.T) {
	a := &swarm.Agent{Name: "a"}
	b := &swarm.Agent{Name: "b"}
	for name, spec := range map[string]conversation.Spec[Sale]{
		"no queen":         {Agents: []*swarm.Agent{a}},
		"agent twice":      {Queen: a, Agents: []*swarm.Agent{b, a}},
		"unknown target":   {Queen: a, Handovers: map[string][]conversation.Handover{"a": {{To: "c"}}}},
		"unknown source":   {Queen: a, Agents: []*swarm.Agent{b}, Handovers: map[string][]conversation.Handover{"c": {{To: "b"}}}},
		"to itself":        {Queen: a, Handovers: map[string][]conversation.Handover{"a": {{To: "a"}}}},
		"unknown field":    {Queen: a, Agents: []*swarm.Agent{b}, Handovers: map[string][]conversation.Handover{"a": {{To: "b", Sets: []string{"colour"}}}}},
		"handover twice":   {Queen: a, Agents: []*swarm.Agent{b}, Handovers: map[string][]conversation.Handover{"a": {{To: "b"}, {To: "b"}}}},
		"unknown history":  {Queen: a, AgentHistory: map[string]conversation.HistoryPolicy{"z": conversation.HistoryFull}},
		"named like convo": {Queen: &swarm.Agent{Name: "c1"}},
	} {
		rt, _ := convRuntime(t, nil, nil)
		err := rt.Register(conversation.Define("c1", "", spec))
		if !errors.Is(err, swarm.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Streamed text reaches Say's stream and rt.Events with the name of the
// agent that writes it.
func TestConversationStreamsWithAgentAttribution(t *testing.T) {
	ctx := ctxT(t)
	rt, _ := convRuntime(t, scripted.Script{
		"receptionist": {scripted.Tools(scripted.CallTool("transfer_to_sales", map[string]any{"topic": "CRM"}))},
		"sales":        {scripted.Text("Our CRM has pipelines, forecasts and a mobile app.")},
	}, nil)
	sess, err := shop(conversationtest.NewEffects(), nil).Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := sess.Status(ctx)
	evc := make(chan string, 1)
	go func() {
		var b strings.Builder
		for ev, err := range sess.Events(ctx, st.LastSeq, swarm.WithDeltas()) {
			if err != nil {
				break
			}
			switch ev.Type {
			case swarm.EventDelta:
				fmt.Fprintf(&b, "%s:%s|", ev.Agent, ev.Text)
			case swarm.EventReply:
				evc <- b.String()
				return
			}
		}
		evc <- b.String()
	}()
	// The follower subscribes before the message is sent.
	time.Sleep(20 * time.Millisecond)
	base := runtime.NumGoroutine()
	var streamed strings.Builder
	agents := map[string]bool{}
	rep, err := sess.Say(ctx, "CRM?", swarm.WithStream(func(d swarm.Event) {
		agents[d.Agent] = true
		streamed.WriteString(d.Text)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if streamed.String() != rep.Text || len(agents) != 1 || !agents["sales"] {
		t.Errorf("streamed %q by %v, reply %q", streamed.String(), agents, rep.Text)
	}
	got := swarmtest.Recv(t, ctx, evc, "the event follower")
	// Say leaves no goroutine behind (the follower and the run's driver
	// end too).
	for i := 0; runtime.NumGoroutine() >= base && i < 200; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n >= base {
		t.Errorf("%d goroutines after Say, %d before", n, base)
	}
	if !strings.HasPrefix(got, "sales:") || strings.ReplaceAll(strings.ReplaceAll(got, "sales:", ""), "|", "") != rep.Text {
		t.Errorf("events stream %q", got)
	}
}

// TestConversationCrashAtEveryJournalBoundary kills the process after each
// append of a two-message conversation in turn; a second runtime continues
// the session: the same replies and context, each step journaled once, and
// no tool whose result was journaled runs again.
func TestConversationCrashAtEveryJournalBoundary(t *testing.T) {
	script := scripted.Script{
		"receptionist": {scripted.Tools(
			scripted.CallTool("lookup_customer", map[string]any{"name": "Ada"}),
			scripted.CallTool("transfer_to_sales", map[string]any{"topic": "CRM"}),
		)},
		"sales": {
			scripted.Tools(scripted.CallTool("apply_discount", map[string]any{"percent": 10})),
			scripted.Text("10% off CRM for Ada."),
			scripted.Text("You're welcome, Ada."),
		},
	}
	messages := []string{"I'm Ada, CRM please", "thanks"}
	fx := conversationtest.NewEffects()
	conv := shop(fx, nil)

	talk := func(ctx context.Context, sess *conversation.Session[Sale], from int) error {
		for _, m := range messages[from:] {
			if _, err := sess.Say(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}
	// A clean run tells how many appends a session makes.
	counter := swarmtest.NewKillable(t, memory.New())
	rt0, _ := convRuntime(t, script, counter)
	ctx := ctxT(t)
	sess0, err := conv.Start(ctx, rt0)
	if err != nil {
		t.Fatal(err)
	}
	if err := talk(ctx, sess0, 0); err != nil {
		t.Fatal(err)
	}
	wantTranscript, _ := sess0.Transcript(ctx)
	wantCtx, _ := sess0.Context(ctx)
	total := len(swarmtest.Events(t, rt0, sess0.ID()))
	appends := counter.Appends()
	if appends < 8 || len(wantTranscript) != 4 {
		t.Fatalf("clean run: %d appends, transcript %+v", appends, wantTranscript)
	}

	for k := int64(1); k < appends; k++ {
		if !t.Run(fmt.Sprint("after_append_", k), func(t *testing.T) {
			ctx := ctxT(t)
			fx.Reset()
			mem := memory.New()
			d := swarmtest.NewKillable(t, mem)
			d.DieAfter(k)
			a, err := swarm.New(swarm.Config{Store: d, Model: scripted.New(script), Lease: 60 * time.Millisecond, RetryBackoff: time.Millisecond, Owner: "A", PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			actx, kill := context.WithCancel(ctx)
			var id atomic.Value
			done := make(chan struct{})
			go func() {
				defer close(done)
				sess, err := conv.Start(actx, a, swarm.WithID("chat"))
				if err != nil {
					return
				}
				id.Store(sess.ID())
				_ = talk(actx, sess, 0)
			}()
			for !d.Dead() {
				select {
				case <-done:
					if !d.Dead() {
						t.Fatalf("A finished without dying")
					}
				case <-time.After(time.Millisecond):
				}
			}
			kill()
			<-done
			a.Close()
			journaled := map[string]bool{}
			recs, _ := mem.Read(ctx, "chat", 0, 0)
			for _, r := range recs {
				journaled["chat/"+r.Key] = true
			}
			before := fx.ByKey()
			time.Sleep(80 * time.Millisecond) // A's lease runs out

			// B recovers what A left running, like `swarm recover`, then
			// talks on.
			b, _ := convRuntime(t, script, mem)
			if err := b.Register(conv); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			sess, err := conv.Start(ctx, b, swarm.WithID("chat"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sess.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			tr, err := sess.Transcript(ctx)
			if err != nil {
				t.Fatal(err)
			}
			said := 0
			for _, u := range tr {
				if u.Agent == "" {
					said++
				}
			}
			if err := talk(ctx, sess, said); err != nil {
				t.Fatal(err)
			}
			if tr, _ := sess.Transcript(ctx); !slices.Equal(tr, wantTranscript) {
				t.Errorf("transcript %+v, want %+v", tr, wantTranscript)
			}
			if got, _ := sess.Context(ctx); got != wantCtx {
				t.Errorf("context %+v, want %+v", got, wantCtx)
			}
			swarmtest.AssertJournal(t, b, "chat")
			if n := len(swarmtest.Events(t, b, "chat")); n != total {
				t.Errorf("journal has %d records, a clean run %d", n, total)
			}
			ran := fx.ByKey()
			if len(ran) != 2 {
				t.Errorf("tools ran for %d distinct calls, want 2: %v", len(ran), ran)
			}
			for key, n := range ran {
				if journaled[key] && n > before[key] {
					t.Errorf("call %s ran again after its result was journaled", key)
				}
			}
		}) {
			break // one broken boundary is enough: the next ones would each wait out their deadline
		}
	}
}

// BenchmarkConversationSay measures one user message answered by one model
// call on the memory store, including the replay of the session's earlier
// messages that every Say performs (b.N messages in one session).
func BenchmarkConversationSay(b *testing.B) {
	steps := make([]scripted.Step, b.N)
	for i := range steps {
		steps[i] = scripted.Text("ok")
	}
	// b.N messages may be more model calls than a run tree makes by default.
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{"receptionist": steps}, scripted.WithoutBookkeeping()), MaxModelCalls: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	sess, err := shop(conversationtest.NewEffects(), nil).Start(ctx, rt)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := sess.Say(ctx, "hello"); err != nil {
			b.Fatal(err)
		}
	}
}
