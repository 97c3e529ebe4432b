package absorb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

func TestProvide(t *testing.T) {
	build := func(name string) func() *swarm.Agent {
		return func() *swarm.Agent { return &swarm.Agent{Name: name, Instructions: "x"} }
	}
	absorb.Provide(absorb.Provider{ID: "providetest.b.zeta", Description: "Zeta", Build: build("")})
	absorb.Provide(absorb.Provider{ID: "providetest.a.alpha", Description: "Alpha", Build: build("alpha"),
		Skills: []absorb.Skill{{Name: "first", Description: "One", Input: absorb.InputOf[struct {
			N int `json:"n"`
		}]()}}})
	for _, tc := range []struct {
		name string
		p    absorb.Provider
		want string
	}{
		{"duplicate", absorb.Provider{ID: "providetest.a.alpha", Build: build("alpha")}, "called twice"},
		{"no namespace", absorb.Provider{ID: "alpha", Build: build("alpha")}, "needs a namespace"},
		{"bad label", absorb.Provider{ID: "providetest.al pha", Build: build("alpha")}, "may contain only"},
		{"empty label", absorb.Provider{ID: "providetest..alpha", Build: build("alpha")}, "empty name"},
		{"nil build", absorb.Provider{ID: "providetest.nobuild"}, "nil Build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(fmt.Sprint(p), tc.want) {
					t.Fatalf("Provide panicked with %v, want %q", p, tc.want)
				}
			}()
			absorb.Provide(tc.p)
		})
	}

	// Listed without being built, sorted by id, in its namespace only.
	ps := absorb.Providers("providetest")
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
	if got := absorb.Providers("providetest.b"); len(got) != 1 || got[0].ID != "providetest.b.zeta" {
		t.Errorf("providers of providetest.b: %v", got)
	}
	if got := absorb.Providers("providetest.a.al"); len(got) != 0 {
		t.Errorf("a namespace is matched by whole labels, got %v", got)
	}

	// Built fresh in the same order each time, filled in from the provider.
	for range 3 {
		agents, err := absorb.Discover("providetest")
		if err != nil {
			t.Fatal(err)
		}
		if len(agents) != 2 || agents[0].Name != "alpha" || agents[1].Name != "zeta" || agents[1].Description != "Zeta" || len(agents[0].Skills) != 1 {
			t.Fatalf("discovered %+v", agents)
		}
	}
	a1, _ := absorb.Discover("providetest")
	a2, _ := absorb.Discover("providetest")
	if a1[0].Agent == a2[0].Agent {
		t.Error("Discover returned the same agent twice; want a new one per call")
	}

	// Agents that do not match their provider are refused.
	absorb.Provide(absorb.Provider{ID: "providebad.x.wrong", Build: build("other")})
	absorb.Provide(absorb.Provider{ID: "providebad.y.nil", Build: func() *swarm.Agent { return nil }})
	for ns, want := range map[string]string{"providebad.x": `named "other"`, "providebad.y": "built no agent"} {
		if got, err := absorb.Discover(ns); !errors.Is(err, swarm.ErrInvalid) || !strings.Contains(err.Error(), want) || got != nil {
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
		siblings func(c *swarm.Agent) []absorb.Sibling
		is       error
		want     string
	}{
		{"self", func(c *swarm.Agent) []absorb.Sibling { return []absorb.Sibling{{Agent: c}} }, swarm.ErrInvalid, "cannot absorb itself"},
		{"same name", func(*swarm.Agent) []absorb.Sibling { return []absorb.Sibling{{Agent: &swarm.Agent{Name: "captain"}}} }, swarm.ErrInvalid, "cannot absorb itself"},
		{"nil", func(*swarm.Agent) []absorb.Sibling { return []absorb.Sibling{{}} }, swarm.ErrInvalid, "nil agent"},
		{"tool collision", func(*swarm.Agent) []absorb.Sibling { return []absorb.Sibling{{Agent: &swarm.Agent{Name: "lookup"}}} }, swarm.ErrDuplicate, `already has a tool named "lookup"`},
		{"twice", func(*swarm.Agent) []absorb.Sibling {
			s := absorb.Sibling{Agent: &swarm.Agent{Name: "sib"}}
			return []absorb.Sibling{s, s}
		}, swarm.ErrDuplicate, `already has a tool named "sib"`},
		{"two agents one name", func(*swarm.Agent) []absorb.Sibling {
			return []absorb.Sibling{{Agent: &swarm.Agent{Name: "sib"}}, {Agent: &swarm.Agent{Name: "sib"}}}
		}, swarm.ErrDuplicate, `already has a tool named "sib"`},
		{"handoff collision", func(*swarm.Agent) []absorb.Sibling { return []absorb.Sibling{{Agent: &swarm.Agent{Name: "clerk"}}} }, swarm.ErrDuplicate, "hands off to a different agent"},
		{"reserved", func(*swarm.Agent) []absorb.Sibling { return []absorb.Sibling{{Agent: &swarm.Agent{Name: "complete"}}} }, swarm.ErrInvalid, "reserved"},
		{"bad name", func(*swarm.Agent) []absorb.Sibling { return []absorb.Sibling{{Agent: &swarm.Agent{Name: "a.b"}}} }, swarm.ErrInvalid, "may contain only"},
		{"int input", func(*swarm.Agent) []absorb.Sibling {
			return []absorb.Sibling{{Agent: &swarm.Agent{Name: "sib"}, Skills: []absorb.Skill{{Name: "count", Input: absorb.InputOf[int]()}}}}
		}, absorb.ErrIncompatible, "takes integer"},
		{"slice input", func(*swarm.Agent) []absorb.Sibling {
			return []absorb.Sibling{{Agent: &swarm.Agent{Name: "sib"}, Skills: []absorb.Skill{{Name: "a"}, {Name: "list", Input: absorb.InputOf[[]order]()}}}}
		}, absorb.ErrIncompatible, "skill list of agent sib, whose input is []absorb_test.order, takes null or array"},
		{"unschematic input", func(*swarm.Agent) []absorb.Sibling {
			return []absorb.Sibling{{Agent: &swarm.Agent{Name: "sib"}, Skills: []absorb.Skill{{Name: "c", Input: absorb.InputOf[chan int]()}}}}
		}, absorb.ErrIncompatible, "chan int"},
		{"duplicate skill", func(*swarm.Agent) []absorb.Sibling {
			return []absorb.Sibling{{Agent: &swarm.Agent{Name: "sib"}, Skills: []absorb.Skill{{Name: "a"}, {Name: "a"}}}}
		}, swarm.ErrDuplicate, `skill "a" appears twice`},
		{"unknown skill tool", func(*swarm.Agent) []absorb.Sibling {
			return []absorb.Sibling{{Agent: &swarm.Agent{Name: "sib"}, Skills: []absorb.Skill{{Name: "a", Tools: []string{"nope"}}}}}
		}, swarm.ErrInvalid, `names tool "nope"`},
		{"remote with input", func(*swarm.Agent) []absorb.Sibling {
			return []absorb.Sibling{{Agent: &swarm.Agent{Name: "sib"}, Skills: []absorb.Skill{{Name: "a", Remote: lookup, Input: absorb.InputOf[order]()}}}}
		}, swarm.ErrInvalid, "both a remote tool and an input type"},
		{"skill tool name too long", func(*swarm.Agent) []absorb.Sibling {
			return []absorb.Sibling{{Agent: &swarm.Agent{Name: strings.Repeat("s", 40)}, Skills: []absorb.Skill{{Name: "a"}, {Name: strings.Repeat("k", 30)}}}}
		}, swarm.ErrInvalid, "longer than 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fresh()
			err := absorb.Into(c, tc.siblings(c)...)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Absorb: %v; want %v and %q", err, tc.is, tc.want)
			}
			if len(c.Tools) != 1 {
				t.Errorf("a refused Absorb changed the captain's tools: %d", len(c.Tools))
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
	remote := absorb.Sibling{Agent: &swarm.Agent{Name: "srv"}, Skills: []absorb.Skill{
		{Name: "typed", Remote: schemaTool{"srv__typed", `{"type":"object"}`}},
		{Name: "empty", Remote: schemaTool{"srv__empty", `{}`}},
		{Name: "null", Remote: schemaTool{"srv__null", `null`}},
		{Name: "untyped", Remote: schemaTool{"srv__untyped", `{"properties":{"q":{"type":"string"}},"required":["q"]}`}},
	}}
	local := absorb.Sibling{Agent: &swarm.Agent{Name: "loc"}, Skills: []absorb.Skill{
		{Name: "one", Input: absorb.InputSchema(json.RawMessage(`{"type":["object"],"properties":{"n":{"type":"integer"}}}`))},
		{Name: "nullable", Input: absorb.InputSchema(json.RawMessage(`{"type":["object","null"]}`))},
	}}
	captain := &swarm.Agent{Name: "captain"}
	if err := absorb.Into(captain, remote, local); err != nil {
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
		err := absorb.Into(c, absorb.Sibling{Agent: &swarm.Agent{Name: "x"}, Skills: []absorb.Skill{{Name: "s", Input: absorb.InputSchema(json.RawMessage(schema))}}})
		if !errors.Is(err, absorb.ErrIncompatible) {
			t.Errorf("input schema %s: %v; want ErrIncompatible", schema, err)
		}
	}
	// A remote tool with a typed non-object schema is refused too.
	c := &swarm.Agent{Name: "captain"}
	if err := absorb.Into(c, absorb.Sibling{Agent: &swarm.Agent{Name: "y"}, Skills: []absorb.Skill{{Name: "s", Remote: schemaTool{"y__s", `{"type":"string"}`}}}}); !errors.Is(err, absorb.ErrIncompatible) {
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
		if err := absorb.Into(step[0], absorb.Sibling{Agent: step[1]}); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	err = rt.Register(absorb.Captain(a))
	if !errors.Is(err, swarm.ErrDuplicate) || !strings.Contains(err.Error(), `c hands off to "a"`) {
		t.Errorf("register a captain that c, which it absorbs through b, hands off to: %v", err)
	}
	// b, c and the handoff back to a are fine below another captain.
	if err := rt.Register(absorb.Captain(b)); err == nil {
		t.Error("b absorbs c which hands off to a which absorbs b: registered")
	}
	d := &swarm.Agent{Name: "d", Instructions: "D."}
	if err := absorb.Into(d, absorb.Sibling{Agent: a}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Register(absorb.Captain(d)); err != nil {
		t.Errorf("d absorbing the cycle of a, b and c: %v", err)
	}
}
