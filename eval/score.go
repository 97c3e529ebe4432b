package eval

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// The names of the built-in scores. Output checks are scored apart, so
// that a report's mean similarity means similarity.
const (
	scoreStatus     = "status"
	scoreExact      = "output.exact"
	scoreContains   = "output.contains"
	scoreRegex      = "output.regex"
	scoreFields     = "output.fields"
	scoreSchema     = "output.schema"
	scoreSimilar    = "output.similar"
	scoreTrajectory = "trajectory"
	scoreForbid     = "forbid"
	scoreBounds     = "bounds"
)

var builtinScores = []string{scoreStatus, scoreExact, scoreContains, scoreRegex, scoreFields, scoreSchema,
	scoreSimilar, scoreTrajectory, scoreForbid, scoreBounds}

// The statuses Expect.Status may name.
var expectStatuses = []string{"completed", "failed", "paused", "stopped", "any"}

// scoreCase scores case c of set s from its run's observation o: every
// built-in scorer c.Expect asks for (status, output, trajectory, forbidden
// calls, bounds), the rubrics by their judge, then the custom scorers it
// names, looked up in custom.
//
// A scorer that cannot score (an unknown custom scorer, one that fails or
// panics, a judge whose answers stay malformed) gives a Score with Error
// set, and scoreCase goes on with the others; the error it returns then
// joins those errors (wrapped: errors.Is and errors.As see them): the case
// is an error, never a pass. A judge that cannot be asked at all ends the
// scoring there, as the eval run may be stopping. When ctx ends,
// scoreCase returns ctx's error and no scores: a stopped eval run is not
// the case's fault.
func scoreCase(ctx context.Context, j Judge, s *Set, c Case, o Observed, custom map[string]Scorer) ([]Score, error) {
	e := c.Expect
	var scores []Score
	if st := statusScore(e.Status, o); st != nil {
		scores = append(scores, *st)
	}
	if e.Output != nil {
		scores = append(scores, outputScores(*e.Output, o.Output)...)
	}
	if e.Trajectory != nil {
		scores = append(scores, trajectoryScore(*e.Trajectory, o.Calls))
	}
	if len(e.Forbid) > 0 {
		scores = append(scores, forbidScore(e.Forbid, o.Calls))
	}
	if e.Bounds != nil {
		scores = append(scores, boundsScore(*e.Bounds, o))
	}
	var errs []error
	for _, sc := range scores {
		if sc.Error != "" { // a check validateExpect would have refused
			errs = append(errs, fmt.Errorf("%s: %s", sc.Name, sc.Error))
		}
	}
	for _, r := range e.Rubrics {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sc, err := judgeRubric(ctx, j, s, c, o, r)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		scores = append(scores, sc)
		if err != nil {
			errs = append(errs, err)
			if _, ok := errors.AsType[*askError](err); ok {
				return scores, fmt.Errorf("case %q: %w", c.ID, errors.Join(errs...))
			}
		}
	}
	for _, name := range e.Scorers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		got, err := runCustom(ctx, j, c, o, name, custom)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			errs = append(errs, err)
			got = []Score{{Name: name, Label: "error", Error: err.Error()}}
		}
		for i := range got {
			if got[i].Error != "" && err == nil { // a score the scorer could not give
				got[i].Pass = false
				if got[i].Label == "" {
					got[i].Label = "error"
				}
				errs = append(errs, fmt.Errorf("scorer %q: %s: %s", name, got[i].Name, got[i].Error))
			}
		}
		scores = append(scores, got...)
	}
	if len(errs) > 0 {
		return scores, fmt.Errorf("case %q: %w", c.ID, errors.Join(errs...))
	}
	return scores, nil
}

// verdict makes a Score of a value and its threshold, labelled "pass" or
// "fail".
func verdict(name string, value, threshold float64, explanation string) Score {
	sc := Score{Name: name, Value: value, Threshold: threshold, Pass: value >= threshold, Explanation: explanation}
	sc.Label = "fail"
	if sc.Pass {
		sc.Label = "pass"
	}
	return sc
}

// ratio is n over of, 1 when there is nothing to count.
func ratio(n, of int) float64 {
	if of == 0 {
		return 1
	}
	return float64(n) / float64(of)
}

// runCustom runs the custom scorer name on c's run; its error or panic is
// returned as an error, as are scores out of range.
func runCustom(ctx context.Context, j Judge, c Case, o Observed, name string, custom map[string]Scorer) (scores []Score, err error) {
	sc, ok := custom[name]
	if !ok || sc == nil {
		known := slices.Sorted(maps.Keys(custom))
		if len(known) == 0 {
			return nil, fmt.Errorf("unknown scorer %q: no custom scorer is registered (eval.Options.Scorers)", name)
		}
		return nil, fmt.Errorf("unknown scorer %q (registered: %s)", name, strings.Join(known, ", "))
	}
	defer func() {
		if p := recover(); p != nil {
			scores, err = nil, fmt.Errorf("scorer %q panicked: %v", name, p)
		}
	}()
	scores, err = sc.Score(ctx, j, c, o)
	if err != nil {
		return nil, fmt.Errorf("scorer %q: %w", name, err)
	}
	for i := range scores {
		if scores[i].Name == "" {
			scores[i].Name = name
		}
		v := scores[i].Value
		if math.IsNaN(v) || v < 0 || v > 1 {
			return nil, fmt.Errorf("scorer %q: score %q has value %v, want 0 to 1", name, scores[i].Name, v)
		}
	}
	return scores, nil
}

