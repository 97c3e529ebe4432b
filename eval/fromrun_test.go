package eval_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/swarmtest"
)

// A recorded run becomes a case that expects what the run did, and an
// eval run of that case against the same swarm passes; against a
// changed one (a different answer) it fails with the output's diff.
func TestCaseFromRun(t *testing.T) {
	ctx := swarmtest.Context(t)
	rt, _ := swarmtest.NewRuntime(t, supportScript(), support())
	if err := eval.Define(rt, eval.Options{}); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Start(ctx, "support", json.RawMessage(`"where is order 42?"`), swarm.WithValues(map[string]any{"tier": "gold"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	c, err := eval.CaseFromRun(ctx, rt, id)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != id || c.From != id || c.Input != "where is order 42?" || c.Values["tier"] != "gold" ||
		c.Expect.Output == nil || *c.Expect.Output.Exact != "It has shipped." ||
		c.Expect.Trajectory == nil || c.Expect.Trajectory.Match != "in_order" || len(c.Expect.Trajectory.Calls) != 1 ||
		c.Expect.Trajectory.Calls[0].Name != "lookup_order" || c.Expect.Trajectory.Calls[0].Args["id"] != "x" ||
		c.Expect.Trajectory.Calls[0].ArgsMatch != "fields" {
		t.Fatalf("case %+v", c)
	}
	set, err := eval.SetFromRuns(ctx, rt, "recorded", id)
	if err != nil || set.Swarm != "support" || len(set.Cases) != 1 || set.Cases[0].ID != c.ID {
		t.Fatalf("set from runs: %+v %v", set, err)
	}
	raw, err := eval.MarshalYAML(set)
	if err != nil {
		t.Fatal(err)
	}
	set, err = eval.Parse(raw, "recorded.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	rep, err := eval.Run(ctx, rt, set, eval.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass || rep.Passed != 1 {
		t.Fatalf("the recorded case does not pass against its own swarm: %+v", rep.Cases)
	}
	// The swarm changed: it answers otherwise.
	*set.Cases[0].Expect.Output.Exact = "It is lost."
	rep, err = eval.Run(ctx, rt, set, eval.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eval.SetFromRuns(ctx, rt, "mixed", id, rep.RunID); !errors.Is(err, swarm.ErrInvalidInput) {
		t.Errorf("runs of two swarms: %v", err)
	}
	if rep.Pass || !strings.Contains(rep.Cases[0].Scores[0].Explanation+rep.Cases[0].Scores[1].Explanation, "It is lost.") {
		t.Errorf("a changed answer passes: %+v", rep.Cases[0].Scores)
	}
}
