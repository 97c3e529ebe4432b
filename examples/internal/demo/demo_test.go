package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// A handoff whose request spans several lines keeps the progress's column:
// its next lines are indented under the first, never at the margin where
// they would read as lines of their own.
func TestFollowIndentsMultilineText(t *testing.T) {
	ctx := context.Background()
	helper := &swarm.Agent{Name: "helper", Description: "helps", Instructions: "help"}
	s := swarm.Define[string, string]("lead", "leads", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(helper)}}
	})
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{
		"lead":   {scripted.Tools(scripted.CallTool("handoff_to_helper", map[string]any{"request": "Topic: bees\nResearch:\n- hives"})), scripted.Text("done")},
		"helper": {scripted.Text("first line\nsecond line")},
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	run, err := s.Start(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	Follow(ctx, &out, rt, run.ID(), 0)
	for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if !strings.HasPrefix(l, "  ") {
			t.Errorf("a line at the margin: %q in\n%s", l, out.String())
		}
	}
	if !strings.Contains(out.String(), "hands off to helper: Topic: bees\n") || !strings.Contains(out.String(), "\n"+strings.Repeat(" ", 21)+"Research:") {
		t.Errorf("the multi-line request is not indented under its first line:\n%s", out.String())
	}
}
