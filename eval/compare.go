package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Significance is the p-value below which Compare calls a difference
// beyond noise.
const Significance = 0.05

// Compare compares two reports of one set (the same cases, run against
// two configurations), case by case, in Base's order: each case's pass
// change, score deltas, and whether its output and trajectory changed,
// with a short diff; then the pass rates with the two-sided exact
// McNemar test on the paired pass/fail outcomes, each score's means with
// the two-sided Wilcoxon signed-rank test on the paired values, and a
// verdict in words. Cases only one report holds are left out; a nil
// report compares as an empty one.
func Compare(base, other *Report) *Comparison {
	if base == nil {
		base = &Report{}
	}
	if other == nil {
		other = &Report{}
	}
	c := &Comparison{Base: label(base), Other: label(other), BaseRun: base.RunID, OtherRun: other.RunID, Cases: []CaseDelta{}}
	byID := map[string]*CaseResult{}
	for i := range other.Cases {
		byID[other.Cases[i].Case] = &other.Cases[i]
	}
	pairs := map[string][][2]float64{}
	var names []string
	basePassed, otherPassed := 0, 0
	for i := range base.Cases {
		b := &base.Cases[i]
		o, ok := byID[b.Case]
		if !ok {
			continue
		}
		d := CaseDelta{Case: b.Case, BasePass: b.Pass, OtherPass: o.Pass}
		if b.Pass {
			basePassed++
		}
		if o.Pass {
			otherPassed++
		}
		switch {
		case !b.Pass && o.Pass:
			c.Fixed++
		case b.Pass && !o.Pass:
			c.Broken++
		}
		bs, os := scoresByName(b.Scores), scoresByName(o.Scores)
		for _, sc := range b.Scores {
			ov, ok := os[sc.Name]
			bv, bok := bs[sc.Name]
			if !ok || !bok {
				continue
			}
			if d.Scores == nil {
				d.Scores = map[string]float64{}
			}
			d.Scores[sc.Name] = ov - bv
			if _, seen := pairs[sc.Name]; !seen {
				names = append(names, sc.Name)
			}
			pairs[sc.Name] = append(pairs[sc.Name], [2]float64{bv, ov})
		}
		var diff []string
		if strings.TrimSpace(b.Observed.Output) != strings.TrimSpace(o.Observed.Output) {
			d.OutputChanged = true
			diff = append(diff, "output:", lineDiff(strings.Split(strings.TrimSpace(b.Observed.Output), "\n"), strings.Split(strings.TrimSpace(o.Observed.Output), "\n")))
		}
		bc, oc := callLines(b.Observed.Calls), callLines(o.Observed.Calls)
		if !slices.Equal(bc, oc) {
			d.TrajectoryChanged = true
			diff = append(diff, "calls:", lineDiff(bc, oc))
		}
		d.Diff = strings.Join(diff, "\n")
		c.Cases = append(c.Cases, d)
	}
	if n := len(c.Cases); n > 0 {
		c.BasePassRate, c.OtherPassRate = float64(basePassed)/float64(n), float64(otherPassed)/float64(n)
	}
	c.PassRateDelta = c.OtherPassRate - c.BasePassRate
	c.PassP = McNemar(c.Fixed, c.Broken)
	for _, name := range names {
		ps := pairs[name]
		sd := ScoreDelta{Name: name, N: len(ps)}
		diffs := make([]float64, len(ps))
		for i, p := range ps {
			sd.Base += p[0]
			sd.Other += p[1]
			diffs[i] = p[1] - p[0]
		}
		sd.Base /= float64(len(ps))
		sd.Other /= float64(len(ps))
		sd.Delta = sd.Other - sd.Base
		sd.P = Wilcoxon(diffs)
		c.Scores = append(c.Scores, sd)
	}
	c.Verdict = comparisonVerdict(c)
	return c
}

// label names a report's configuration: its Config, else its eval run.
func label(r *Report) string {
	if r.Config != "" {
		return r.Config
	}
	return r.RunID
}

