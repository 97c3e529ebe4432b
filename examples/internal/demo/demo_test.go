package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// A handoff whose request spans several lines keeps the progress's column:
// its next lines are indented under the first, never at the margin where
// they would read as lines of their own.
func TestFollowIndentsMultilineText(t *testing.T) {
	out := followScript(t, scripted.Script{
		"lead":   {scripted.Tools(scripted.CallTool("handoff_to_helper", map[string]any{"request": "Topic: bees\nResearch:\n- hives"})), scripted.Text("done")},
		"helper": {scripted.Text("first line\nsecond line")},
	}, "helper")
	for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if !strings.HasPrefix(l, "  ") {
			t.Errorf("a line at the margin: %q in\n%s", l, out.String())
		}
	}
	if !strings.Contains(out.String(), "hands off to helper: Topic: bees\n") || !strings.Contains(out.String(), "\n"+strings.Repeat(" ", 21)+"Research:") {
		t.Errorf("the multi-line request is not indented under its first line:\n%s", out.String())
	}
}

// Handoffs made at once return in any order; each answer says which
// request it answers, so that a slow first answer printed after a fast
// second one is not read as the second's.
func TestFollowPairsAnswersWithTheirRequests(t *testing.T) {
	out := followScript(t, scripted.Script{
		"lead": {scripted.Tools(
			scripted.CallTool("handoff_to_slow", map[string]any{"request": "question one"}),
			scripted.CallTool("handoff_to_fast", map[string]any{"request": "question two"})),
			scripted.Text("done")},
		"slow": {{Text: "answer one", Delay: 300 * time.Millisecond}},
		"fast": {scripted.Text("answer two")},
	}, "slow", "fast")
	for _, want := range []string{`gets slow's answer to "question one": answer one`, `gets fast's answer to "question two": answer two`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no line %q in\n%s", want, out.String())
		}
	}
}

// ByRequest answers by the question asked, and leaves other agents' calls
// to the model it wraps.
func TestByRequest(t *testing.T) {
	ctx := context.Background()
	m := ByRequest(scripted.New(scripted.Script{"other": {scripted.Text("scripted")}}), "asked", map[string]string{"a?": "A", "b?": "B"})
	for q, want := range map[string]string{"a?": "A", "b?": "B"} {
		res, err := m.Generate(ctx, &model.Request{Agent: "asked", Messages: []model.Message{{Role: model.RoleUser, Content: q}}})
		if err != nil || res.Message.Content != want {
			t.Errorf("%s: %+v, %v; want %s", q, res, err, want)
		}
	}
	if _, err := m.Generate(ctx, &model.Request{Agent: "asked", Messages: []model.Message{{Role: model.RoleUser, Content: "c?"}}}); err == nil {
		t.Error("a question without an answer was answered")
	}
	if res, err := m.Generate(ctx, &model.Request{Agent: "other"}); err != nil || res.Message.Content != "scripted" {
		t.Errorf("another agent's call: %+v, %v", res, err)
	}
}

// followScript runs a swarm "lead" that may hand off to the named agents, on
// script, and returns what Follow printed of it.
func followScript(t *testing.T, script scripted.Script, agents ...string) *bytes.Buffer {
	t.Helper()
	ctx := context.Background()
	var handoffs []swarm.Handoff
	for _, a := range agents {
		handoffs = append(handoffs, swarm.ToAgent(&swarm.Agent{Name: a, Description: a, Instructions: "answer"}))
	}
	s := swarm.Define[string, string]("lead", "leads", func(string) swarm.Spec { return swarm.Spec{Handoffs: handoffs} })
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(script)})
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
	return &out
}
