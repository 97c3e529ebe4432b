package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/swarmtest/strategytest"
	"github.com/swarmrt/swarm/workflow"
)

// ranSet records which nodes ran, and how often.
type ranSet struct {
	mu  sync.Mutex
	ran []string
	// stuckOnce closes stuckStarted when a stuck node begins.
	stuckOnce    sync.Once
	stuckStarted chan struct{}
}

// started is closed once a stuck node of r has begun.
func (r *ranSet) started() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stuckStarted == nil {
		r.stuckStarted = make(chan struct{})
	}
	return r.stuckStarted
}

// tagAfterStuck is tag that waits until a stuck node has begun, so that a
// join cannot decide before every branch of its fork is under way.
func (r *ranSet) tagAfterStuck(name string) workflow.Step[json.RawMessage, json.RawMessage] {
	started := r.started()
	return workflow.Node(workflow.Func(name, func(ctx context.Context, in string) (string, error) {
		select {
		case <-started:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		r.mu.Lock()
		r.ran = append(r.ran, name)
		r.mu.Unlock()
		return in + ">" + name, nil
	}))
}

func (r *ranSet) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.ran)
	slices.Sort(out)
	return out
}

// tag is a node that appends its name to its input.
func (r *ranSet) tag(name string) workflow.Step[json.RawMessage, json.RawMessage] {
	return workflow.Node(workflow.Func(name, func(_ context.Context, in string) (string, error) {
		r.mu.Lock()
		r.ran = append(r.ran, name)
		r.mu.Unlock()
		return in + ">" + name, nil
	}))
}

// stuckNode waits until it is stopped.
func (r *ranSet) stuck(name string) workflow.Step[json.RawMessage, json.RawMessage] {
	started := r.started()
	return workflow.Node(workflow.Func(name, func(ctx context.Context, in json.RawMessage) (string, error) {
		r.mu.Lock()
		r.ran = append(r.ran, name)
		r.mu.Unlock()
		r.stuckOnce.Do(func() { close(started) })
		<-ctx.Done()
		return "", ctx.Err()
	}))
}

// A diamond runs both sides of its fan-out, and its join runs once on
// both outputs, by node name.
func TestGraphDiamond(t *testing.T) {
	var r ranSet
	g := workflow.NewGraph[string, string]("flow", "a", 0).Add(r.tag("a"), r.tag("b"), r.tag("c"), r.tag("d")).
		Edge("a", "b").Edge("a", "c").Edge("b", "d").Edge("c", "d").Join("d", workflow.Join{})
	rt, id, st := run(t, workflow.Define("diamond", "a diamond", g.Step()), nil, `"x"`)
	if st.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", st.State, st.Reason)
	}
	if got := r.names(); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("ran %v, want a, b, c and d once each", got)
	}
	var res string
	json.Unmarshal(st.Result, &res)
	if want := `{"b":"x\u003ea\u003eb","c":"x\u003ea\u003ec"}>d`; res != want {
		t.Errorf("result %s, want %s", st.Result, want)
	}
	got := strings.Join(keys(t, rt, id, swarm.EventRecorded), " ")
	for _, k := range []string{"flow/a/edges", "flow/a/join", "flow/d"} {
		if !strings.Contains(got, k) {
			t.Errorf("recorded %q, want %s among them", got, k)
		}
	}
}

// A fan-out of three into a join with a typed reducer.
func TestGraphFanOutThree(t *testing.T) {
	var r ranSet
	count := workflow.Reduce(func(outs map[string]string) (int, error) { return len(outs), nil })
	total := workflow.Node(workflow.Func("total", func(_ context.Context, n int) (int, error) { return n * 10, nil }))
	g := workflow.NewGraph[string, int]("flow", "draft", 0).Add(r.tag("draft"), r.tag("legal"), r.tag("brand"), r.tag("tone"), total).
		Edge("draft", "legal").Edge("draft", "brand").Edge("draft", "tone").
		Edge("legal", "total").Edge("brand", "total").Edge("tone", "total").JoinReduce("total", workflow.Join{Limit: 1}, count)
	_, _, st := run(t, workflow.Define("fanout", "three reviews", g.Step()), nil, `"x"`)
	if st.State != swarm.StateCompleted || string(st.Result) != "30" {
		t.Fatalf("state %s (%s) result %s, want 30", st.State, st.Reason, st.Result)
	}
	if got := r.names(); !slices.Equal(got, []string{"brand", "draft", "legal", "tone"}) {
		t.Errorf("ran %v, want every branch once", got)
	}
}

