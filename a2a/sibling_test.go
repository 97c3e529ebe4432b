package a2a_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// TestSiblingAbsorbed absorbs an agent served by another runtime over A2A
// into a captain: it passes the checks a local sibling passes, gets a tool
// of the same shape (named after it, taking a request) and answers calls
// from its own process.
func TestSiblingAbsorbed(t *testing.T) {
	remote := newEnv(t, a2a.Options{}, nil)
	helper, err := a2a.Sibling("helper", "Says hello back", remote.srv.URL+"/a2a/echo")
	if err != nil {
		t.Fatal(err)
	}
	// The same checks as a local sibling.
	if err := absorb.Into(&swarm.Agent{Name: "helper"}, helper); !errors.Is(err, swarm.ErrInvalid) {
		t.Errorf("absorbed into an agent of its own name: %v", err)
	}
	if err := absorb.Into(&swarm.Agent{Name: "boss", Tools: []swarm.Tool{helper.Skills[0].Remote}}, absorb.Sibling{Agent: &swarm.Agent{Name: "delegate_to_helper"}}); !errors.Is(err, swarm.ErrDuplicate) {
		t.Errorf("absorbed over a tool of its name: %v", err)
	}

	boss := &swarm.Agent{Name: "boss", Instructions: "Delegate."}
	if err := absorb.Into(boss, helper); err != nil {
		t.Fatal(err)
	}
	remoteTool := boss.Tools[0]
	if remoteTool.Name() != "helper" || !strings.Contains(remoteTool.Description(), `"helper" agent: Says hello back`) ||
		!strings.Contains(string(remoteTool.Schema()), `"request"`) {
		t.Errorf("tool %s %q %s", remoteTool.Name(), remoteTool.Description(), remoteTool.Schema())
	}

	def := absorb.Captain(boss)
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"boss": {
		scripted.Tools(scripted.CallTool("helper", map[string]any{})),
		scripted.Tools(scripted.CallTool("helper", map[string]any{"request": "say hello"})),
		scripted.Text("boss done"),
	}}, def)
	ctx := swarmtest.Context(t)
	res, run, err := def.Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "boss done" {
		t.Fatalf("result %#v", res)
	}
	var results []swarm.Event
	for _, ev := range swarmtest.Events(t, rt, run.ID()) {
		if ev.Type == swarm.EventToolResult && ev.Tool == "helper" {
			results = append(results, ev)
		}
	}
	if len(results) != 2 || !results[0].IsError || !strings.Contains(results[0].Output, "request") ||
		results[1].IsError || !strings.Contains(results[1].Output, "hello back") || results[1].Agent != "boss" {
		t.Fatalf("results %+v", results)
	}
	// Only the valid call reached the remote agent.
	if runs, err := remote.rt.List(ctx, swarmFilter("echo")); err != nil || len(runs) != 1 {
		t.Errorf("remote echo runs = %v, %v", runs, err)
	}
}
