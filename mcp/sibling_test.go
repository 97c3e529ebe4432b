package mcp_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// TestSiblingAbsorbed absorbs an MCP server run as another process: each of
// its tools is a skill, offered to the captain as <agent>__<skill> with the
// tool's schema, which the captain's arguments are checked against before
// the call crosses the process boundary.
func TestSiblingAbsorbed(t *testing.T) {
	ctx := swarmtest.Context(t)
	ts := stdioCalc("calcsrv")
	ts.Allow = []string{"add", "boom"}
	t.Cleanup(func() { ts.Close() })
	calc, err := ts.Sibling(ctx, "calc", "Does arithmetic")
	if err != nil {
		t.Fatal(err)
	}
	if err := absorb.Into(&swarm.Agent{Name: "calc"}, calc); !errors.Is(err, swarm.ErrInvalid) {
		t.Errorf("absorbed into an agent of its own name: %v", err)
	}
	boss := &swarm.Agent{Name: "boss", Instructions: "Compute."}
	if err := absorb.Into(boss, calc); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(boss.Tools); !slices.Equal(got, []string{"calc__add", "calc__boom"}) {
		t.Fatalf("tools %v", got)
	}
	if d := boss.Tools[0].Description(); !strings.Contains(d, `"calc" agent's skill "add": Adds a and b`) {
		t.Errorf("description %q", d)
	}
	def := absorb.Captain(boss)
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"boss": {
		scripted.Tools(
			scripted.CallTool("calc__add", map[string]any{"a": "two"}),
			scripted.CallTool("calc__add", map[string]any{"a": 2, "b": 3}),
		),
		scripted.Text("5"),
	}}, def)
	_, run, err := def.Run(ctx, rt, "2+3")
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, ev := range swarmtest.Events(t, rt, run.ID()) {
		if ev.Type == swarm.EventToolResult && ev.Tool == "calc__add" {
			outs = append(outs, ev.CallID+" "+ev.Output)
		}
	}
	slices.Sort(outs)
	if len(outs) != 2 || !strings.Contains(outs[0], "invalid arguments for tool calc__add") || !strings.HasSuffix(outs[1], " 5") {
		t.Fatalf("results %q", outs)
	}
}