// statusScore scores the run's final status; nil when any status will do.
func statusScore(want string, o Observed) *Score {
	if want == "" {
		want = "completed"
	}
	if want == "any" {
		return nil
	}
	if o.Status == want {
		sc := verdict(scoreStatus, 1, 1, "status "+want)
		return &sc
	}
	expl := fmt.Sprintf("status %s, want %s", orNone(o.Status), want)
	if o.Reason != "" {
		expl += ": " + o.Reason
	}
	sc := verdict(scoreStatus, 0, 1, expl)
	return &sc
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// boundsScore scores what the run spent against b: its value is the
// share of the bounds held.
func boundsScore(b Bounds, o Observed) Score {
	var lines []string
	held, total := 0, 0
	check := func(what string, got, bound float64, set bool, format func(float64) string) {
		if !set {
			return
		}
		total++
		if got <= bound {
			held++
			lines = append(lines, fmt.Sprintf("%s %s within %s", what, format(got), format(bound)))
			return
		}
		lines = append(lines, fmt.Sprintf("%s %s over the bound %s", what, format(got), format(bound)))
	}
	whole := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	check("turns", float64(o.Turns), float64(b.Turns), b.Turns > 0, whole)
	check("model calls", float64(o.ModelCalls), float64(b.ModelCalls), b.ModelCalls > 0, whole)
	check("tokens", float64(o.Tokens), float64(b.Tokens), b.Tokens > 0, whole)
	check("cost", o.Cost, b.Cost, b.Cost > 0, func(v float64) string { return fmt.Sprintf("$%.4f", v) })
	check("duration", float64(o.Duration), float64(b.Duration), b.Duration > 0,
		func(v float64) string { return time.Duration(v).String() })
	return verdict(scoreBounds, ratio(held, total), 1, strings.Join(lines, "; "))
}

// validateExpect checks the expectations of case c when its set is
// loaded: everything that can be wrong before a run (a regular
// expression or schema that does not compile, an unknown kind of match,
// a threshold out of 0 to 1, a negative bound, a rubric with nothing to
// judge by...). Each error names the case and the field.
func validateExpect(c Case) error {
	v := &validator{id: c.ID}
	e := c.Expect
	if e.Status != "" && !slices.Contains(expectStatuses, e.Status) {
		v.errf("expect.status", "unknown status %q (want one of %s)", e.Status, strings.Join(expectStatuses, ", "))
	}
	if e.Output != nil {
		validateOutput(v, *e.Output)
	}
	if e.Trajectory != nil {
		validateTrajectory(v, *e.Trajectory)
	}
	for i, f := range e.Forbid {
		validateCall(v, fmt.Sprintf("expect.forbid[%d]", i), f)
	}
	if e.Bounds != nil {
		validateBounds(v, *e.Bounds)
	}
	names := map[string]string{}
	for _, n := range builtinScores {
		names[n] = "a built-in score"
	}
	for i, r := range e.Rubrics {
		field := fmt.Sprintf("expect.rubrics[%d]", i)
		validateRubric(v, field, r)
		if r.Name != "" {
			if prev, dup := names[r.Name]; dup {
				v.errf(field+".name", "%q is already the name of %s", r.Name, prev)
			}
			names[r.Name] = field
		}
	}
	seen := map[string]bool{}
	for i, name := range e.Scorers {
		field := fmt.Sprintf("expect.scorers[%d]", i)
		switch {
		case strings.TrimSpace(name) == "":
			v.errf(field, "empty scorer name")
		case seen[name]:
			v.errf(field, "scorer %q is named twice", name)
		}
		seen[name] = true
	}
	return errors.Join(v.errs...)
}

// validator collects the mistakes of one case's expectations.
type validator struct {
	id   string
	errs []error
}

func (v *validator) errf(field, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("case %q: %s: %s", v.id, field, fmt.Sprintf(format, args...)))
}

// unit checks a threshold-like value is within 0 to 1.
func (v *validator) unit(field string, x float64) {
	if !(x >= 0 && x <= 1) {
		v.errf(field, "%v is out of range: want 0 to 1", x)
	}
}

func validateBounds(v *validator, b Bounds) {
	for _, f := range []struct {
		name string
		neg  bool
	}{
		{"turns", b.Turns < 0}, {"model_calls", b.ModelCalls < 0}, {"tokens", b.Tokens < 0},
		{"cost", b.Cost < 0 || math.IsNaN(b.Cost) || math.IsInf(b.Cost, 0)}, {"duration", b.Duration < 0},
	} {
		if f.neg {
			v.errf("expect.bounds."+f.name, "must be a positive number (0: unbounded)")
		}
	}
	if b == (Bounds{}) {
		v.errf("expect.bounds", "no bound given (turns, model_calls, tokens, cost or duration)")
	}
}
