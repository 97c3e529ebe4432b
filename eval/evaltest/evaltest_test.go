package evaltest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/eval/evaltest"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

func runtime(t *testing.T) *swarm.Runtime {
	lookup := swarm.NewTool("lookup_order", "Finds an order", func(ctx context.Context, in struct {
		ID string `json:"id"`
	}) (string, error) {
		return "shipped", nil
	})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"support": {
		scripted.Tools(scripted.CallTool("lookup_order", map[string]any{"id": "42"})),
		scripted.Text("Order 42 has shipped."),
	}}, swarm.Define[string, string]("support", "Answers", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Help.", Tools: []swarm.Tool{lookup}}
	}))
	return rt
}

func set(output string) *eval.Set {
	return &eval.Set{Name: "support", Swarm: "support", Cases: []eval.Case{{ID: "order", Input: "Where is order 42?", Expect: eval.Expect{
		Output:     &eval.Output{Contains: []string{output}},
		Trajectory: &eval.Trajectory{Calls: []eval.Call{{Name: "lookup_order", Args: map[string]any{"id": "42"}}}},
	}}}}
}

func TestRunPasses(t *testing.T) {
	rep := evaltest.Run(t, runtime(t), set("shipped"), eval.RunOptions{})
	if rep == nil || !rep.Pass {
		t.Fatalf("report %+v", rep)
	}
}

// TestHelperFailing is a test that fails when its case does: run by
// TestFailingCaseFails in a process of its own.
func TestHelperFailing(t *testing.T) {
	if os.Getenv("EVALTEST_HELPER") != "1" {
		t.Skip("run by TestFailingCaseFails")
	}
	evaltest.Run(t, runtime(t), set("lost"), eval.RunOptions{})
}

// A case that fails fails its subtest, named after it, with the
// explanation of the score that failed.
func TestFailingCaseFails(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFailing$", "-test.v")
	cmd.Env = append(os.Environ(), "EVALTEST_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a failing case passed its test:\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestHelperFailing/order", "case order failed", `output.contains: 0.00 (threshold 1.00)`, `"lost"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestFailure(t *testing.T) {
	if got := evaltest.Failure(eval.CaseResult{Case: "a", Pass: true}); got != "" {
		t.Errorf("a passing case: %q", got)
	}
	got := evaltest.Failure(eval.CaseResult{Case: "a", Error: "judge: malformed", Observed: eval.Observed{RunID: "r1", Status: "completed"},
		Scores: []eval.Score{{Name: "ok", Pass: true, Value: 1}, {Name: "polite", Value: 0.2, Threshold: 0.5, Explanation: "rude\nvery"}}})
	want := "case a failed (run r1, completed)\nerror: judge: malformed\npolite: 0.20 (threshold 0.50)\n  rude\n  very"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Failure is what a failing case's subtest reports.
func ExampleFailure() {
	fmt.Println(evaltest.Failure(eval.CaseResult{Case: "refund", Observed: eval.Observed{RunID: "eval-1.case.refund", Status: "completed"},
		Scores: []eval.Score{{Name: "trajectory", Value: 0, Threshold: 1, Explanation: "missing call issue_refund"}}}))
	// Output:
	// case refund failed (run eval-1.case.refund, completed)
	// trajectory: 0.00 (threshold 1.00)
	//   missing call issue_refund
}
