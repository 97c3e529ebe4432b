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

func TestProvide(t *testing.T) {
	build := func(name string) func() *swarm.Agent {
		return func() *swarm.Agent { return &swarm.Agent{Name: name, Instructions: "x"} }
	}
	swarm.Provide(swarm.Provider{ID: "providetest.b.zeta", Description: "Zeta", Build: build("")})
	swarm.Provide(swarm.Provider{ID: "providetest.a.alpha", Description: "Alpha", Build: build("alpha"),
		Skills: []swarm.Skill{{Name: "first", Description: "One", Input: swarm.InputOf[struct {
			N int `json:"n"`
		}]()}}})
	for _, tc := range []struct {
		name string
		p    swarm.Provider
		want string
	}{
		{"duplicate", swarm.Provider{ID: "providetest.a.alpha", Build: build("alpha")}, "called twice"},
		{"no namespace", swarm.Provider{ID: "alpha", Build: build("alpha")}, "needs a namespace"},
		{"bad label", swarm.Provider{ID: "providetest.al pha", Build: build("alpha")}, "may contain only"},
		{"empty label", swarm.Provider{ID: "providetest..alpha", Build: build("alpha")}, "empty name"},
		{"nil build", swarm.Provider{ID: "providetest.nobuild"}, "nil Build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(fmt.Sprint(p), tc.want) {
					t.Fatalf("Provide panicked with %v, want %q", p, tc.want)
				}
			}()
			swarm.Provide(tc.p)
		})
	}

	// Listed without being built, sorted by id, in its namespace only.
	ps := swarm.Providers("providetest")
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	if want := []string{"providetest.a.alpha", "providetest.b.zeta"}; !slices.Equal(ids, want) {
		t.Fatalf("providers %v, want %v", ids, want)
	}
	if ps[0].Name() != "alpha" || ps[0].Namespace() != "providetest.a" || ps[0].Skills[0].Name != "first" ||
		!strings.Contains(string(ps[0].Skills[0].Input.Schema()), `"n"`) {
		t.Errorf("listing: %+v", ps[0])
	}
	if got := swarm.Providers("providetest.b"); len(got) != 1 || got[0].ID != "providetest.b.zeta" {
		t.Errorf("providers of providetest.b: %v", got)
	}
	if got := swarm.Providers("providetest.a.al"); len(got) != 0 {
		t.Errorf("a namespace is matched by whole labels, got %v", got)
	}

	// Built fresh in the same order each time, filled in from the provider.
	for range 3 {
		agents, err := swarm.Discover("providetest")
		if err != nil {
			t.Fatal(err)
		}
		if len(agents) != 2 || agents[0].Name != "alpha" || agents[1].Name != "zeta" || agents[1].Description != "Zeta" || len(agents[0].Skills) != 1 {
			t.Fatalf("discovered %+v", agents)
		}
	}
	a1, _ := swarm.Discover("providetest")
	a2, _ := swarm.Discover("providetest")
	if a1[0] == a2[0] {
		t.Error("Discover returned the same agent twice; want a new one per call")
	}

	// Agents that do not match their provider are refused.
	swarm.Provide(swarm.Provider{ID: "providebad.x.wrong", Build: build("other")})
	swarm.Provide(swarm.Provider{ID: "providebad.y.nil", Build: func() *swarm.Agent { return nil }})
	swarm.Provide(swarm.Provider{ID: "providebad.z.skills", Skills: []swarm.Skill{{Name: "a"}}, Build: func() *swarm.Agent {
		return &swarm.Agent{Skills: []swarm.Skill{{Name: "b"}}}
	}})
	for ns, want := range map[string]string{"providebad.x": `named "other"`, "providebad.y": "built no agent", "providebad.z": "lists the skills [a]"} {
		if got, err := swarm.Discover(ns); !errors.Is(err, swarm.ErrInvalid) || !strings.Contains(err.Error(), want) || got != nil {
			t.Errorf("%s: %v, %v; want %q", ns, got, err, want)
		}
	}
}

type order struct {
	Item     string `json:"item"`
	Quantity int    `json:"quantity"`
}

