package dashboard

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/server"
)

// The evals pages: the eval runs (runs of the eval runner swarm, whose
// result is a report), one eval run's cases with their scores, labels and
// explanations, each linking to its run, live while it runs; and two eval
// runs of a set side by side, their outputs and trajectories diffed. A
// token sees an eval run when it may use the eval swarm and the swarm
// under test.

type evalsData struct {
	Rows []eval.RunInfo
	// Finished are the eval runs that have a report, for the compare form.
	Finished []eval.RunInfo
}

func (d *Dashboard) evalsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	runs, err := server.Evals(ctx, d.rt, pageSize)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := evalsData{Rows: runs}
	for _, e := range runs {
		if e.State == swarm.StateCompleted {
			data.Finished = append(data.Finished, e)
		}
	}
	d.render(w, r, http.StatusOK, "evals", data)
}

type evalData struct {
	Info   eval.RunInfo
	Report *eval.Report
	// Cases are the finished cases: the report's, or while the eval run
	// runs, those its events announced.
	Cases []eval.CaseResult
	// Running are the cases finished so far while the eval run runs.
	Running []eval.Progress
	// Others are the other finished eval runs of the same set, to compare
	// with.
	Others []eval.RunInfo
}

func (e evalData) title() string { return "Eval " + e.Info.Set + " · " + e.Info.ID }

func (d *Dashboard) evalPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	info, rep, err := server.Eval(ctx, d.rt, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := evalData{Info: info, Report: rep}
	if rep != nil {
		data.Cases = rep.Cases
		runs, err := server.Evals(ctx, d.rt, pageSize)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		for _, o := range runs {
			if o.ID != info.ID && o.Set == info.Set && o.State == swarm.StateCompleted {
				data.Others = append(data.Others, o)
			}
		}
	} else if data.Running, err = eval.FinishedCases(ctx, d.rt, info.ID); err != nil {
		d.fail(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "eval", data)
}

type evalCompareData struct {
	Base, Other *eval.Report
	Comparison  *eval.Comparison
	Rows        []sideRow
}

func (e evalCompareData) title() string { return "Compare " + e.Base.RunID + " and " + e.Other.RunID }

// sideRow is a case of two eval runs side by side.
type sideRow struct {
	Case        string
	Base, Other *eval.CaseResult
	Delta       *eval.CaseDelta
	// Output and Trajectory are the two runs' outputs and calls, diffed
	// line by line.
	Output, Trajectory []diffLine
}

func (d *Dashboard) evalComparePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("base") == "" || q.Get("other") == "" {
		d.error(w, r, http.StatusBadRequest, "Choose two eval runs to compare (base and other).")
		return
	}
	var reps [2]*eval.Report
	for i, id := range []string{q.Get("base"), q.Get("other")} {
		info, rep, err := server.Eval(r.Context(), d.rt, id)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if rep == nil {
			d.error(w, r, http.StatusConflict, "Eval run "+id+" is "+string(info.State)+": it has no report to compare yet.")
			return
		}
		reps[i] = rep
	}
	data := evalCompareData{Base: reps[0], Other: reps[1], Comparison: eval.Compare(reps[0], reps[1])}
	deltas := map[string]*eval.CaseDelta{}
	for i := range data.Comparison.Cases {
		deltas[data.Comparison.Cases[i].Case] = &data.Comparison.Cases[i]
	}
	others := map[string]*eval.CaseResult{}
	for i := range reps[1].Cases {
		others[reps[1].Cases[i].Case] = &reps[1].Cases[i]
	}
	seen := map[string]bool{}
	add := func(id string, b, o *eval.CaseResult) {
		row := sideRow{Case: id, Base: b, Other: o, Delta: deltas[id]}
		var bo, oo, bt, ot string
		if b != nil {
			bo, bt = b.Observed.Output, trajectoryText(b.Observed.Calls)
		}
		if o != nil {
			oo, ot = o.Observed.Output, trajectoryText(o.Observed.Calls)
		}
		row.Output, row.Trajectory = diffLines(bo, oo), diffLines(bt, ot)
		data.Rows = append(data.Rows, row)
	}
	for i := range reps[0].Cases {
		b := &reps[0].Cases[i]
		seen[b.Case] = true
		add(b.Case, b, others[b.Case])
	}
	for i := range reps[1].Cases {
		if o := &reps[1].Cases[i]; !seen[o.Case] {
			add(o.Case, nil, o)
		}
	}
	d.render(w, r, http.StatusOK, "evalcompare", data)
}

// trajectoryText is a run's calls one per line, as the diff compares
// them: agent → name(args).
func trajectoryText(calls []eval.ObservedCall) string {
	var b strings.Builder
	for _, c := range calls {
		arrow := "→"
		if c.Kind == "handoff" {
			arrow = "⇒"
		}
		args := string(c.Args)
		var v any
		if json.Unmarshal(c.Args, &v) == nil {
			if canon, err := json.Marshal(v); err == nil {
				args = string(canon)
			}
		}
		fmt.Fprintf(&b, "%s %s %s(%s)\n", c.Agent, arrow, c.Name, args)
	}
	return b.String()
}

// diffLine is a line of a two-sided diff: in both ("same"), only in the
// base ("del") or only in the other ("add").
type diffLine struct {
	Op, Text string
}

// maxDiffLines bounds the lines diffed (the rest compared as one block):
// the LCS table is quadratic.
const maxDiffLines = 400

// diffLines diffs a and b line by line (longest common subsequence).
func diffLines(a, b string) []diffLine {
	al, bl := splitLines(a), splitLines(b)
	if len(al) > maxDiffLines || len(bl) > maxDiffLines {
		if a == b {
			return []diffLine{{"same", a}}
		}
		return []diffLine{{"del", a}, {"add", b}}
	}
	n, m := len(al), len(bl)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case al[i] == bl[j]:
			out = append(out, diffLine{"same", al[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{"del", al[i]})
			i++
		default:
			out = append(out, diffLine{"add", bl[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, diffLine{"del", al[i]})
	}
	for ; j < m; j++ {
		out = append(out, diffLine{"add", bl[j]})
	}
	return out
}

func splitLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// evalFuncs are the template functions of the evals pages.
var evalFuncs = template.FuncMap{
	"pct":       func(f float64) string { return strings.TrimSuffix(strconv.FormatFloat(100*f, 'f', 1, 64), ".0") + "%" },
	"threshold": func(f float64) float64 { return cmp.Or(max(f, 0), 1) },
	"clipText":  clipText,
	"evalDur":   func(d eval.Duration) string { return time.Duration(d).Round(time.Millisecond).String() },
	"int64":     func(n int) int64 { return int64(n) },
	"signed":    func(f float64) string { return fmt.Sprintf("%+.2f", f) },
	"mul100":    func(f float64) float64 { return 100 * f },
}

// clipText cuts s to n runes.
func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
