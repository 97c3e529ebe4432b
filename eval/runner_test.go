package eval_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// support is the swarm under test: an agent with a tool that looks up
// orders.
func support() swarm.Definition {
	lookup := swarm.NewTool("lookup_order", "Finds an order", func(ctx context.Context, in struct {
		ID string `json:"id"`
	}) (string, error) {
		return "order " + in.ID + ": shipped", nil
	})
	return swarm.Define[string, string]("support", "Answers customers", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Help.", Tools: []swarm.Tool{lookup}}
	})
}

// judgeScorer is a custom scorer that asks the judge whether the output
// is polite.
type judgeScorer struct{}

func (judgeScorer) Name() string { return "polite" }

func (judgeScorer) Score(ctx context.Context, j eval.Judge, c eval.Case, o eval.Observed) ([]eval.Score, error) {
	ans, err := j.Ask(ctx, "polite", "", []model.Message{{Role: model.RoleUser, Content: "Is this polite? " + o.Output}})
	if err != nil {
		return nil, err
	}
	v := 0.0
	if strings.HasPrefix(ans, "yes") {
		v = 1
	}
	return []eval.Score{{Name: "polite", Value: v, Threshold: 1, Pass: v >= 1, Explanation: ans}}, nil
}

func supportSet() *eval.Set {
	s := &eval.Set{Name: "support", Swarm: "support", Judge: "judge"}
	for _, id := range []string{"a", "b", "c"} {
		s.Cases = append(s.Cases, eval.Case{ID: id, Input: "where is order " + id, Expect: eval.Expect{Scorers: []string{"polite"}}})
	}
	return s
}

func supportScript() scripted.Script {
	return scripted.Script{
		"support": {
			scripted.Tools(scripted.CallTool("lookup_order", map[string]any{"id": "x"})),
			scripted.Text("It has shipped."),
		},
		"judge": {scripted.Text("yes, polite"), scripted.Text("no"), scripted.Text("yes")},
	}
}

func TestRunReportsEveryCase(t *testing.T) {
	ctx := swarmtest.Context(t)
	rt, _ := swarmtest.NewRuntime(t, supportScript(), support())
	if err := rt.RegisterAgent(&swarm.Agent{Name: "judge", Instructions: "Judge."}); err != nil {
		t.Fatal(err)
	}
	if err := eval.Define(rt, eval.Options{Scorers: map[string]eval.Scorer{"polite": judgeScorer{}}, Parallel: 1}); err != nil {
		t.Fatal(err)
	}
	rep, err := eval.Run(ctx, rt, supportSet(), eval.RunOptions{Config: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	t.Logf("%s", b)
	if rep.Passed != 2 || rep.Failed != 1 || rep.Errors != 0 {
		t.Errorf("passed %d failed %d errors %d", rep.Passed, rep.Failed, rep.Errors)
	}
}
