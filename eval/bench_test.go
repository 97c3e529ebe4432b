package eval_test

import (
	"strconv"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// BenchmarkRun runs a set of 100 cases (two model calls and a tool call
// each, then a custom scorer asking the judge) on the memory store; its
// figure is per eval run. The whole-process figures (1,000 cases on
// SQLite, and finishing after a SIGKILL) are evalbench's:
// go run ./eval/internal/evalbench.
func BenchmarkRun(b *testing.B) {
	const n = 100
	judge := make([]scripted.Step, n)
	for i := range judge {
		judge[i] = scripted.Text("yes")
	}
	set := &eval.Set{Name: "bench", Swarm: "support", Judge: "judge", Parallel: 16}
	for i := range n {
		set.Cases = append(set.Cases, eval.Case{ID: "c" + strconv.Itoa(i), Input: "where is order " + strconv.Itoa(i),
			Expect: eval.Expect{Scorers: []string{"polite"}, Output: &eval.Output{Contains: []string{"shipped"}}}})
	}
	for i := 0; b.Loop(); i++ {
		rt, _ := swarmtest.NewRuntime(b, scripted.Script{"support": supportScript()["support"], "judge": judge}, support())
		if err := rt.RegisterAgent(&swarm.Agent{Name: "judge", Instructions: "Judge."}); err != nil {
			b.Fatal(err)
		}
		if err := eval.Define(rt, eval.Options{Scorers: map[string]eval.Scorer{"polite": judgeScorer{}}}); err != nil {
			b.Fatal(err)
		}
		rep, err := eval.Run(b.Context(), rt, set, eval.RunOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Passed != n {
			b.Fatalf("%d of %d cases passed", rep.Passed, n)
		}
		rt.Close()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "cases/s")
}
