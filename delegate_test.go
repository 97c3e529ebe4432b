package swarm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/conversation/conversationtest"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

func toolDef(t *testing.T, req model.Request, name string) model.ToolDef {
	t.Helper()
	for _, d := range req.Tools {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("request of %s offers no tool %s", req.Agent, name)
	return model.ToolDef{}
}

type order struct {
	Item     string `json:"item"`
	Quantity int    `json:"quantity"`
}

// TestAbsorbToolsRoute runs a captain that absorbed a skill-less agent, a
// one-skill typed agent and a two-skill agent: each tool has its name,
// description and schema, invalid arguments are refused before the sibling
// runs, and each call reaches its skill with its request.
func TestAbsorbToolsRoute(t *testing.T) {
	ctx := ctxT(t)
	var ran atomic.Int64
	stock := swarm.NewTool("stock", "counts stock", func(ctx context.Context, in struct{}) (string, error) { ran.Add(1); return "7 left", nil })
	audit := swarm.NewTool("audit", "audits", func(ctx context.Context, in struct{}) (string, error) { return "ok", nil })
	echo := &swarm.Agent{Name: "echo", Description: "Repeats", Instructions: "Repeat."}
	orders := absorb.Sibling{Agent: &swarm.Agent{Name: "orders", Instructions: "You take orders."}, Skills: []absorb.Skill{{Name: "place", Description: "Places an order", Input: absorb.InputOf[*order]()}}}
	shop := absorb.Sibling{Agent: &swarm.Agent{Name: "shop", Description: "A shop", Instructions: "You run a shop.", Tools: []swarm.Tool{stock, audit}}, Skills: []absorb.Skill{
		{Name: "ask", Description: "Answers questions"},
		{Name: "restock", Description: "Restocks an item", Instructions: "Only restock.", Tools: []string{"stock"}, Input: absorb.InputOf[order]()},
	}}
	captain := &swarm.Agent{Name: "captain", Instructions: "Route."}
	if err := absorb.Into(captain, absorb.Sibling{Agent: echo}, orders, shop); err != nil {
		t.Fatal(err)
	}
	if got := absorb.Absorbed(captain); len(got) != 3 || got[2] != shop.Agent {
		t.Fatalf("absorbed %v", got)
	}
	rec := &conversationtest.Recorder{Script: scripted.New(scripted.Script{
		"captain": {
			scripted.Tools(
				scripted.CallTool("orders", map[string]any{"item": "tea"}),                  // quantity missing
				scripted.CallTool("shop__restock", map[string]any{"item": "tea", "qty": 2}), // unknown field
				scripted.CallTool("echo", map[string]any{}),                                 // no request
			),
			scripted.Tools(
				scripted.CallTool("echo", map[string]any{"request": "hi"}),
				scripted.CallTool("orders", map[string]any{"item": "tea", "quantity": 2}),
				scripted.CallTool("shop__ask", map[string]any{"request": "open?"}),
				scripted.CallTool("shop__restock", map[string]any{"item": "tea", "quantity": 5}),
			),
			scripted.Text("done"),
		},
		"echo":   {scripted.Text("hi")},
		"orders": {scripted.Text("placed")},
		"shop": {
			// Calls run in parallel: each step answers whoever asks first.
			scripted.Text("shop answer"),
			scripted.Tools(scripted.CallTool("stock", map[string]any{})),
			scripted.Text("shop answer"),
		},
	})}
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: rec.Model(), MaxParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, run, err := absorb.Captain(captain).Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
		t.Fatalf("result %#v", res)
	}

	first := rec.Requests("captain")[0]
	var names []string
	for _, d := range first.Tools {
		names = append(names, d.Name)
	}
	// A text swarm's orchestrator is not offered complete: its text answer completes the run.
	if want := []string{"echo", "orders", "shop__ask", "shop__restock", "pause", "fail"}; !slices.Equal(names, want) {
		t.Fatalf("captain's tools %v, want %v", names, want)
	}
	if d := toolDef(t, first, "orders"); !strings.Contains(d.Description, `"orders" agent`) || !strings.Contains(d.Description, "Skills: place — Places an order") ||
		!strings.Contains(string(d.Parameters), `"quantity"`) || strings.Contains(string(d.Parameters), "request") {
		t.Errorf("orders tool: %q %s", d.Description, d.Parameters)
	}
	if d := toolDef(t, first, "echo"); !strings.Contains(string(d.Parameters), `"request"`) || !strings.Contains(d.Description, "Repeats") {
		t.Errorf("echo tool: %q %s", d.Description, d.Parameters)
	}
	if d := toolDef(t, first, "shop__restock"); !strings.Contains(d.Description, `skill "restock": Restocks an item`) {
		t.Errorf("restock tool: %q", d.Description)
	}

	// Invalid arguments: error results, and no sibling ran for them.
	evs := swarmtest.Events(t, rt, run.ID())
	byCall := map[string]swarm.Event{}
	var started []swarm.Event
	for _, ev := range evs {
		switch ev.Type {
		case swarm.EventHandoffReturned, swarm.EventToolResult:
			byCall[ev.CallID] = ev
		case swarm.EventHandoffStarted:
			started = append(started, ev)
		}
	}
	for i, want := range []string{"quantity", "qty", "request"} {
		ev := byCall[fmt.Sprintf("call_captain_0_%d", i)]
		if ev.Type != swarm.EventToolResult || !ev.IsError || !strings.Contains(ev.Output, want) {
			t.Errorf("invalid call %d: %+v, want an error tool result about %s", i, ev, want)
		}
	}
	if n := len(rec.Requests("orders")); n != 1 {
		t.Errorf("orders ran %d times, want once (for the valid call only)", n)
	}

	// Valid calls reach their skills, with their requests.
	want := map[string]struct{ target, output string }{
		"call_captain_1_0": {"echo", "hi"}, "call_captain_1_1": {"orders", "placed"}, "call_captain_1_2": {"shop", "shop answer"}, "call_captain_1_3": {"shop", "shop answer"},
	}
	for id, w := range want {
		ev := byCall[id]
		if ev.IsError || ev.Target != w.target || ev.Output != w.output || ev.Agent != "captain" {
			t.Errorf("%s: %+v, want %s answering %q", id, ev, w.target, w.output)
		}
	}
	if o := rec.Requests("orders")[0]; o.Messages[0].Content != `{"item":"tea","quantity":2}` || o.System != "You take orders." {
		t.Errorf("orders got %q with system %q", o.Messages[0].Content, o.System)
	}
	shopReqs := rec.Requests("shop")
	if len(shopReqs) != 3 {
		t.Fatalf("shop requests %d", len(shopReqs))
	}
	ask, restock := shopReqs[0], shopReqs[1]
	if ask.Messages[0].Content != "open?" {
		ask, restock = restock, ask // the calls run in parallel
	}
	if ask.Messages[0].Content != "open?" || ask.System != "You run a shop." || len(ask.Tools) != 2 {
		t.Errorf("ask: %q, %q, %d tools", ask.Messages[0].Content, ask.System, len(ask.Tools))
	}
	if restock.Messages[0].Content != `{"item":"tea","quantity":5}` || restock.System != "You run a shop.\n\nOnly restock." ||
		len(restock.Tools) != 1 || restock.Tools[0].Name != "stock" {
		t.Errorf("restock: %q, %q, %v", restock.Messages[0].Content, restock.System, restock.Tools)
	}
	if ran.Load() != 1 {
		t.Errorf("stock ran %d times", ran.Load())
	}
	for _, ev := range started {
		if ev.Agent != "captain" || ev.Tool == "" {
			t.Errorf("handoff_started %+v lacks the captain or the tool", ev)
		}
		if ev.CallID == "call_captain_1_1" && ev.Request != `{"item":"tea","quantity":2}` {
			t.Errorf("typed request in the event: %q", ev.Request)
		}
	}
}

