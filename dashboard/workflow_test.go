package dashboard_test

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/dashboard"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/workflow"
)

// nodeRow matches a node of the Nodes tab: its key, state and the rest of
// its line.
var nodeRow = regexp.MustCompile(`(?s)data-key="([^"]+)" data-state="([^"]+)"(.*?)</li>`)

// nodes reads the Nodes tab of run id: each node's state and its row.
func nodes(t *testing.T, b *browser, id string) (map[string]string, map[string]string) {
	t.Helper()
	p := b.get("/ui/runs/" + id + "/nodes")
	if p.status != 200 {
		t.Fatalf("nodes: %d %s", p.status, p.body)
	}
	states, rows := map[string]string{}, map[string]string{}
	for _, m := range nodeRow.FindAllStringSubmatch(p.body, -1) {
		states[m[1]], rows[m[1]] = m[2], m[3]
	}
	return states, rows
}

// A workflow run paused at its human node shows the nodes before it done
// (the swarm node linking to its child run), the human node waiting and
// the node after it not started; answered, every node is done.
func TestWorkflowNodes(t *testing.T) {
	helper := swarm.Define[string, string]("helper", "helps", nil)
	fetch := workflow.Func("fetch", func(_ context.Context, in string) (string, error) { return in + " fetched", nil })
	ask := workflow.Human[string, string]("approve", 1, func(s string) string { return "Approve " + s + "?" })
	publish := workflow.Func("publish", func(_ context.Context, in string) (string, error) { return "published " + in, nil })
	def := workflow.Define("review", "a reviewed draft",
		workflow.Then(workflow.Then(workflow.Then(fetch, workflow.Swarm[string, string](helper)), ask), publish))
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"helper": {scripted.Text("helped")}}, def, helper)
	b := openDashboard(t, rt)
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "review", json.RawMessage(`"the draft"`))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StatePaused {
		t.Fatalf("run: %v %+v, want paused at approve", err, st)
	}
	states, rows := nodes(t, b, id)
	want := map[string]string{"fetch": "done", "helper": "done", "approve": "waiting", "publish": "not started"}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("node %s is %q, want %q (all: %v)", k, states[k], v, states)
		}
	}
	if len(states) != len(want) {
		t.Errorf("nodes %v, want %v", states, want)
	}
	var child string
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventHandoffStarted && ev.Child != "" {
			child = ev.Child
		}
	}
	if child == "" || !strings.Contains(rows["helper"], `href="/ui/runs/`+child+`"`) {
		t.Errorf("helper's row %q does not link to its child run %q", rows["helper"], child)
	}
	if !strings.Contains(rows["fetch"], "1 visit<") || !strings.Contains(rows["fetch"], "?find=key%3Afetch") {
		t.Errorf("fetch's row %q: want 1 visit and a link to its events", rows["fetch"])
	}
	if p := b.get("/ui/runs/" + id + "/nodes"); !strings.Contains(p.body, `class="wf-s-waiting"`) || strings.Count(p.body, `class="wf-box `) != len(want) {
		t.Errorf("the drawing has not one box per node, the human node's waiting: %s", p.body)
	}
	page := b.get("/ui/runs/" + id)
	if !strings.Contains(page.body, `id="tab-nodes"`) || !strings.Contains(page.body, `data-key="approve" data-state="waiting"`) {
		t.Errorf("the run's page has no Nodes tab with the nodes")
	}

	if err := rt.Resume(ctx, id, "yes"); err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("run: %v %+v, want completed", err, st)
	}
	states, _ = nodes(t, b, id)
	for k := range want {
		if states[k] != "done" {
			t.Errorf("after the answer node %s is %q, want done", k, states[k])
		}
	}

	// A run of a swarm that is not a workflow has no Nodes tab.
	if p := b.get("/ui/runs/" + child); strings.Contains(p.body, `id="tab-nodes"`) {
		t.Error("a swarm's run has a Nodes tab")
	}
	if p := b.get("/ui/runs/" + child + "/nodes"); p.status != 404 {
		t.Errorf("nodes of a swarm's run: %d, want 404", p.status)
	}
}