// scoresByName maps the scores of a case that were scored (no error) by
// name; a name given twice keeps its first.
func scoresByName(scores []Score) map[string]float64 {
	out := map[string]float64{}
	for _, s := range scores {
		if _, dup := out[s.Name]; !dup && s.Error == "" {
			out[s.Name] = s.Value
		}
	}
	return out
}

// callLines writes calls one a line: "kind name(args)", the arguments as
// compact JSON with sorted keys.
func callLines(calls []ObservedCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		args := string(c.Args)
		var v any
		if json.Unmarshal(c.Args, &v) == nil {
			if b, err := json.Marshal(v); err == nil {
				args = string(b)
			}
		}
		out[i] = c.Kind + " " + c.Name + "(" + args + ")"
	}
	return out
}

// maxCaseDiffLines bounds the lines a case's diff compares and shows.
const maxCaseDiffLines = 40

// lineDiff shows how b became o, line by line ("  " kept, "- " only in b,
// "+ " only in o), from their longest common subsequence; long inputs are
// cut to maxCaseDiffLines lines each.
func lineDiff(b, o []string) string {
	cut := ""
	if len(b) > maxCaseDiffLines || len(o) > maxCaseDiffLines {
		cut = fmt.Sprintf("\n  ... (only the first %d lines compared)", maxCaseDiffLines)
		b, o = b[:min(len(b), maxCaseDiffLines)], o[:min(len(o), maxCaseDiffLines)]
	}
	// lcs[i][j]: the longest common subsequence of b[i:] and o[j:].
	lcs := make([][]int, len(b)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(o)+1)
	}
	for i := len(b) - 1; i >= 0; i-- {
		for j := len(o) - 1; j >= 0; j-- {
			if b[i] == o[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out bytes.Buffer
	line := func(prefix, s string) {
		if out.Len() > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(prefix + truncate(s, 200))
	}
	i, j := 0, 0
	for i < len(b) || j < len(o) {
		switch {
		case i < len(b) && j < len(o) && b[i] == o[j]:
			line("  ", b[i])
			i, j = i+1, j+1
		case i < len(b) && (j == len(o) || lcs[i+1][j] >= lcs[i][j+1]):
			line("- ", b[i])
			i++
		default:
			line("+ ", o[j])
			j++
		}
	}
	return out.String() + cut
}

// truncate cuts s to n bytes at a character boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}

// comparisonVerdict says in words what changed: "better", "worse", "mixed" or "no
// significant change", then why.
func comparisonVerdict(c *Comparison) string {
	pass := fmt.Sprintf("pass rate %.0f%% -> %.0f%% (%d fixed, %d broken, McNemar p=%.3g)",
		100*c.BasePassRate, 100*c.OtherPassRate, c.Fixed, c.Broken, c.PassP)
	var up, down []string
	for _, s := range c.Scores {
		if s.P >= Significance || s.Delta == 0 {
			continue
		}
		d := fmt.Sprintf("%s %+.3g (Wilcoxon p=%.3g)", s.Name, s.Delta, s.P)
		if s.Delta > 0 {
			up = append(up, d)
		} else {
			down = append(down, d)
		}
	}
	scores := ""
	if len(up)+len(down) > 0 {
		scores = "; scores: " + strings.Join(slices.Concat(up, down), ", ")
	}
	switch {
	case c.PassP < Significance && c.Fixed > c.Broken:
		if len(down) > 0 {
			return "mixed: " + pass + scores
		}
		return "better: " + pass + scores
	case c.PassP < Significance && c.Broken > c.Fixed:
		if len(up) > 0 {
			return "mixed: " + pass + scores
		}
		return "worse: " + pass + scores
	case len(up) > 0 && len(down) > 0:
		return "mixed: " + pass + scores
	case len(up) > 0:
		return "better: " + pass + scores
	case len(down) > 0:
		return "worse: " + pass + scores
	}
	return "no significant change: " + pass
}

// McNemar returns the two-sided p-value of the exact McNemar test of b
// cases that changed one way (failed, then passed) against c that
// changed the other: twice the binomial tail of the smaller count with
// n = b+c trials and probability 1/2, at most 1; 1 when nothing changed.
func McNemar(b, c int) float64 {
	n, k := b+c, min(b, c)
	if n == 0 {
		return 1
	}
	// Sum the tail in log space: C(n, i) / 2^n for i = 0..k.
	lnN, _ := math.Lgamma(float64(n + 1))
	tail := 0.0
	for i := 0; i <= k; i++ {
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(n - i + 1))
		tail += math.Exp(lnN - li - lr - float64(n)*math.Ln2)
	}
	return math.Min(1, 2*tail)
}

// exactWilcoxon is the largest number of nonzero differences Wilcoxon
// computes the exact distribution for; above it, the normal
// approximation.
const exactWilcoxon = 25

// zero is the difference below which two scores are taken as equal.
const zero = 1e-12

// Wilcoxon returns the two-sided p-value of the Wilcoxon signed-rank test
// of the paired differences d (Other minus Base): zero differences are
// dropped (Wilcoxon's method), the others ranked by absolute value with
// ties given their mean rank; W+ is the sum of the ranks of the positive
// ones. For at most 25 nonzero differences the p-value is exact, from the
// distribution of W+ over the 2^n sign assignments of these ranks (ties
// included); above, it is the normal approximation with the tie
// correction of the variance and a continuity correction of 1/2. It is 1
// when every difference is zero.
func Wilcoxon(d []float64) float64 {
	var nz []float64
	for _, x := range d {
		if math.Abs(x) > zero && !math.IsNaN(x) {
			nz = append(nz, x)
		}
	}
	n := len(nz)
	if n == 0 {
		return 1
	}
	slices.SortFunc(nz, func(a, b float64) int {
		switch {
		case math.Abs(a) < math.Abs(b):
			return -1
		case math.Abs(a) > math.Abs(b):
			return 1
		}
		return 0
	})
	// Doubled ranks stay integers with ties' mean ranks (i+j+1 for a tie
	// group spanning positions i..j-1, 0-based).
	ranks2 := make([]int, n)
	tieTerm := 0.0
	for i := 0; i < n; {
		j := i + 1
		for j < n && math.Abs(math.Abs(nz[j])-math.Abs(nz[i])) <= zero {
			j++
		}
		for k := i; k < j; k++ {
			ranks2[k] = i + j + 1
		}
		t := float64(j - i)
		tieTerm += t*t*t - t
		i = j
	}
	w2 := 0 // twice W+
	for i, x := range nz {
		if x > 0 {
			w2 += ranks2[i]
		}
	}
	if n <= exactWilcoxon {
		return exactSignedRank(ranks2, w2)
	}
	fn := float64(n)
	mean := fn * (fn + 1) / 4
	variance := fn*(fn+1)*(2*fn+1)/24 - tieTerm/48
	if variance <= 0 {
		return 1
	}
	dev := math.Abs(float64(w2)/2-mean) - 0.5
	if dev < 0 {
		dev = 0
	}
	z := dev / math.Sqrt(variance)
	return math.Min(1, math.Erfc(z/math.Sqrt2))
}

// exactSignedRank returns the two-sided p-value of twice W+ = w2 given
// the doubled ranks ranks2: twice the smaller tail of its distribution
// over every assignment of signs, at most 1.
func exactSignedRank(ranks2 []int, w2 int) float64 {
	total := 0
	for _, r := range ranks2 {
		total += r
	}
	// counts[s]: the sign assignments whose positive ranks sum to s.
	counts := make([]float64, total+1)
	counts[0] = 1
	for _, r := range ranks2 {
		for s := total; s >= r; s-- {
			counts[s] += counts[s-r]
		}
	}
	all := math.Pow(2, float64(len(ranks2)))
	lower, upper := 0.0, 0.0
	for s, c := range counts {
		if s <= w2 {
			lower += c
		}
		if s >= w2 {
			upper += c
		}
	}
	return math.Min(1, 2*math.Min(lower, upper)/all)
}
