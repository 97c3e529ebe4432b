package eval

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// This file renders reports and comparisons for a reader at a terminal
// (swarm eval run, swarm eval compare): a table of the cases and their
// scores, the explanations of what did not pass, and a summary line.

// Verdict is a case's outcome in one word: "pass", "fail" or "error".
func (c CaseResult) Verdict() string {
	switch {
	case c.Error != "":
		return "error"
	case c.Pass:
		return "pass"
	}
	return "fail"
}

// WriteTable writes r as a table, one row per case (its verdict, its
// scores, what its run spent), then what each case that did not pass got
// wrong, then a summary line with the pass rate and the threshold.
func WriteTable(w io.Writer, r *Report) error {
	ew := &errWriter{w: w}
	tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tSCORES\tCALLS\tTOKENS\tTIME")
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", c.Case, strings.ToUpper(c.Verdict()), scoreCells(c.Scores),
			c.Observed.ModelCalls, c.Observed.Tokens, roundDuration(time.Duration(c.Observed.Duration)))
	}
	_ = tw.Flush()
	var notes []string
	for _, c := range r.Cases {
		if c.Pass && c.Error == "" {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s (%s", c.Case, c.Verdict())
		if c.Observed.RunID != "" {
			fmt.Fprintf(&b, ", run %s", c.Observed.RunID)
		}
		b.WriteString("):\n")
		if c.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", oneLine(c.Error, 300))
		}
		for _, s := range c.Scores {
			switch {
			case s.Error != "":
				fmt.Fprintf(&b, "  %s: error: %s\n", s.Name, oneLine(s.Error, 300))
			case !s.Pass:
				fmt.Fprintf(&b, "  %s %.2f < %.2f: %s\n", s.Name, s.Value, s.Threshold, indent(cmp.Or(s.Explanation, s.Label), "    "))
			}
		}
		notes = append(notes, b.String())
	}
	if len(notes) > 0 {
		fmt.Fprintln(ew)
		fmt.Fprint(ew, strings.Join(notes, ""))
	}
	fmt.Fprintln(ew)
	fmt.Fprintln(ew, Summary(r))
	return ew.err
}

// Summary is a report in one line: the set, the configuration, the pass
// rate against the threshold, the counts and the spending.
func Summary(r *Report) string {
	var b strings.Builder
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "%s: %s", verdict, r.Set)
	if r.Config != "" {
		fmt.Fprintf(&b, " against %s", r.Config)
	}
	fmt.Fprintf(&b, ": %d/%d passed (%s, threshold %s)", r.Passed, len(r.Cases), percent(r.PassRate), percent(effectiveThreshold(r.Threshold)))
	fmt.Fprintf(&b, ", %d failed, %d errors", r.Failed, r.Errors)
	if len(r.Scores) > 0 {
		var ss []string
		for _, name := range slices.Sorted(maps.Keys(r.Scores)) {
			ss = append(ss, fmt.Sprintf("%s %.2f", name, r.Scores[name]))
		}
		fmt.Fprintf(&b, "; mean scores: %s", strings.Join(ss, ", "))
	}
	fmt.Fprintf(&b, "; %d model calls, %d tokens", r.ModelCalls, r.Tokens)
	if r.Cost > 0 {
		fmt.Fprintf(&b, ", $%.4f", r.Cost)
	}
	if !r.Started.IsZero() && !r.Ended.IsZero() {
		fmt.Fprintf(&b, ", %s", roundDuration(r.Ended.Sub(r.Started)))
	}
	if r.RunID != "" {
		fmt.Fprintf(&b, " (eval run %s)", r.RunID)
	}
	return b.String()
}