// TestAbsorbHooksTwoLayers: the captain's hooks see the delegation, the
// sibling's hooks its own tool call, in the order they happen.
func TestAbsorbHooksTwoLayers(t *testing.T) {
	ctx := ctxT(t)
	var mu sync.Mutex
	var trace []string
	note := func(layer string) func(context.Context, swarm.Event) {
		return func(_ context.Context, e swarm.Event) {
			mu.Lock()
			defer mu.Unlock()
			trace = append(trace, fmt.Sprintf("%s %s %s>%s %s=%s", layer, e.Type, e.Agent, e.Target, e.Tool, e.Output))
		}
	}
	factorNumber := swarm.NewTool("factor_number", "factors n", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		return "2, 3, 5", nil
	})
	factor := &swarm.Agent{Name: "factor", Instructions: "Factor.", Tools: []swarm.Tool{factorNumber},
		Hooks: swarm.Hooks{OnToolUse: note("factor.tool"), OnHandoff: note("factor.handoff")}}
	fib := &swarm.Agent{Name: "fib", Instructions: "Route.", Hooks: swarm.Hooks{OnToolUse: note("fib.tool"), OnHandoff: note("fib.handoff")}}
	if err := absorb.Into(fib, absorb.Sibling{Agent: factor}); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{
		"fib":    {scripted.Tools(scripted.CallTool("factor", map[string]any{"request": "factor 30"})), scripted.Text("2 × 3 × 5")},
		"factor": {scripted.Tools(scripted.CallTool("factor_number", map[string]any{"n": 30})), scripted.Text("2, 3, 5")},
	})
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, _, err := absorb.Captain(fib).Run(ctx, rt, "factor 30"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fib.handoff handoff_started fib>factor factor=",
		"factor.tool tool_result factor> factor_number=2, 3, 5",
		"fib.tool handoff_returned fib>factor factor=2, 3, 5",
		"fib.handoff handoff_returned fib>factor factor=2, 3, 5",
	}
	if !slices.Equal(trace, want) {
		t.Fatalf("hooks fired\n%s\nwant\n%s", strings.Join(trace, "\n"), strings.Join(want, "\n"))
	}
}