// A graph that fails at its bound: its nodes are done with their visits
// counted, the graph itself failed, its edges drawn.
func TestWorkflowNodesGraphBound(t *testing.T) {
	inc := func(name string) workflow.Step[int, int] {
		return workflow.Func(name, func(_ context.Context, n int) (int, error) { return n + 1, nil })
	}
	g := workflow.NewGraph[int, int]("flow", "ping", 5).Add(workflow.Node(inc("ping")), workflow.Node(inc("pong"))).Edge("ping", "pong").Edge("pong", "ping")
	def := workflow.Define("rally", "bounded", workflow.Then(inc("fetch"), g.Step()))
	rt, _ := swarmtest.NewRuntime(t, nil, def)
	b := openDashboard(t, rt)
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "rally", json.RawMessage(`0`))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateFailed {
		t.Fatalf("run: %v %+v, want failed at the graph's bound", err, st)
	}
	states, rows := nodes(t, b, id)
	want := map[string]string{"fetch": "done", "flow": "failed", "flow/ping": "done", "flow/pong": "done"}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("node %s is %q, want %q (all: %v)", k, states[k], v, states)
		}
	}
	if !strings.Contains(rows["flow/ping"], "3 visits") || !strings.Contains(rows["flow/pong"], "2 visits") || !strings.Contains(rows["flow/pong"], "→ flow/ping") {
		t.Errorf("rows %q and %q: want 3 and 2 visits and the edge back to ping", rows["flow/ping"], rows["flow/pong"])
	}
	p := b.get("/ui/runs/" + id + "/nodes")
	for _, edge := range []string{
		`class="wf-edge wf-flow" d="M`, `data-from="flow/ping" data-to="flow/pong"`, // down a layer
		`class="wf-edge wf-cycle" d="M`, `data-from="flow/pong" data-to="flow/ping"`, // back up the cycle
	} {
		if !strings.Contains(p.body, edge) {
			t.Errorf("the drawing has no %s: %s", edge, p.body)
		}
	}
	if !strings.Contains(p.body, `data-frame="flow" data-state="failed" data-bound="5"`) {
		t.Errorf("the graph's frame is not failed with its bound: %s", p.body)
	}
}

// openDashboard serves rt's dashboard without login and returns a
// browser on it.
func openDashboard(t *testing.T, rt *swarm.Runtime) *browser {
	t.Helper()
	a, err := auth.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return newBrowser(t, serveDashboard(t, rt, dashboard.Options{Auth: a}).URL)
}

// The runs list marks the runs of workflows and keeps only one kind of
// run when asked; an unknown kind is refused.
func TestRunsListKind(t *testing.T) {
	helper := swarm.Define[string, string]("helper", "helps", nil)
	def := workflow.Define("flow", "a workflow", workflow.Func("fetch", func(_ context.Context, in string) (string, error) { return in, nil }))
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"helper": {scripted.Text("helped")}}, def, helper)
	b := openDashboard(t, rt)
	ctx := swarmtest.Context(t)
	ids := map[string]string{}
	for _, id := range []string{"flow", "helper"} {
		run, err := rt.Start(ctx, id, json.RawMessage(`"x"`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Wait(ctx, run); err != nil {
			t.Fatal(err)
		}
		ids[id] = run
	}
	row := regexp.MustCompile(`(?s)<tr>\s*<td class="id"><a href="/ui/runs/([^"]+)".*?<td class="swarm" data-kind="([a-z]+)">([^<]*)(<span class="kind-badge">workflow</span>)?`)
	list := func(query string) map[string]string {
		t.Helper()
		p := b.get("/ui/?" + query)
		if p.status != 200 {
			t.Fatalf("runs ?%s: %d", query, p.status)
		}
		got := map[string]string{}
		for _, m := range row.FindAllStringSubmatch(p.body, -1) {
			got[m[1]] = m[2] + map[bool]string{true: " badge", false: ""}[m[4] != ""]
		}
		return got
	}
	if got, want := list(""), map[string]string{ids["flow"]: "workflow badge", ids["helper"]: "swarm"}; !maps.Equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
	if got, want := list("kind=workflow"), map[string]string{ids["flow"]: "workflow badge"}; !maps.Equal(got, want) {
		t.Errorf("workflow runs %v, want %v", got, want)
	}
	if got, want := list("kind=swarm"), map[string]string{ids["helper"]: "swarm"}; !maps.Equal(got, want) {
		t.Errorf("swarm runs %v, want %v", got, want)
	}
	if p := b.get("/ui/?kind=team"); p.status != 400 || !strings.Contains(p.body, "want workflow or swarm") {
		t.Errorf("kind=team: %d, want 400 with the kinds", p.status)
	}
}

// A branch a first join stopped, mid-call, is drawn stopped, and the
// parallel step done.
func TestWorkflowNodesStoppedBranch(t *testing.T) {
	var rt *swarm.Runtime
	// fast wins once slow is under way: its call is journaled.
	fast := winsOnceUnderWay(&rt, "both/slow/")
	slow := workflow.Agent[string, string](&swarm.Agent{Name: "slow", Instructions: "Take your time."})
	def := workflow.Define("race", "the first wins", workflow.Parallel("both", workflow.Join{Mode: workflow.First}, slow, fast))
	rt, _ = swarmtest.NewRuntime(t, scripted.Script{"slow": {{Text: "late", Delay: time.Minute}}}, def)
	b := openDashboard(t, rt)
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "race", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("run: %v %+v, want completed", err, st)
	}
	states, _ := nodes(t, b, id)
	if want := map[string]string{"both": "done", "both/fast": "done", "both/slow": "stopped"}; !maps.Equal(states, want) {
		t.Errorf("nodes %v, want %v", states, want)
	}
}