// WriteComparison writes c as a reader compares two configurations: the
// pass rates with the cases fixed and broken and the p-value of the
// change, each score's means and p-value, then the cases whose outcome,
// scores, output or trajectory changed, with their diffs.
func WriteComparison(w io.Writer, c *Comparison) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "base:  %s (eval run %s)\nother: %s (eval run %s)\n\n", c.Base, c.BaseRun, c.Other, c.OtherRun)
	tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCORE\tN\tBASE\tOTHER\tDELTA\tP")
	fmt.Fprintf(tw, "pass rate\t%d\t%s\t%s\t%s\t%s\n", len(c.Cases), percent(c.BasePassRate), percent(c.OtherPassRate), signedPercent(c.PassRateDelta), pValue(c.PassP))
	for _, s := range c.Scores {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%+.2f\t%s\n", s.Name, s.N, s.Base, s.Other, s.Delta, pValue(s.P))
	}
	_ = tw.Flush()
	fmt.Fprintf(ew, "\n%d fixed, %d broken (McNemar p = %s); scores by Wilcoxon signed-rank\n", c.Fixed, c.Broken, pValue(c.PassP))
	var changed []CaseDelta
	for _, d := range c.Cases {
		if d.BasePass != d.OtherPass || d.OutputChanged || d.TrajectoryChanged || anyNonZero(d.Scores) {
			changed = append(changed, d)
		}
	}
	if len(changed) > 0 {
		fmt.Fprintln(ew)
		tw = tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CASE\tBASE\tOTHER\tSCORE DELTAS\tCHANGED")
		for _, d := range changed {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Case, passWord(d.BasePass), passWord(d.OtherPass), deltaCells(d.Scores), changedWhat(d))
		}
		_ = tw.Flush()
		for _, d := range changed {
			if d.Diff != "" {
				fmt.Fprintf(ew, "\n%s:\n  %s\n", d.Case, indent(d.Diff, "  "))
			}
		}
	} else {
		fmt.Fprintln(ew, "\nno case changed")
	}
	if c.Verdict != "" {
		fmt.Fprintf(ew, "\n%s\n", c.Verdict)
	}
	return ew.err
}

// scoreCells is a case's scores in one cell: name=value, a failed score
// marked with ✗ and one that could not be scored with "err".
func scoreCells(scores []Score) string {
	if len(scores) == 0 {
		return "-"
	}
	var cells []string
	for _, s := range scores {
		switch {
		case s.Error != "":
			cells = append(cells, s.Name+"=err")
		case s.Pass:
			cells = append(cells, fmt.Sprintf("%s=%.2f", s.Name, s.Value))
		default:
			cells = append(cells, fmt.Sprintf("%s=%.2f✗", s.Name, s.Value))
		}
	}
	return strings.Join(cells, " ")
}

func deltaCells(d map[string]float64) string {
	var cells []string
	for _, name := range slices.Sorted(maps.Keys(d)) {
		if d[name] != 0 {
			cells = append(cells, fmt.Sprintf("%s %+.2f", name, d[name]))
		}
	}
	if len(cells) == 0 {
		return "-"
	}
	return strings.Join(cells, " ")
}

func anyNonZero(d map[string]float64) bool {
	for _, v := range d {
		if v != 0 {
			return true
		}
	}
	return false
}

func changedWhat(d CaseDelta) string {
	var what []string
	if d.OutputChanged {
		what = append(what, "output")
	}
	if d.TrajectoryChanged {
		what = append(what, "trajectory")
	}
	if len(what) == 0 {
		return "-"
	}
	return strings.Join(what, ", ")
}

func passWord(p bool) string {
	if p {
		return "pass"
	}
	return "FAIL"
}

// effectiveThreshold is a set's threshold as the runner applies it: 0
// means every case.
func effectiveThreshold(t float64) float64 {
	if t <= 0 {
		return 1
	}
	return t
}

// percent prints a rate as a percentage with at most one decimal: 80%,
// 66.7%.
func percent(f float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(100*f, 'f', 1, 64), ".0") + "%"
}

func signedPercent(f float64) string {
	return fmt.Sprintf("%+.1f pp", 100*f)
}

// pValue prints a p-value with the precision a reader needs.
func pValue(p float64) string {
	switch {
	case p < 0.001:
		return "<0.001"
	case p >= 0.995:
		return "1"
	}
	return fmt.Sprintf("%.3f", p)
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// oneLine collapses s's white space and cuts it to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// indent puts prefix before every line of s but the first.
func indent(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

// errWriter keeps the first error of a series of writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, nil
}
