package conversation_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation/conversationtest"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// A handoff to a conversation is refused when a run planning it starts,
// with an error that says why: a conversation's run awaits a user's
// messages one after another and never returns a result, so the run
// handing off to it would wait for it forever. By id (the conversation
// registered) or by value, from a swarm or from an agent it hands off to.
func TestHandoffToConversationIsRefused(t *testing.T) {
	desk := &swarm.Agent{Name: "clerk", Instructions: "route", Handoffs: []swarm.Handoff{swarm.ToSwarmID("shop")}}
	for name, handoff := range map[string][]swarm.Handoff{
		"by id":    {swarm.ToSwarmID("shop")},
		"by value": {swarm.ToSwarm(shop(conversationtest.NewEffects(), nil))},
		"agent's":  {swarm.ToAgent(desk)},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{
				"desk": {scripted.Tools(scripted.CallTool("handoff_to_shop", map[string]any{"input": map[string]any{}})), scripted.Text("done")},
			})})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			if name != "by value" {
				if err := rt.Register(shop(conversationtest.NewEffects(), nil)); err != nil {
					t.Fatal(err)
				}
			}
			def := swarm.Define[string, string]("desk", "", func(string) swarm.Spec {
				return swarm.Spec{Instructions: "route", Handoffs: handoff}
			})
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}
			id, err := rt.Start(ctx, "desk", []byte(`"hello"`))
			if !errors.Is(err, swarm.ErrInvalid) || !strings.Contains(err.Error(), `"shop", which cannot be a handoff target: a conversation`) {
				t.Fatalf("start: run %q, error %v; want the handoff to the conversation refused", id, err)
			}
		})
	}
}

// A conversation found in the registry is no handoff target either: the
// model's swarm_registry_handoff to it gets an error result saying why,
// and no child run starts.
func TestRegistryHandoffToConversationIsRefused(t *testing.T) {
	ctx := ctxT(t)
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{
		"concierge": {
			scripted.Tools(scripted.CallTool("swarm_registry_search", map[string]any{"query": "a shop's front desk"})),
			scripted.Tools(scripted.CallTool("swarm_registry_handoff", map[string]any{"swarm_id": "shop", "request": "hello"})),
			scripted.Text("The shop cannot be asked."),
		},
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(shop(conversationtest.NewEffects(), nil)); err != nil {
		t.Fatal(err)
	}
	concierge := swarm.Define[string, string]("concierge", "Does whatever is asked through the registry", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Find a swarm for the task.", Registry: &swarm.RegistryAccess{}}
	})
	res, run, err := concierge.Run(ctx, rt, "talk to the shop")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "The shop cannot be asked." {
		t.Fatalf("%#v", res)
	}
	evs, err := rt.History(ctx, run.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, e := range evs {
		switch e.Type {
		case swarm.EventToolResult:
			outs = append(outs, e.Output)
		case swarm.EventHandoffStarted:
			t.Errorf("a child run started: %+v", e)
		}
	}
	if len(outs) != 2 || !strings.Contains(outs[0], `"id":"shop"`) || !strings.Contains(outs[1], `swarm "shop" cannot be a handoff target: a conversation`) {
		t.Errorf("tool results:\n%s", strings.Join(outs, "\n"))
	}
}