// A sequence inside a branch a first join stopped while its second part
// was in a model call is stopped too, and the join is done, while the
// workflow goes on (here: waits at a human node).
func TestWorkflowNodesStoppedSequence(t *testing.T) {
	var rt *swarm.Runtime
	fast := winsOnceUnderWay(&rt, "both/seq/")
	prep := workflow.Func("prep", func(_ context.Context, s string) (string, error) { return s, nil })
	slow := workflow.Agent[string, string](&swarm.Agent{Name: "slow", Instructions: "Take your time."})
	ask := workflow.Human[[]string, string]("ask", 1, func(s []string) string { return "Go on with " + strings.Join(s, ", ") + "?" })
	def := workflow.Define("race2", "the first wins, then a person",
		workflow.Then(workflow.Parallel("both", workflow.Join{Mode: workflow.First}, workflow.Then(prep, slow).Named("seq"), fast), ask))
	rt, _ = swarmtest.NewRuntime(t, scripted.Script{"slow": {{Text: "late", Delay: time.Minute}}}, def)
	b := openDashboard(t, rt)
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "race2", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StatePaused {
		t.Fatalf("run: %v %+v, want paused at the human node", err, st)
	}
	states, _ := nodes(t, b, id)
	for key, want := range map[string]string{"both": "done", "both/fast": "done", "both/seq": "stopped", "ask": "waiting"} {
		if states[key] != want {
			t.Errorf("node %s is %q, want %q (all: %v)", key, states[key], want, states)
		}
	}
}

// A sequence on a branch a first join stopped between its parts (its
// first done, its second not yet begun) is stopped, not running, and the
// join is done while the workflow goes on.
func TestWorkflowNodesSequenceStoppedBetweenParts(t *testing.T) {
	var rt *swarm.Runtime
	fast := winsOnce(&rt, "both/seq/", swarm.EventRecorded)
	prep := workflow.Func("prep", func(_ context.Context, s string) (string, error) { return s, nil })
	hold := workflow.Func("hold", func(ctx context.Context, s string) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	ask := workflow.Human[[]string, string]("ask", 1, func(s []string) string { return "Go on with " + strings.Join(s, ", ") + "?" })
	def := workflow.Define("race3", "the first wins between the other's parts, then a person",
		workflow.Then(workflow.Parallel("both", workflow.Join{Mode: workflow.First}, workflow.Then(prep, hold).Named("seq"), fast), ask))
	rt, _ = swarmtest.NewRuntime(t, scripted.Script{}, def)
	b := openDashboard(t, rt)
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "race3", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StatePaused {
		t.Fatalf("run: %v %+v, want paused at the human node", err, st)
	}
	states, _ := nodes(t, b, id)
	for key, want := range map[string]string{"both": "done", "both/fast": "done", "both/seq": "stopped", "both/seq/prep": "done", "ask": "waiting"} {
		if states[key] != want {
			t.Errorf("node %s is %q, want %q (all: %v)", key, states[key], want, states)
		}
	}
}

// winsOnceUnderWay is a Go node "fast" that returns its input once its
// run has started a model call under the step key prefix: the other
// branch is then mid-call when a first join takes fast's answer.
func winsOnceUnderWay(rt **swarm.Runtime, prefix string) workflow.Step[string, string] {
	return winsOnce(rt, prefix, swarm.EventHandoffStarted)
}

// winsOnce is a Go node "fast" that returns its input once its run's
// journal holds a record of type typ under the step key prefix.
func winsOnce(rt **swarm.Runtime, prefix string, typ swarm.EventType) workflow.Step[string, string] {
	return workflow.Func("fast", func(ctx context.Context, in string) (string, error) {
		for {
			evs, err := (*rt).History(ctx, swarm.RunID(ctx), 0)
			if err != nil {
				return "", err
			}
			for _, ev := range evs {
				if ev.Type == typ && strings.HasPrefix(ev.Key, prefix) {
					return in, nil
				}
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
}
