package dashboard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/workflow"
)

// A workflow run shows its progress in nodes, not turns, in the runs list
// and on its page.
func TestWorkflowProgress(t *testing.T) {
	fetch := workflow.Func("fetch", func(_ context.Context, in string) (string, error) { return in, nil })
	ask := workflow.Human[string, string]("approve", 1, func(s string) string { return "Approve " + s + "?" })
	publish := workflow.Func("publish", func(_ context.Context, in string) (string, error) { return in, nil })
	def := workflow.Define("progressing", "three nodes", workflow.Seq(fetch, ask, publish))
	rt, _ := swarmtest.NewRuntime(t, nil, def)
	b := openDashboard(t, rt)
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "progressing", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StatePaused {
		t.Fatalf("run: %v %+v, want paused at approve", err, st)
	}
	if p := b.get("/ui/"); !strings.Contains(p.body, "1/3 nodes") {
		t.Errorf("runs list without 1/3 nodes:\n%s", p.body)
	}
	if p := b.get("/ui/runs/" + id); !strings.Contains(p.body, `id="progress">1/3 nodes`) || strings.Contains(p.body, `id="turn"`) {
		t.Errorf("run page without its progress in nodes:\n%s", p.body)
	}
}
