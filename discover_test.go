package swarm_test

import (
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
)

func TestRegistryDiscoveryAndHandoff(t *testing.T) {
	rt, rec := newRecorded(t, scripted.Script{
		"concierge": {
			scripted.Tools(scripted.CallTool("swarm_registry_handoff", map[string]any{"swarm_id": "ticketing", "request": `{"event":"x","seats":1}`})),
			scripted.Tools(scripted.CallTool("swarm_registry_search", map[string]any{"query": "buy tickets for a concert"})),
			scripted.Tools(scripted.CallTool("swarm_registry_handoff", map[string]any{"swarm_id": "ticketing", "request": `{"event":"concert","seats":2}`})),
			scripted.Text("Booked."),
		},
		"ticketing": {scripted.Text(`{"confirmation":"T-2"}`)},
	}, swarm.Config{})
	refunds := swarm.Define[string, string]("refunds", "Refunds payments and settles billing disputes", nil).WithTags("billing")
	if err := rt.Register(ticketing().WithTags("events"), refunds); err != nil {
		t.Fatal(err)
	}
	concierge := swarm.Define[string, string]("concierge", "Does whatever is asked through the registry", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Find a swarm for the task.", Registry: &swarm.RegistryAccess{}}
	})
	ctx := ctxT(t)
	res, run, err := concierge.Run(ctx, rt, "two concert tickets")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "Booked." {
		t.Fatalf("%#v", res)
	}
	if got := toolNames(rec.last("concierge")); got != "pause,fail,swarm_registry_search,swarm_registry_handoff" {
		t.Errorf("tools %s", got)
	}
	evs, _ := rt.History(ctx, run.ID(), 0)
	var outs []string
	for _, e := range evs {
		if e.Type == swarm.EventToolResult || e.Type == swarm.EventHandoffReturned {
			outs = append(outs, e.Output)
		}
	}
	if len(outs) != 3 || !strings.Contains(outs[0], "was not returned by swarm_registry_search") ||
		!strings.HasPrefix(outs[1], `{"swarms":[{"id":"ticketing"`) || strings.Contains(outs[1], "concierge") || outs[2] != `{"confirmation":"T-2"}` {
		t.Errorf("outputs:\n%s", strings.Join(outs, "\n"))
	}
	kids := children(t, rt, run.ID())
	if len(kids) != 1 || kids[0].Swarm != "ticketing" {
		t.Errorf("children %+v", kids)
	}
}

func TestRegistryAccessIsRestricted(t *testing.T) {
	rt, _ := newRecorded(t, scripted.Script{
		"concierge": {
			scripted.Tools(scripted.CallTool("swarm_registry_search", map[string]any{"query": "tickets"})),
			scripted.Tools(scripted.CallTool("swarm_registry_handoff", map[string]any{"swarm_id": "ticketing", "request": `{}`})),
			scripted.Text("no"),
		},
	}, swarm.Config{})
	if err := rt.Register(ticketing().WithTags("events")); err != nil {
		t.Fatal(err)
	}
	concierge := swarm.Define[string, string]("concierge", "", func(string) swarm.Spec {
		return swarm.Spec{Registry: &swarm.RegistryAccess{Allow: []string{"tag:billing"}}}
	})
	ctx := ctxT(t)
	_, run, err := concierge.Run(ctx, rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := rt.History(ctx, run.ID(), 0)
	var outs []string
	for _, e := range evs {
		if e.Type == swarm.EventToolResult {
			outs = append(outs, e.Output)
		}
	}
	if len(outs) != 2 || outs[0] != `{"swarms":[]}` || !strings.Contains(outs[1], "was not returned") {
		t.Errorf("outputs %q", outs)
	}
	// The registry lists swarms with what they can do.
	e, ok := rt.Registry().Get("concierge")
	if !ok || e.Kind != "swarm" {
		t.Errorf("concierge entry %+v", e)
	}
}