func TestAbsorbRefuses(t *testing.T) {
	lookup := swarm.NewTool("lookup", "looks up", func(ctx context.Context, in struct{}) (string, error) { return "", nil })
	fresh := func() *swarm.Agent {
		return &swarm.Agent{Name: "captain", Tools: []swarm.Tool{lookup}, Handoffs: []swarm.Handoff{swarm.ToAgent(&swarm.Agent{Name: "clerk"})}}
	}
	for _, tc := range []struct {
		name     string
		siblings func(c *swarm.Agent) []*swarm.Agent
		is       error
		want     string
	}{
		{"self", func(c *swarm.Agent) []*swarm.Agent { return []*swarm.Agent{c} }, swarm.ErrInvalid, "cannot absorb itself"},
		{"same name", func(*swarm.Agent) []*swarm.Agent { return []*swarm.Agent{{Name: "captain"}} }, swarm.ErrInvalid, "cannot absorb itself"},
		{"nil", func(*swarm.Agent) []*swarm.Agent { return []*swarm.Agent{nil} }, swarm.ErrInvalid, "nil agent"},
		{"tool collision", func(*swarm.Agent) []*swarm.Agent { return []*swarm.Agent{{Name: "lookup"}} }, swarm.ErrDuplicate, `already has a tool named "lookup"`},
		{"twice", func(*swarm.Agent) []*swarm.Agent {
			s := &swarm.Agent{Name: "sib"}
			return []*swarm.Agent{s, s}
		}, swarm.ErrDuplicate, `already has a tool named "sib"`},
		{"two agents one name", func(*swarm.Agent) []*swarm.Agent {
			return []*swarm.Agent{{Name: "sib"}, {Name: "sib"}}
		}, swarm.ErrDuplicate, `already has a tool named "sib"`},
		{"handoff collision", func(*swarm.Agent) []*swarm.Agent { return []*swarm.Agent{{Name: "clerk"}} }, swarm.ErrDuplicate, "hands off to a different agent"},
		{"reserved", func(*swarm.Agent) []*swarm.Agent { return []*swarm.Agent{{Name: "complete"}} }, swarm.ErrInvalid, "reserved"},
		{"bad name", func(*swarm.Agent) []*swarm.Agent { return []*swarm.Agent{{Name: "a.b"}} }, swarm.ErrInvalid, "may contain only"},
		{"int input", func(*swarm.Agent) []*swarm.Agent {
			return []*swarm.Agent{{Name: "sib", Skills: []swarm.Skill{{Name: "count", Input: swarm.InputOf[int]()}}}}
		}, swarm.ErrIncompatible, "takes integer"},
		{"slice input", func(*swarm.Agent) []*swarm.Agent {
			return []*swarm.Agent{{Name: "sib", Skills: []swarm.Skill{{Name: "a"}, {Name: "list", Input: swarm.InputOf[[]order]()}}}}
		}, swarm.ErrIncompatible, "skill list of agent sib, whose input is []swarm_test.order, takes null or array"},
		{"unschematic input", func(*swarm.Agent) []*swarm.Agent {
			return []*swarm.Agent{{Name: "sib", Skills: []swarm.Skill{{Name: "c", Input: swarm.InputOf[chan int]()}}}}
		}, swarm.ErrIncompatible, "chan int"},
		{"duplicate skill", func(*swarm.Agent) []*swarm.Agent {
			return []*swarm.Agent{{Name: "sib", Skills: []swarm.Skill{{Name: "a"}, {Name: "a"}}}}
		}, swarm.ErrDuplicate, `skill "a" appears twice`},
		{"unknown skill tool", func(*swarm.Agent) []*swarm.Agent {
			return []*swarm.Agent{{Name: "sib", Skills: []swarm.Skill{{Name: "a", Tools: []string{"nope"}}}}}
		}, swarm.ErrInvalid, `names tool "nope"`},
		{"remote with input", func(*swarm.Agent) []*swarm.Agent {
			return []*swarm.Agent{{Name: "sib", Skills: []swarm.Skill{{Name: "a", Remote: lookup, Input: swarm.InputOf[order]()}}}}
		}, swarm.ErrInvalid, "both a remote tool and an input type"},
		{"skill tool name too long", func(*swarm.Agent) []*swarm.Agent {
			return []*swarm.Agent{{Name: strings.Repeat("s", 40), Skills: []swarm.Skill{{Name: "a"}, {Name: strings.Repeat("k", 30)}}}}
		}, swarm.ErrInvalid, "longer than 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fresh()
			err := c.Absorb(tc.siblings(c)...)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Absorb: %v; want %v and %q", err, tc.is, tc.want)
			}
			if len(c.Tools) != 1 {
				t.Errorf("a refused Absorb changed the captain's tools: %d", len(c.Tools))
			}
		})
	}
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
	orders := &swarm.Agent{Name: "orders", Instructions: "You take orders.", Skills: []swarm.Skill{{Name: "place", Description: "Places an order", Input: swarm.InputOf[*order]()}}}
	shop := &swarm.Agent{Name: "shop", Description: "A shop", Instructions: "You run a shop.", Tools: []swarm.Tool{stock, audit}, Skills: []swarm.Skill{
		{Name: "ask", Description: "Answers questions"},
		{Name: "restock", Description: "Restocks an item", Instructions: "Only restock.", Tools: []string{"stock"}, Input: swarm.InputOf[order]()},
	}}
	captain := &swarm.Agent{Name: "captain", Instructions: "Route."}
	if err := captain.Absorb(echo, orders, shop); err != nil {
		t.Fatal(err)
	}
	if got := captain.Absorbed(); len(got) != 3 || got[2] != shop {
		t.Fatalf("absorbed %v", got)
	}
	rec := &convRecorder{m: scripted.New(scripted.Script{
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
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: rec.model(), MaxParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, run, err := swarm.Captain(captain).Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
		t.Fatalf("result %#v", res)
	}

	first := rec.requests("captain")[0]
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
	if n := len(rec.requests("orders")); n != 1 {
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
	if o := rec.requests("orders")[0]; o.Messages[0].Content != `{"item":"tea","quantity":2}` || o.System != "You take orders." {
		t.Errorf("orders got %q with system %q", o.Messages[0].Content, o.System)
	}
	shopReqs := rec.requests("shop")
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
	if err := fib.Absorb(factor); err != nil {
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
	if _, _, err := swarm.Captain(fib).Run(ctx, rt, "factor 30"); err != nil {
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
	orders := &swarm.Agent{Name: "orders", Instructions: "Take orders.", Skills: []swarm.Skill{{Name: "place", Input: swarm.InputOf[order]()}}}
	captain := &swarm.Agent{Name: "captain", Instructions: "Route.", Hooks: swarm.Hooks{OnHandoff: note("handoff"), OnToolUse: note("tool")}}
	if err := captain.Absorb(orders); err != nil {
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
	res, run, err := swarm.Captain(captain).Run(ctx, rt, "go")
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
						booker := &swarm.Agent{Name: "booker", Instructions: "Book.", Tools: []swarm.Tool{book},
							Skills: []swarm.Skill{{Name: "book", Description: "Books things", Input: swarm.InputOf[order]()}}}
						c := &swarm.Agent{Name: "captain", Instructions: "Route."}
						if err := c.Absorb(booker); err != nil {
							t.Fatal(err)
						}
						return swarm.Captain(c)
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
					d := &dying{Store: st, after: after}
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
	if err := a.Absorb(b); err != nil {
		t.Fatal(err)
	}
	if err := b.Absorb(a); err != nil {
		t.Fatal(err)
	}
	captain := &swarm.Agent{Name: "captain", Instructions: "Route."}
	if err := captain.Absorb(a); err != nil {
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
	_, run, err := swarm.Captain(captain).Run(ctx, rt, "go")
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
	newShop := func() *swarm.Agent {
		return &swarm.Agent{Name: "shop", Instructions: "You run a shop.", Skills: []swarm.Skill{
			{Name: "ask"}, {Name: "restock", Instructions: "Only restock."},
		}}
	}
	for _, tc := range []struct {
		name string
		// captain and the calls of its model and of mid's.
		captain func(shop, other *swarm.Agent) *swarm.Agent
		script  scripted.Script
	}{{
		name: "skill first",
		captain: func(shop, other *swarm.Agent) *swarm.Agent {
			c := &swarm.Agent{Name: "captain", Instructions: "Route.", Handoffs: []swarm.Handoff{swarm.ToAgent(other)}}
			if err := c.Absorb(shop); err != nil {
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
		captain: func(shop, other *swarm.Agent) *swarm.Agent {
			mid := &swarm.Agent{Name: "mid", Instructions: "Relay."}
			if err := mid.Absorb(shop); err != nil {
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
			rec := &convRecorder{m: scripted.New(tc.script)}
			rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: rec.model()})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			if _, _, err := swarm.Captain(tc.captain(newShop(), other)).Run(ctx, rt, "go"); err != nil {
				t.Fatalf("run: %v", err)
			}
			if rs := rec.requests("shop__restock"); len(rs) != 1 || rs[0].System != "I am a different agent." {
				t.Errorf("the agent shop__restock was asked %d times; want once, with its own instructions", len(rs))
			}
			if rs := rec.requests("shop"); len(rs) != 1 || !strings.Contains(rs[0].System, "Only restock.") {
				t.Errorf("the skill restock of shop was asked %d times; want once, with the instructions of the skill", len(rs))
			}
		})
	}
}

// schemaTool is a remote tool (an MCP server's, say) with a given schema.
type schemaTool struct{ name, schema string }

func (t schemaTool) Name() string            { return t.name }
func (t schemaTool) Description() string     { return "" }
func (t schemaTool) Schema() json.RawMessage { return json.RawMessage(t.schema) }
func (t schemaTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return "ok", nil
}

// TestAbsorbObjectSchemaForms: a remote tool whose schema has no type
// ({} included, as MCP servers may declare) takes an object, as tool
// arguments always are; an input schema whose type is ["object"] or
// ["object", "null"] is an object too. Each is offered to the captain's
// model with type "object"; other types are still refused.
func TestAbsorbObjectSchemaForms(t *testing.T) {
	remote := &swarm.Agent{Name: "srv", Skills: []swarm.Skill{
		{Name: "typed", Remote: schemaTool{"srv__typed", `{"type":"object"}`}},
		{Name: "empty", Remote: schemaTool{"srv__empty", `{}`}},
		{Name: "null", Remote: schemaTool{"srv__null", `null`}},
		{Name: "untyped", Remote: schemaTool{"srv__untyped", `{"properties":{"q":{"type":"string"}},"required":["q"]}`}},
	}}
	local := &swarm.Agent{Name: "loc", Skills: []swarm.Skill{
		{Name: "one", Input: swarm.InputSchema(json.RawMessage(`{"type":["object"],"properties":{"n":{"type":"integer"}}}`))},
		{Name: "nullable", Input: swarm.InputSchema(json.RawMessage(`{"type":["object","null"]}`))},
	}}
	captain := &swarm.Agent{Name: "captain"}
	if err := captain.Absorb(remote, local); err != nil {
		t.Fatal(err)
	}
	for _, tool := range captain.Tools {
		var s struct {
			Type       any            `json:"type"`
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(tool.Schema(), &s); err != nil || s.Type != "object" {
			t.Errorf("tool %s has the schema %s; want type object", tool.Name(), tool.Schema())
		}
		if (tool.Name() == "srv__untyped" || tool.Name() == "loc__one") && len(s.Properties) != 1 {
			t.Errorf("tool %s lost its properties: %s", tool.Name(), tool.Schema())
		}
	}
	for _, schema := range []string{`{"type":["string","null"]}`, `{"type":"array"}`, `{"type":["object","array"]}`} {
		c := &swarm.Agent{Name: "captain"}
		err := c.Absorb(&swarm.Agent{Name: "x", Skills: []swarm.Skill{{Name: "s", Input: swarm.InputSchema(json.RawMessage(schema))}}})
		if !errors.Is(err, swarm.ErrIncompatible) {
			t.Errorf("input schema %s: %v; want ErrIncompatible", schema, err)
		}
	}
	// A remote tool with a typed non-object schema is refused too.
	c := &swarm.Agent{Name: "captain"}
	if err := c.Absorb(&swarm.Agent{Name: "y", Skills: []swarm.Skill{{Name: "s", Remote: schemaTool{"y__s", `{"type":"string"}`}}}}); !errors.Is(err, swarm.ErrIncompatible) {
		t.Errorf("remote string schema: %v; want ErrIncompatible", err)
	}
}

// TestCaptainAbsorbedBackIsRefusedAtRegister: a captain that an agent it
// absorbs absorbs back (or hands off to) cannot run below itself; that is
// reported when its swarm is registered, not at its first run.
func TestCaptainAbsorbedBackIsRefusedAtRegister(t *testing.T) {
	a := &swarm.Agent{Name: "a", Instructions: "A."}
	b := &swarm.Agent{Name: "b", Instructions: "B."}
	c := &swarm.Agent{Name: "c", Instructions: "C.", Handoffs: []swarm.Handoff{swarm.ToAgent(a)}}
	for _, step := range [][2]*swarm.Agent{{a, b}, {b, c}} {
		if err := step[0].Absorb(step[1]); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	err = rt.Register(swarm.Captain(a))
	if !errors.Is(err, swarm.ErrDuplicate) || !strings.Contains(err.Error(), `c hands off to "a"`) {
		t.Errorf("register a captain that c, which it absorbs through b, hands off to: %v", err)
	}
	// b, c and the handoff back to a are fine below another captain.
	if err := rt.Register(swarm.Captain(b)); err == nil {
		t.Error("b absorbs c which hands off to a which absorbs b: registered")
	}
	d := &swarm.Agent{Name: "d", Instructions: "D."}
	if err := d.Absorb(a); err != nil {
		t.Fatal(err)
	}
	if err := rt.Register(swarm.Captain(d)); err != nil {
		t.Errorf("d absorbing the cycle of a, b and c: %v", err)
	}
}