// TestAbsorbInvalidArgumentsDoNotHandOff: a call to an absorbed sibling
// whose arguments are invalid gives the captain's model an error result:
// the sibling never runs, so there is no handoff event and the captain's
// OnHandoff does not fire.
func TestAbsorbInvalidArgumentsDoNotHandOff(t *testing.T) {
	ctx := ctxT(t)
	var mu sync.Mutex
	var trace []string
	note := func(hook string) func(context.Context, swarm.Event) {
		return func(_ context.Context, e swarm.Event) {
			mu.Lock()
			defer mu.Unlock()
			trace = append(trace, hook+" "+string(e.Type))
		}
	}
	orders := absorb.Sibling{Agent: &swarm.Agent{Name: "orders", Instructions: "Take orders."}, Skills: []absorb.Skill{{Name: "place", Input: absorb.InputOf[order]()}}}
	captain := &swarm.Agent{Name: "captain", Instructions: "Route.", Hooks: swarm.Hooks{OnHandoff: note("handoff"), OnToolUse: note("tool")}}
	if err := absorb.Into(captain, orders); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{
		"captain": {scripted.Tools(scripted.CallTool("orders", map[string]any{"item": "tea"})), scripted.Text("no order")},
	})
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, run, err := absorb.Captain(captain).Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "no order" {
		t.Fatalf("result %#v", res)
	}
	var results []swarm.Event
	for _, ev := range swarmtest.Events(t, rt, run.ID()) {
		switch ev.Type {
		case swarm.EventHandoffStarted, swarm.EventHandoffReturned:
			t.Errorf("%s event for a call with invalid arguments: %+v", ev.Type, ev)
		case swarm.EventToolResult:
			results = append(results, ev)
		}
	}
	if len(results) != 1 || !results[0].IsError || !strings.Contains(results[0].Output, "quantity") || results[0].Tool != "orders" {
		t.Errorf("tool results %+v, want one error about the missing quantity", results)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(trace, []string{"tool tool_result"}) {
		t.Errorf("captain's hooks fired %q, want only OnToolUse with the error result", trace)
	}
	swarmtest.AssertScriptConsumed(t, m, run.ID())
}

