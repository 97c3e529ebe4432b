package swarm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
)

func TestDeltasArriveInOrderAttributedToTheirAgent(t *testing.T) {
	rt, _ := newRuntime(t, scripted.Script{
		"planner": {
			{ToolCalls: []scripted.ToolCall{scripted.CallTool("handoff_to_weather", map[string]any{"request": "forecast"})}, Delay: 100 * time.Millisecond},
			scripted.Text(`{"activity": "a long walk along the river", "day": "Sunday"}`),
		},
		"weather": {scripted.Text("Sunny all weekend with a light breeze from the west.")},
	}, nil)
	ctx := ctxT(t)
	run, err := planner().Start(ctx, rt, "outdoors")
	if err != nil {
		t.Fatal(err)
	}
	var text = map[string]*strings.Builder{}
	var order []string
	for ev, err := range run.Events(ctx, 0, swarm.WithDeltas()) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case swarm.EventDelta:
			if ev.Seq != 0 || ev.RunID != run.ID() {
				t.Errorf("delta %+v", ev)
			}
			if text[ev.Agent] == nil {
				text[ev.Agent] = &strings.Builder{}
			}
			text[ev.Agent].WriteString(ev.Text)
			if len(order) == 0 || order[len(order)-1] != "delta:"+ev.Agent {
				order = append(order, "delta:"+ev.Agent)
			}
		case swarm.EventModelResponse:
			order = append(order, "response:"+ev.Agent)
			if b := text[ev.Agent]; ev.Text != "" && (b == nil || b.String() != ev.Text) {
				t.Errorf("%s: deltas %q, response %q", ev.Agent, b, ev.Text)
			}
			delete(text, ev.Agent)
		}
	}
	want := "response:planner delta:weather response:weather delta:planner response:planner"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("order:\n got %s\nwant %s", got, want)
	}
}
