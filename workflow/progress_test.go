package workflow_test

import (
	"context"
	"testing"

	"github.com/swarmrt/swarm/workflow"
)

// A workflow run's progress counts the nodes that finished, and names the
// one it is at; a run that is not a workflow's has none.
func TestRunProgress(t *testing.T) {
	fetch := workflow.Func("fetch", func(_ context.Context, in string) (string, error) { return in, nil })
	ask := workflow.Human[string, string]("approve", 1, func(s string) string { return s })
	edit := workflow.Agent[string, string](agent("editor"))
	def := workflow.Define("progressing", "three nodes", workflow.Seq(fetch, ask, edit))
	rt, id, _ := run(t, def, nil, `"x"`)
	ctx := context.Background()
	if p, ok := workflow.ProgressOf(ctx, rt, id); !ok || p != (workflow.Progress{Done: 1, Total: 3, At: "approve"}) || p.String() != "1/3 nodes" {
		t.Errorf("progress %+v %v, want 1 of 3 nodes done, at approve", p, ok)
	}
	if _, ok := workflow.ProgressOf(ctx, rt, "nope"); ok {
		t.Errorf("a run that does not exist has progress")
	}
}