// TestAbsorbedSiblingRecovers kills the process inside an absorbed
// sibling's loop, after each of its appends in turn, and recovers the run
// elsewhere: no step of the sibling whose outcome is journaled (a model
// response, a side-effecting tool's result) is executed again, by either
// process, and the run completes with each step journaled once.
func TestAbsorbedSiblingRecovers(t *testing.T) {
	for name, open := range freshStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			script := func() scripted.Script {
				return scripted.Script{
					"captain": {scripted.Tools(scripted.CallTool("booker", map[string]any{"item": "room", "quantity": 1})), scripted.Text("booked")},
					"booker": {
						scripted.Tools(scripted.CallTool("book", map[string]any{"item": "room"})),
						scripted.Tools(scripted.CallTool("book", map[string]any{"item": "car"})),
						scripted.Text("room and car booked"),
					},
				}
			}
			// Appends of a clean run: the captain's response (1), the
			// sibling's response, result, response, result, response
			// (2-6), the delegation's result (7), the end (8). Dying after
			// 2 to 6 dies inside the sibling's loop.
			for after := int64(2); after <= 6; after++ {
				t.Run(fmt.Sprint("after", after), func(t *testing.T) {
					st := open(t)
					// journaled reports whether run id has a record of agent
					// whose key is step or ends with /step.
					journaled := func(ctx context.Context, id, agent, step string) bool {
						recs, err := st.Read(context.WithoutCancel(ctx), id, 0, 0)
						if err != nil {
							t.Errorf("read the journal: %v", err)
						}
						for _, r := range recs {
							var d struct{ Agent string }
							_ = json.Unmarshal(r.Data, &d)
							if d.Agent == agent && (r.Key == step || strings.HasSuffix(r.Key, "/"+step)) {
								return true
							}
						}
						return false
					}
					var mu sync.Mutex
					var redone []string
					bookings := map[string]int{}
					book := swarm.NewTool("book", "books an item", func(ctx context.Context, in struct {
						Item string `json:"item"`
					}) (string, error) {
						mu.Lock()
						defer mu.Unlock()
						bookings[swarm.StepKey(ctx)]++
						if journaled(ctx, swarm.RunID(ctx), "booker", swarm.StepKey(ctx)) {
							redone = append(redone, swarm.StepKey(ctx))
						}
						return "booked " + in.Item, nil
					})
					captainOf := func() *swarm.Swarm[string, string] {
						booker := absorb.Sibling{Agent: &swarm.Agent{Name: "booker", Instructions: "Book.", Tools: []swarm.Tool{book}},
							Skills: []absorb.Skill{{Name: "book", Description: "Books things", Input: absorb.InputOf[order]()}}}
						c := &swarm.Agent{Name: "captain", Instructions: "Route."}
						if err := absorb.Into(c, booker); err != nil {
							t.Fatal(err)
						}
						return absorb.Captain(c)
					}
					// A model that notes a request for a round whose response
					// is journaled already: round n of an agent is asked with
					// 2n-1 messages.
					watch := func(m model.Model) model.Model {
						return model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
							key := fmt.Sprintf("t%d/model", (len(req.Messages)+1)/2)
							if journaled(ctx, req.RunID, req.Agent, key) {
								mu.Lock()
								redone = append(redone, req.Agent+" "+key)
								mu.Unlock()
							}
							return m.Generate(ctx, req)
						})
					}
					d := dying(t, st, after)
					rtA, err := swarm.New(swarm.Config{Store: d, Model: watch(scripted.New(script())), Owner: "A", Lease: 100 * time.Millisecond, PollInterval: 10 * time.Millisecond})
					if err != nil {
						t.Fatal(err)
					}
					defer rtA.Close()
					if err := rtA.Register(captainOf()); err != nil {
						t.Fatal(err)
					}
					id, err := rtA.Start(ctx, "captain", json.RawMessage(`"book a trip"`))
					if err != nil {
						t.Fatal(err)
					}
					rtB, err := swarm.New(swarm.Config{Store: st, Model: watch(scripted.New(script())), Owner: "B", Lease: time.Second, PollInterval: 10 * time.Millisecond})
					if err != nil {
						t.Fatal(err)
					}
					defer rtB.Close()
					recoverElsewhere(t, ctx, d, rtA, rtB, captainOf(), id)
					swarmtest.AssertJournal(t, rtB, id)

					mu.Lock()
					defer mu.Unlock()
					if len(redone) > 0 {
						t.Errorf("steps executed again after their outcome was journaled: %q", redone)
					}
					if len(bookings) != 2 {
						t.Errorf("bookings %v, want two", bookings)
					}
					for k := range bookings {
						if !strings.HasPrefix(k, "t1/h/") {
							t.Errorf("booking %s is not a step of the captain's call", k)
						}
					}
					var models int
					for _, ev := range swarmtest.Events(t, rtB, id) {
						if ev.Type == swarm.EventModelResponse {
							models++
						}
					}
					if models != 5 {
						t.Errorf("journal has %d model responses, want 5", models)
					}
				})
			}
		})
	}
}