// A fan-in with each join mode: all of the branches, the first, a quorum,
// and all tolerating a failed branch; conditional edges start only the
// branches whose condition holds.
func TestGraphJoinModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		join workflow.Join
		want string
		ran  []string
	}{
		{"all", workflow.Join{}, `{"fast":"x>split>fast","slow":"x>split>slow"}`, []string{"fast", "slow", "split"}},
		{"first", workflow.Join{Mode: workflow.First}, `{"fast":"x>split>fast"}`, []string{"fast", "split", "stuck"}},
		{"quorum", workflow.Join{Mode: workflow.Quorum, N: 2}, `{"fast":"x>split>fast","slow":"x>split>slow"}`, []string{"fast", "slow", "split", "stuck"}},
		{"tolerate", workflow.Join{Tolerate: true}, `{"fast":"x>split>fast","slow":"x>split>slow"}`, []string{"bad", "fast", "slow", "split"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r ranSet
			bad := workflow.Node(workflow.Func("bad", func(_ context.Context, _ string) (string, error) {
				r.mu.Lock()
				r.ran = append(r.ran, "bad")
				r.mu.Unlock()
				return "", errors.New("broken")
			}))
			out := workflow.Node(workflow.Func("out", func(_ context.Context, m map[string]string) (map[string]string, error) { return m, nil }))
			// Where the fork has a stuck branch, the fast one waits for it
			// to begin: a join that decided first would never start it.
			fast := r.tag("fast")
			if tc.name == "first" || tc.name == "quorum" {
				fast = r.tagAfterStuck("fast")
			}
			g := workflow.NewGraph[string, json.RawMessage]("flow", "split", 0).Add(r.tag("split"), fast, r.tag("slow"), r.stuck("stuck"), bad, out).
				Edge("split", "fast").EdgeIf("split", "slow", func(json.RawMessage) bool { return tc.name != "first" }).
				EdgeIf("split", "stuck", func(json.RawMessage) bool { return tc.name == "first" || tc.name == "quorum" }).
				EdgeIf("split", "bad", func(json.RawMessage) bool { return tc.name == "tolerate" }).
				Edge("fast", "out").Edge("slow", "out").Edge("stuck", "out").Edge("bad", "out").Join("out", tc.join)
			_, _, st := run(t, workflow.Define("modes", "joins", g.Step()), nil, `"x"`)
			if st.State != swarm.StateCompleted {
				t.Fatalf("state %s (%s)", st.State, st.Reason)
			}
			var got map[string]string
			json.Unmarshal(st.Result, &got)
			want := map[string]string{}
			json.Unmarshal([]byte(tc.want), &want)
			if !mapsEqual(got, want) {
				t.Errorf("result %s, want %s", st.Result, tc.want)
			}
			if got := r.names(); !slices.Equal(got, tc.ran) {
				t.Errorf("ran %v, want %v", got, tc.ran)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A graph whose meaning is ambiguous is refused when it is made, with a
// reason that names the nodes.
func TestGraphAmbiguous(t *testing.T) {
	yes := func(json.RawMessage) bool { return true }
	for _, tc := range []struct {
		name  string
		build func(g *workflow.Graph[string, string]) *workflow.Graph[string, string]
		want  string
	}{
		{"undeclared join", func(g *workflow.Graph[string, string]) *workflow.Graph[string, string] {
			return g.Edge("a", "b").Edge("a", "c").Edge("b", "d").Edge("c", "d")
		}, "the branches of the fork at a (b, c) meet at d: declare how d joins them"},
		{"three edges, no join", func(g *workflow.Graph[string, string]) *workflow.Graph[string, string] {
			return g.Edge("a", "b").Edge("a", "c").Edge("a", "d")
		}, "the branches of the fork at a (b, c, d) never meet"},
		{"two conditions", func(g *workflow.Graph[string, string]) *workflow.Graph[string, string] {
			return g.EdgeIf("a", "b", yes).EdgeIf("a", "c", yes)
		}, "the branches of the fork at a (b, c) never meet"},
		{"two meeting points", func(g *workflow.Graph[string, string]) *workflow.Graph[string, string] {
			return g.Edge("a", "b").Edge("a", "c").Edge("b", "d").Edge("c", "d").Edge("b", "e").Edge("c", "e").Edge("d", "f").Edge("e", "f")
		}, "the branches of the fork at a (b, c) first meet at more than one node (d, e)"},
		{"edge into a branch", func(g *workflow.Graph[string, string]) *workflow.Graph[string, string] {
			return g.EdgeIf("a", "b", yes).Edge("a", "e").Edge("b", "c").Edge("b", "d").Edge("c", "f").Edge("d", "f").Edge("e", "d").Join("f", workflow.Join{})
		}, "node d, on the branch from d of the fork at b, also has an edge from e"},
		{"join without fork", func(g *workflow.Graph[string, string]) *workflow.Graph[string, string] {
			return g.Edge("a", "b").Join("b", workflow.Join{})
		}, "node b is declared a join, but no fork's branches meet there"},
		{"two forks, one join", func(g *workflow.Graph[string, string]) *workflow.Graph[string, string] {
			return g.Edge("a", "b").Edge("a", "c").Edge("b", "d").Edge("b", "e").Edge("d", "f").Edge("e", "f").Edge("c", "f").Join("f", workflow.Join{})
		}, "the join f of the fork at b also has an edge from c, outside the fork"},
		{"quorum too large", func(g *workflow.Graph[string, string]) *workflow.Graph[string, string] {
			return g.Edge("a", "b").Edge("a", "c").Edge("b", "d").Edge("c", "d").Join("d", workflow.Join{Mode: workflow.Quorum, N: 3})
		}, "the join d wants 3 branches, but the fork at a has 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r ranSet
			g := workflow.NewGraph[string, string]("g", "a", 0)
			for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
				g.Add(r.tag(n))
			}
			_, err := workflow.New("w", "", tc.build(g).Step())
			if err == nil || !errors.Is(err, swarm.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// Edges on one field with different values are a choice, not a fork: a
// node routes on the value without a join, and only the matching edge is
// taken; two conditions Go cannot compare are a fork.
func TestGraphFieldChoice(t *testing.T) {
	var r ranSet
	kind := workflow.Node(workflow.Func("kind", func(_ context.Context, s string) (map[string]string, error) { return map[string]string{"kind": s}, nil }))
	g := workflow.NewGraph[string, string]("g", "kind", 0).Add(kind, r.tag("bug"), r.tag("question"), r.tag("other"), r.tag("reply")).
		EdgeField("kind", "bug", "kind", "bug").EdgeField("kind", "question", "kind", "question").Edge("kind", "other").
		Edge("bug", "reply").Edge("question", "reply").Edge("other", "reply")
	_, _, st := run(t, workflow.Define("choice", "routes on a field", g.Step()), nil, `"question"`)
	if st.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s)", st.State, st.Reason)
	}
	if got := r.names(); !slices.Equal(got, []string{"question", "reply"}) {
		t.Errorf("ran %v, want question and reply", got)
	}
	same := func(json.RawMessage) bool { return true }
	g = workflow.NewGraph[string, string]("g", "a", 0).Add(r.tag("a"), r.tag("b"), r.tag("c")).EdgeIf("a", "b", same).EdgeIf("a", "c", same)
	if _, err := workflow.New("w", "", g.Step()); err == nil || !strings.Contains(err.Error(), "the branches of the fork at a (b, c) never meet") {
		t.Errorf("two opaque conditions: %v, want a fork refused", err)
	}
}

// Fan-out and fan-in graphs pass the conformance kit: a fan-out of three
// agents whose join takes all, then a fork whose first join stops its
// slow branch and reads the draft back, each decision journaled once.
func TestConformanceFanOut(t *testing.T) {
	review := func(name string) workflow.Step[json.RawMessage, json.RawMessage] {
		return workflow.Node(workflow.Agent[string, string](agent(name)))
	}
	merge := workflow.Node(workflow.Func("merge", func(_ context.Context, m map[string]string) (string, error) {
		return m["legal"] + "+" + m["brand"] + "+" + m["tone"], nil
	}))
	stuck := workflow.Node(workflow.Func("stuck", func(ctx context.Context, s string) (string, error) { <-ctx.Done(); return "", ctx.Err() }))
	quick := workflow.Node(workflow.Func("quick", func(_ context.Context, s string) (string, error) { return "quick:" + s, nil }))
	pick := workflow.Node(workflow.Func("pick", func(ctx context.Context, m map[string]string) (string, error) {
		d, err := workflow.Output[string](ctx, "draft") // read back after a recovery too
		return m["quick"] + "/" + d, err
	}))
	g := workflow.NewGraph[string, string]("flow", "draft", 20).
		Add(review("draft"), review("legal"), review("brand"), review("tone"), merge, stuck, quick, pick).
		Edge("draft", "legal").Edge("draft", "brand").Edge("draft", "tone").
		Edge("legal", "merge").Edge("brand", "merge").Edge("tone", "merge").Join("merge", workflow.Join{}).
		Edge("merge", "stuck").Edge("merge", "quick").Edge("stuck", "pick").Edge("quick", "pick").Join("pick", workflow.Join{Mode: workflow.First})
	def := workflow.Define("fanned", "reviews in parallel", g.Step())
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{def},
		Swarm:       "fanned",
		Input:       json.RawMessage(`"bees"`),
		Script: scripted.Script{
			"draft": {scripted.Text("d")}, "legal": {scripted.Text("L")}, "brand": {scripted.Text("B")}, "tone": {scripted.Text("T")},
		},
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			st, _ := rt.Status(context.Background(), id)
			if string(st.Result) != `"quick:L+B+T/d"` {
				t.Errorf("result %s, want quick:L+B+T/d", st.Result)
			}
			var joins []string
			for _, ev := range swarmtest.Events(t, rt, id) {
				if ev.Kind == "workflow.join" {
					joins = append(joins, ev.Key+"="+string(ev.Result))
				}
			}
			if want := []string{"flow/draft/join=[0,1,2]", "flow/merge/join=[1]"}; !slices.Equal(joins, want) {
				t.Errorf("joins journaled %v, want %v", joins, want)
			}
		},
	})
}
