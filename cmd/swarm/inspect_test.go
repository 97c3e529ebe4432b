package main_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/inspect"
)

// TestInspectPrintsTheRequest: swarm inspect RUN KEY prints the request a
// model call sent, as JSON, and runs no tool to rebuild it; an unknown run,
// an unknown step and a step that is not a model call exit 2.
func TestInspectPrintsTheRequest(t *testing.T) {
	dir := workdir(t)
	if _, code := run(t, dir, "run", "-q", "--id", "trip-1", "trip", "two people"); code != 0 {
		t.Fatalf("run exit %d", code)
	}
	invocations := lines(t, filepath.Join(dir, "invocations.log"))
	out, code := run(t, dir, "inspect", "trip-1", "t2/model")
	if code != 0 {
		t.Fatalf("inspect exit %d: %s", code, out)
	}
	var req inspect.Request
	if err := json.Unmarshal([]byte(out), &req); err != nil {
		t.Fatalf("inspect output %q: %v", out, err)
	}
	if req.Agent != "trip" || !strings.Contains(req.System, "Plan the trip for two people.") {
		t.Errorf("agent %q, system %q", req.Agent, req.System)
	}
	var tools []string
	for _, d := range req.Tools {
		tools = append(tools, d.Name)
	}
	if !slices.Contains(tools, "book") || !slices.Contains(tools, "handoff_to_weather") {
		t.Errorf("tools %v", tools)
	}
	// The first round's call, its two results: the request of round 2.
	if len(req.Messages) != 4 || req.Messages[0].Content != "two people" || len(req.Messages[1].ToolCalls) != 2 {
		t.Errorf("messages %+v", req.Messages)
	}
	if req.Tokens.Estimate != "chars/4" || req.Tokens.Total <= 0 || req.Check != inspect.Verified {
		t.Errorf("tokens %+v", req.Tokens)
	}
	if got := lines(t, filepath.Join(dir, "invocations.log")); len(got) != len(invocations) {
		t.Errorf("inspect ran tools: %d invocations, %d before", len(got), len(invocations))
	}
	for _, args := range [][]string{{"nope", "t1/model"}, {"trip-1", "t9/model"}, {"trip-1", "t1/done"}} {
		if out, code := run(t, dir, append([]string{"inspect"}, args...)...); code != 2 {
			t.Errorf("inspect %v: exit %d, %s", args, code, out)
		}
	}
}
