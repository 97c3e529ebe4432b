package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/workflow"
)

// A node reads, typed, the output of any node that finished before it, by
// name, without the steps in between passing it on; a node of another
// branch, or one that has not run, is an error.
func TestOutputOfEarlierNodes(t *testing.T) {
	plan := workflow.Func("plan", func(_ context.Context, s string) (brief, error) { return brief{Topic: s, Words: 3}, nil })
	forget := workflow.Func("forget", func(_ context.Context, b brief) (string, error) { return "-", nil })
	left := workflow.Func("left", func(_ context.Context, s string) (string, error) { return "L", nil })
	right := workflow.Func("right", func(ctx context.Context, s string) (string, error) {
		if _, err := workflow.Output[string](ctx, "left"); err == nil {
			return "", fmt.Errorf("right read left, a node of another branch")
		}
		return "R", nil
	})
	both := workflow.Parallel("both", workflow.Join{}, left, right)
	use := workflow.Func("use", func(ctx context.Context, _ []string) (string, error) {
		b, err := workflow.Output[brief](ctx, "plan")
		if err != nil {
			return "", err
		}
		l, err := workflow.Output[string](ctx, "left")
		if err != nil {
			return "", err
		}
		if _, err := workflow.Output[string](ctx, "later"); err == nil || !strings.Contains(err.Error(), `no node named "later"`) {
			return "", fmt.Errorf("read a node that has not run: %v", err)
		}
		return fmt.Sprintf("%s/%d/%s", b.Topic, b.Words, l), nil
	})
	later := workflow.Func("later", func(_ context.Context, s string) (string, error) { return s, nil })
	def := workflow.Define("reads", "reads back", workflow.Chain[string, string](plan, forget, both, use, later))
	_, _, st := run(t, def, nil, `"bees"`)
	if st.State != swarm.StateCompleted || string(st.Result) != `"bees/3/L"` {
		t.Fatalf("state %s (%s) result %s, want bees/3/L", st.State, st.Reason, st.Result)
	}
}

// In a graph, a join reads a node before the fork, and the branches its
// join took.
func TestOutputInGraph(t *testing.T) {
	id := func(name string) workflow.Step[json.RawMessage, json.RawMessage] {
		return workflow.Node(workflow.Func(name, func(_ context.Context, s string) (string, error) { return name + "(" + s + ")", nil }))
	}
	end := workflow.Node(workflow.Func("end2", func(ctx context.Context, _ json.RawMessage) (string, error) {
		a, err := workflow.Output[string](ctx, "a")
		if err != nil {
			return "", err
		}
		c, err := workflow.Output[string](ctx, "c")
		return a + " " + c, err
	}))
	g := workflow.NewGraph[string, string]("g", "a", 0).Add(id("a"), id("b"), id("c"), end).
		Edge("a", "b").Edge("a", "c").Edge("b", "end2").Edge("c", "end2").Join("end2", workflow.Join{})
	_, _, st := run(t, workflow.Define("graphreads", "reads back", g.Step()), nil, `"x"`)
	if st.State != swarm.StateCompleted || string(st.Result) != `"a(x) c(a(x))"` {
		t.Fatalf("state %s (%s) result %s", st.State, st.Reason, st.Result)
	}
}
