package workflow_test

// Rules that a mutation sample found no test checking: each test here fails
// when its rule is broken by one line.

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/workflow"
)

// TestJoinWaitsWhileEnoughCanSucceed: a First or Quorum join gives up only
// when fewer branches than it needs can still succeed, not when exactly as
// many can. The branches run one at a time (MaxParallel 1), so the failing
// branch has failed before the one that succeeds starts.
func TestJoinWaitsWhileEnoughCanSucceed(t *testing.T) {
	broken := workflow.Func("broken", func(_ context.Context, s string) (string, error) { return "", errors.New("broken") })
	late := func(name string) workflow.Step[string, string] {
		return workflow.Func(name, func(_ context.Context, s string) (string, error) { return name + " " + s, nil })
	}
	for _, c := range []struct {
		name string
		def  swarm.Definition
		want string
	}{
		{"first", workflow.Define("first", "", workflow.Parallel("race", workflow.Join{Mode: workflow.First}, broken, late("late"))), `["late x"]`},
		{"quorum", workflow.Define("quorum", "", workflow.Parallel("vote", workflow.Join{Mode: workflow.Quorum, N: 2}, broken, late("a"), late("b"))), `["a x","b x"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{}), MaxParallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rt.Close() })
			if err := rt.Register(c.def); err != nil {
				t.Fatal(err)
			}
			ctx := swarmtest.Context(t)
			id, err := rt.Start(ctx, c.def.ID(), json.RawMessage(`"x"`))
			if err != nil {
				t.Fatal(err)
			}
			st, err := rt.Wait(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if st.State != swarm.StateCompleted || string(st.Result) != c.want {
				t.Errorf("state %s (%s) result %s, want completed with %s", st.State, st.Reason, st.Result, c.want)
			}
		})
	}
}
