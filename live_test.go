package swarm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
)

func TestDeltasArriveInOrderAttributedToTheirAgent(t *testing.T) {
	// The first step waits on a gate that opens once the subscriber
	// below is following, so no delta is published before it listens.
	gate := make(chan struct{})
	wait := swarm.NewTool("wait", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return "ok", nil
	})
	rt, _ := newRuntime(t, scripted.Script{
		"gated": {
			scripted.Tools(scripted.CallTool("wait", map[string]any{})),
			scripted.Tools(scripted.CallTool("handoff_to_weather", map[string]any{"request": "forecast"})),
			scripted.Text(`{"activity": "a long walk along the river", "day": "Sunday"}`),
		},
		"weather": {scripted.Text("Sunny all weekend with a light breeze from the west.")},
	}, nil)
	ctx := ctxT(t)
	gated := swarm.Define[string, Activity]("gated", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{wait}, Handoffs: []swarm.Handoff{swarm.ToAgent(weather)}}
	})
	run, err := gated.Start(ctx, rt, "outdoors")
	if err != nil {
		t.Fatal(err)
	}
	opened := false
	var text = map[string]*strings.Builder{}
	var order []string
	for ev, err := range run.Events(ctx, 0, swarm.WithDeltas()) {
		if err != nil {
			t.Fatal(err)
		}
		if !opened {
			opened = true
			close(gate)
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
	want := "response:gated response:gated delta:weather response:weather delta:gated response:gated"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("order:\n got %s\nwant %s", got, want)
	}
}