// TestAbsorbCycleIsBounded: two agents that absorb each other are planned
// once each, and their delegations end at Config.MaxDepth.
func TestAbsorbCycleIsBounded(t *testing.T) {
	ctx := ctxT(t)
	a := &swarm.Agent{Name: "a", Instructions: "A."}
	b := &swarm.Agent{Name: "b", Instructions: "B."}
	if err := absorb.Into(a, absorb.Sibling{Agent: b}); err != nil {
		t.Fatal(err)
	}
	if err := absorb.Into(b, absorb.Sibling{Agent: a}); err != nil {
		t.Fatal(err)
	}
	captain := &swarm.Agent{Name: "captain", Instructions: "Route."}
	if err := absorb.Into(captain, absorb.Sibling{Agent: a}); err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{
		"captain": {scripted.Tools(scripted.CallTool("a", map[string]any{"request": "go"})), scripted.Text("done")},
		"a":       {scripted.Tools(scripted.CallTool("b", map[string]any{"request": "go"})), scripted.Text("a done")},
		"b":       {scripted.Tools(scripted.CallTool("a", map[string]any{"request": "go"})), scripted.Text("b done")},
	})
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m, MaxDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	_, run, err := absorb.Captain(captain).Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	var refused bool
	for _, ev := range swarmtest.Events(t, rt, run.ID()) {
		if ev.Type == swarm.EventHandoffReturned && ev.Agent == "b" && ev.IsError && strings.Contains(ev.Output, "nesting depth limit (2)") {
			refused = true
		}
	}
	if !refused {
		t.Error("b's delegation back to a was not refused at the depth limit")
	}
}

