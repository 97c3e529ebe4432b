package dashboard_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/workflow"
)

// fanOut is a graph whose start fans out to a fast agent, a slow one and
// one behind a condition that never holds, joined as join says.
func fanOut(id string, join workflow.Join) swarm.Definition {
	node := func(name string) workflow.Step[json.RawMessage, json.RawMessage] {
		return workflow.Node(workflow.Agent[string, string](&swarm.Agent{Name: name, Instructions: name}))
	}
	never := func(json.RawMessage) bool { return false }
	g := workflow.NewGraph[string, string]("flow", "start-here", 0).
		Add(node("start-here"), node("fast"), node("slow"), node("maybe"), node("merge")).
		Edge("start-here", "fast").Edge("start-here", "slow").EdgeIf("start-here", "maybe", never).
		Edge("fast", "merge").Edge("slow", "merge").Edge("maybe", "merge").Join("merge", join)
	return workflow.Define(id, "fans out", g.Step())
}

// The Nodes tab of a running fan-out shows each branch's state (the fast
// one done, the slow one running, the one whose edge did not hold not
// started); a first join that took the fast branch shows the slow one
// stopped and, the run completed, the untaken one skipped.
func TestWorkflowNodesFanOut(t *testing.T) {
	script := scripted.Script{
		"start-here": {scripted.Text("go"), scripted.Text("go")},
		// The fast answer comes late enough that the slow
		// branch has begun (a branch the join decided before it began is
		// skipped, not stopped).
		"fast":  {{Text: "quick", Delay: 2 * time.Second}, {Text: "quick", Delay: 2 * time.Second}},
		"slow":  {{Text: "late", Delay: time.Hour}, {Text: "late", Delay: time.Hour}},
		"merge": {scripted.Text("merged")},
	}
	all, first := fanOut("fan-all", workflow.Join{}), fanOut("fan-first", workflow.Join{Mode: workflow.First})
	rt, _ := swarmtest.NewRuntime(t, script, all, first)
	b := openDashboard(t, rt)
	ctx := swarmtest.Context(t)

	id, err := rt.Start(ctx, "fan-all", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	var states map[string]string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if states, _ = nodes(t, b, id); states["flow/fast"] == "done" && states["flow/slow"] == "running" {
			break
		}
	}
	want := map[string]string{"flow/start-here": "done", "flow/fast": "done", "flow/slow": "running", "flow/maybe": "not started", "flow/merge": "not started", "flow": "running"}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("running fan-out: %s is %q, want %q (%v)", k, states[k], v, states)
		}
	}
	if err := rt.Stop(ctx, id, "enough"); err != nil {
		t.Fatal(err)
	}

	id, err = rt.Start(ctx, "fan-first", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("first join: %v %+v", err, st)
	}
	states, _ = nodes(t, b, id)
	want = map[string]string{"flow/fast": "done", "flow/slow": "stopped", "flow/maybe": "skipped", "flow/merge": "done", "flow": "done"}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("first join: %s is %q, want %q (%v)", k, states[k], v, states)
		}
	}
}
