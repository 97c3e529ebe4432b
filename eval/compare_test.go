package eval_test

import (
	"math"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/eval"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// McNemar's exact test is a two-sided binomial test of the discordant
// pairs with p = 1/2. By hand: b=1, c=9: n=10, P(X<=1) = (C(10,0) +
// C(10,1))/2^10 = 11/1024, p = 22/1024 = 0.021484375; b=0, c=5: p =
// 2/32 = 0.0625; b=3, c=3: 2*(1+6+15+20)/64 > 1, so 1. R agrees:
// binom.test(1, 10)$p.value = 0.02148438.
func TestMcNemar(t *testing.T) {
	for _, tc := range []struct {
		b, c int
		want float64
	}{
		{1, 9, 22.0 / 1024}, {9, 1, 22.0 / 1024}, {0, 5, 0.0625}, {3, 3, 1}, {0, 0, 1},
		// n=100, 40 against 60: binom.test(40, 100)$p.value = 0.05688793.
		{40, 60, 0.05688793},
	} {
		if got := eval.McNemar(tc.b, tc.c); !near(got, tc.want, 1e-7) {
			t.Errorf("McNemar(%d, %d) = %.9g, want %.9g", tc.b, tc.c, got, tc.want)
		}
	}
}

// The Wilcoxon signed-rank test, by hand and as R's wilcox.test computes
// it:
//   - 1..5, all positive: W+ = 15, the largest of 2^5 equally likely
//     sums, so p = 2/32 = 0.0625 (wilcox.test(1:5)).
//   - 1, 2, -3, 4, 5, 6: W+ = 18, W- = 3; the sign assignments with a
//     negative sum of at most 3 are {}, {1}, {2}, {3}, {1,2}: p =
//     2*5/64 = 0.15625 (wilcox.test(c(1,2,-3,4,5,6))).
//   - zeros are dropped: 0, 0, 1, 2, 3, 4, 5 is 1..5.
//   - ties (below): 1, 1, 2, 2, -3.
//   - 1..30, all positive (normal approximation): W+ = 465, mean 232.5,
//     variance 30*31*61/24 = 2363.75, z = (465-232.5-0.5)/48.6184 =
//     4.77186, p = 2*(1-Phi(z)) = 1.8265e-06 (wilcox.test(1:30,
//     exact=FALSE) says 1.826e-06).
func TestWilcoxon(t *testing.T) {
	seq := func(n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(i + 1)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		d    []float64
		want float64
		tol  float64
	}{
		{"all positive", seq(5), 0.0625, 1e-12},
		{"all negative", []float64{-1, -2, -3, -4, -5}, 0.0625, 1e-12},
		{"one negative", []float64{1, 2, -3, 4, 5, 6}, 0.15625, 1e-12},
		{"zeros dropped", []float64{0, 0, 1, 2, 3, 4, 5}, 0.0625, 1e-12},
		{"all zero", []float64{0, 0, 0}, 1, 0},
		{"normal", seq(30), 1.8265e-06, 2e-9},
	} {
		if got := eval.Wilcoxon(tc.d); !near(got, tc.want, tc.tol) {
			t.Errorf("%s: Wilcoxon = %.9g, want %.9g", tc.name, got, tc.want)
		}
	}
	// Ties: 1, 1, 2, 2, -3 have the mean ranks 1.5, 1.5, 3.5, 3.5 and 5,
	// doubled 3, 3, 7, 7, 10 (total 30), and twice W+ = 20. The smaller
	// tail is the negative side: subsets of {3,3,7,7,10} summing to at
	// most 10 (= 30-20): {} 0, {3} twice, {3,3} 6, {7} twice, {10}, and
	// {3,7} four ways: 11 of 32, so p = 2*11/32 = 0.6875.
	if got := eval.Wilcoxon([]float64{1, 1, 2, 2, -3}); !near(got, 0.6875, 1e-12) {
		t.Errorf("ties: Wilcoxon = %.9g, want 0.6875", got)
	}
}

func report(config string, pass []bool, scores []float64, outputs []string) *eval.Report {
	r := &eval.Report{Config: config, RunID: "run-" + config}
	for i := range pass {
		r.Cases = append(r.Cases, eval.CaseResult{Case: string(rune('a' + i)), Pass: pass[i],
			Scores:   []eval.Score{{Name: "quality", Value: scores[i]}},
			Observed: eval.Observed{Output: outputs[i], Calls: []eval.ObservedCall{{Kind: "tool", Name: "lookup", Args: []byte(`{"id":1}`)}}}})
	}
	return r
}

func TestCompare(t *testing.T) {
	n := 12
	bp, op := make([]bool, n), make([]bool, n)
	bs, os := make([]float64, n), make([]float64, n)
	bo, oo := make([]string, n), make([]string, n)
	for i := range n {
		bp[i], op[i] = i < 2, true // 10 fixed, none broken
		bs[i], os[i] = 0.5, 0.5+0.01*float64(i+1)
		bo[i], oo[i] = "same", "same"
	}
	oo[3] = "changed\nlines"
	base, other := report("A", bp, bs, bo), report("B", op, os, oo)
	other.Cases[5].Observed.Calls = append(other.Cases[5].Observed.Calls, eval.ObservedCall{Kind: "handoff", Name: "billing"})
	c := eval.Compare(base, other)
	if c.Fixed != 10 || c.Broken != 0 {
		t.Errorf("fixed %d broken %d, want 10 and 0", c.Fixed, c.Broken)
	}
	// 10 against 0: 2/1024.
	if !near(c.PassP, 2.0/1024, 1e-12) {
		t.Errorf("PassP = %g", c.PassP)
	}
	if !near(c.PassRateDelta, 10.0/12, 1e-12) || c.Base != "A" || c.Other != "B" || c.BaseRun != "run-A" {
		t.Errorf("comparison %+v", c)
	}
	if len(c.Scores) != 1 || c.Scores[0].N != 12 || !near(c.Scores[0].Delta, 0.065, 1e-9) {
		t.Fatalf("scores %+v", c.Scores)
	}
	// Twelve positive distinct differences: 2/4096.
	if !near(c.Scores[0].P, 2.0/4096, 1e-12) {
		t.Errorf("score p = %g, want %g", c.Scores[0].P, 2.0/4096)
	}
	if !strings.HasPrefix(c.Verdict, "better: pass rate 17% -> 100% (10 fixed, 0 broken") {
		t.Errorf("verdict %q", c.Verdict)
	}
	d := c.Cases[3]
	if !d.OutputChanged || d.TrajectoryChanged || d.Diff != "output:\n- same\n+ changed\n+ lines" {
		t.Errorf("case d: %+v", d)
	}
	f := c.Cases[5]
	if f.OutputChanged || !f.TrajectoryChanged || f.Diff != "calls:\n  tool lookup({\"id\":1})\n+ handoff billing()" {
		t.Errorf("case f: %+v %q", f, f.Diff)
	}
	if c.Cases[0].Diff != "" || !near(c.Cases[0].Scores["quality"], 0.01, 1e-12) {
		t.Errorf("case a: %+v", c.Cases[0])
	}
	// Swapped, it is worse; against itself, no change.
	if v := eval.Compare(other, base).Verdict; !strings.HasPrefix(v, "worse: ") {
		t.Errorf("swapped verdict %q", v)
	}
	if v := eval.Compare(base, base).Verdict; !strings.HasPrefix(v, "no significant change: ") {
		t.Errorf("same verdict %q", v)
	}
	// A case only one report has is left out.
	other.Cases = other.Cases[:11]
	if got := len(eval.Compare(base, other).Cases); got != 11 {
		t.Errorf("%d cases compared, want 11", got)
	}
}