// TestAbsorbSkillPlanApartFromAgentNames: the loop of a skill with
// instructions of its own is planned apart from the agent's, but never
// in place of an agent whose name is that of the skill's tool
// ("shop__restock" is a legal agent name), whichever is met first.
func TestAbsorbSkillPlanApartFromAgentNames(t *testing.T) {
	ctx := ctxT(t)
	newShop := func() absorb.Sibling {
		return absorb.Sibling{Agent: &swarm.Agent{Name: "shop", Instructions: "You run a shop."}, Skills: []absorb.Skill{
			{Name: "ask"}, {Name: "restock", Instructions: "Only restock."},
		}}
	}
	for _, tc := range []struct {
		name string
		// captain and the calls of its model and of mid's.
		captain func(shop absorb.Sibling, other *swarm.Agent) *swarm.Agent
		script  scripted.Script
	}{{
		name: "skill first",
		captain: func(shop absorb.Sibling, other *swarm.Agent) *swarm.Agent {
			c := &swarm.Agent{Name: "captain", Instructions: "Route.", Handoffs: []swarm.Handoff{swarm.ToAgent(other)}}
			if err := absorb.Into(c, shop); err != nil {
				t.Fatal(err)
			}
			return c
		},
		script: scripted.Script{"captain": {
			scripted.Tools(scripted.CallTool("handoff_to_shop__restock", map[string]any{"request": "hi"}), scripted.CallTool("shop__restock", map[string]any{"request": "more"})),
			scripted.Text("done"),
		}},
	}, {
		name: "agent first",
		captain: func(shop absorb.Sibling, other *swarm.Agent) *swarm.Agent {
			mid := &swarm.Agent{Name: "mid", Instructions: "Relay."}
			if err := absorb.Into(mid, shop); err != nil {
				t.Fatal(err)
			}
			return &swarm.Agent{Name: "captain", Instructions: "Route.", Handoffs: []swarm.Handoff{swarm.ToAgent(other), swarm.ToAgent(mid)}}
		},
		script: scripted.Script{
			"captain": {
				scripted.Tools(scripted.CallTool("handoff_to_shop__restock", map[string]any{"request": "hi"}), scripted.CallTool("handoff_to_mid", map[string]any{"request": "relay"})),
				scripted.Text("done"),
			},
			"mid": {scripted.Tools(scripted.CallTool("shop__restock", map[string]any{"request": "more"})), scripted.Text("relayed")},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			other := &swarm.Agent{Name: "shop__restock", Instructions: "I am a different agent."}
			tc.script["shop__restock"] = []scripted.Step{scripted.Text("other answered")}
			tc.script["shop"] = []scripted.Step{scripted.Text("shop answered")}
			rec := &conversationtest.Recorder{Script: scripted.New(tc.script)}
			rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: rec.Model()})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			if _, _, err := absorb.Captain(tc.captain(newShop(), other)).Run(ctx, rt, "go"); err != nil {
				t.Fatalf("run: %v", err)
			}
			if rs := rec.Requests("shop__restock"); len(rs) != 1 || rs[0].System != "I am a different agent." {
				t.Errorf("the agent shop__restock was asked %d times; want once, with its own instructions", len(rs))
			}
			if rs := rec.Requests("shop"); len(rs) != 1 || !strings.Contains(rs[0].System, "Only restock.") {
				t.Errorf("the skill restock of shop was asked %d times; want once, with the instructions of the skill", len(rs))
			}
		})
	}
}

// TestDelegationToolRefuses: a delegation's tool is checked when it is
// made, each mistake an error wrapping ErrInvalid that names it.
func TestDelegationToolRefuses(t *testing.T) {
	clerk := &swarm.Agent{Name: "clerk", Tools: []swarm.Tool{swarm.NewTool("file", "files", func(context.Context, struct{}) (string, error) { return "", nil })}}
	for _, tc := range []struct {
		name string
		d    swarm.Delegation
		want string
	}{
		{"nil agent", swarm.Delegation{Name: "x"}, "nil agent"},
		{"bad name", swarm.Delegation{Agent: clerk, Name: "a.b"}, "may contain only"},
		{"reserved", swarm.Delegation{Agent: clerk, Name: "handoff_to_clerk"}, "reserved"},
		{"no variant", swarm.Delegation{Agent: clerk, Name: "x", Instructions: "Only file."}, "need a variant"},
		{"bad variant", swarm.Delegation{Agent: clerk, Name: "x", Variant: "a b"}, "may contain only"},
		{"unknown tool", swarm.Delegation{Agent: clerk, Name: "x", Variant: "v", Tools: []string{"shred"}}, `names tool "shred"`},
		{"bad schema", swarm.Delegation{Agent: clerk, Name: "x", Schema: json.RawMessage(`{"type":7}`)}, "input schema of x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := tc.d.Tool()
			if tool != nil || !errors.Is(err, swarm.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Tool() = %v, %v; want ErrInvalid and %q", tool, err, tc.want)
			}
		})
	}
	tool, err := swarm.Delegation{Agent: clerk, Name: "x", Variant: "v", Tools: []string{"file"}}.Tool()
	if err != nil {
		t.Fatal(err)
	}
	if d := tool.(interface{ Delegation() swarm.Delegation }).Delegation(); d.Agent != clerk || d.Variant != "v" {
		t.Errorf("the tool's Delegation() = %+v", d)
	}
	if _, err := tool.Call(context.Background(), nil); err == nil {
		t.Error("a delegation's tool ran outside a run")
	}
}
