package eval

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The ways Trajectory.Match and Call.ArgsMatch may compare.
var (
	trajectoryMatches = []string{"exact", "in_order", "any_order", "subset"}
	argsMatches       = []string{"exact", "fields"}
)

// maxDiffLines bounds the lines of a trajectory's explanation.
const maxDiffLines = 60

// wantCall is an expected or forbidden call with its arguments decoded
// once.
type wantCall struct {
	Call
	args    any
	argsErr error
	ignore  [][]string
}

func wantCalls(calls []Call) []wantCall {
	out := make([]wantCall, len(calls))
	for i, c := range calls {
		out[i] = wantCall{Call: c}
		if c.Args != nil {
			out[i].args, out[i].argsErr = normalize(c.Args)
		}
		for _, p := range c.Ignore {
			out[i].ignore = append(out[i].ignore, splitPath(p))
		}
	}
	return out
}

// wantArgsError is the first error of expected arguments that are not
// JSON (validateExpect refuses them in a set that was loaded).
func wantArgsError(calls []wantCall) error {
	for _, c := range calls {
		if c.argsErr != nil {
			return fmt.Errorf("call %s: args are not JSON: %w", c.Name, c.argsErr)
		}
	}
	return nil
}

// gotCall is an observed call with its arguments decoded once.
type gotCall struct {
	ObservedCall
	args    any
	argsErr error
}

func gotCalls(calls []ObservedCall) []gotCall {
	out := make([]gotCall, len(calls))
	for i, c := range calls {
		out[i] = gotCall{ObservedCall: c, args: map[string]any{}} // no arguments: an empty object
		if len(c.Args) > 0 {
			out[i].args, out[i].argsErr = decodeJSON(c.Args)
		}
	}
	return out
}

// callDiff lists how got differs from want; none when got is a call
// that want describes.
func callDiff(want wantCall, got gotCall) []string {
	d := &differ{}
	d.call(want, got)
	return d.diffs
}

// callMatches reports whether got is a call that want describes: callDiff
// without its words, as fast as the matching of long runs needs.
func callMatches(want wantCall, got gotCall) bool {
	d := &differ{quick: true}
	d.call(want, got)
	return !d.differs
}

// differ compares calls and values, listing the differences or, when
// quick, stopping at the first.
type differ struct {
	quick   bool
	differs bool
	diffs   []string
}

// fail records a difference and reports whether to describe it (with
// add): a quick differ formats nothing.
func (d *differ) fail() bool {
	d.differs = true
	return !d.quick
}

func (d *differ) add(format string, args ...any) {
	d.diffs = append(d.diffs, fmt.Sprintf(format, args...))
}

func (d *differ) done() bool { return d.quick && d.differs }

func (d *differ) call(want wantCall, got gotCall) {
	if want.Name != got.Name {
		if d.fail() {
			d.add("name: want %q, got %q", want.Name, got.Name)
		}
		return
	}
	if want.Agent != "" && want.Agent != got.Agent {
		if d.fail() {
			d.add("agent: want %q, got %q", want.Agent, orNone(got.Agent))
		}
	}
	switch {
	case d.done() || want.Args == nil || want.argsErr != nil: // the latter reported by wantArgsError
	case got.argsErr != nil:
		if d.fail() {
			d.add("args: not JSON: %v", got.argsErr)
		}
	default:
		d.value(want.args, got.args, want.ArgsMatch == "exact", []string{"args"}, want.ignore)
	}
}

// value compares got with want at path (its first segment, "args", names
// the root). Objects compare by the fields want gives unless exact, when
// got may have no others; fields at a path matching one of ignore ("*"
// matches any key or index) are left out.
func (d *differ) value(want, got any, exact bool, path []string, ignore [][]string) {
	at := func(p []string) string { return strings.Join(p, ".") }
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			if d.fail() {
				d.add("%s: want an object, got %s", at(path), compact(got))
			}
			return
		}
		keys := maps.Keys(w)
		if !d.quick {
			keys = slices.Values(slices.Sorted(keys)) // differences in a stable order
		}
		for k := range keys {
			p := path
			if !d.quick || len(ignore) > 0 {
				p = append(path[:len(path):len(path)], k)
			}
			if ignored(p[1:], ignore) {
				continue
			}
			if gv, ok := g[k]; ok {
				d.value(w[k], gv, exact, p, ignore)
			} else {
				if d.fail() {
					d.add("%s: missing, want %s", at(p), compact(w[k]))
				}
			}
			if d.done() {
				return
			}
		}
		if exact {
			for _, k := range slices.Sorted(maps.Keys(g)) {
				p := append(path[:len(path):len(path)], k)
				if _, ok := w[k]; !ok && !ignored(p[1:], ignore) {
					if d.fail() {
						d.add("%s: not expected, got %s", at(p), compact(g[k]))
					}
				}
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			if d.fail() {
				d.add("%s: want %s, got %s", at(path), compact(want), compact(got))
			}
			return
		}
		for i := range w {
			p := path
			if !d.quick || len(ignore) > 0 {
				p = append(path[:len(path):len(path)], strconv.Itoa(i))
			}
			if !ignored(p[1:], ignore) {
				d.value(w[i], g[i], exact, p, ignore)
			}
			if d.done() {
				return
			}
		}
	default:
		if !reflect.DeepEqual(want, got) {
			if d.fail() {
				d.add("%s: want %s, got %s", at(path), compact(want), compact(got))
			}
		}
	}
}

// ignored reports whether path is one of the patterns.
func ignored(path []string, patterns [][]string) bool {
	for _, p := range patterns {
		if len(p) == len(path) && slices.EqualFunc(p, path, func(a, b string) bool { return a == "*" || a == b }) {
			return true
		}
	}
	return false
}

// trajectoryScore compares the run's calls with the expected ones. Its
// value is the share of calls matched (over the larger of the two lists
// when nothing else may happen); it passes when every expected call is
// matched as t.Match asks. The explanation is a diff: "=" a call as
// expected, "-" an expected call missing (with the closest observed
// call and how it differs), "+" an observed call not expected, " " an
// observed call that may happen besides.
func trajectoryScore(t Trajectory, observed []ObservedCall) Score {
	match := t.Match
	if match == "" {
		match = "in_order"
	}
	want, got := wantCalls(t.Calls), gotCalls(observed)
	if err := wantArgsError(want); err != nil {
		return Score{Name: scoreTrajectory, Label: "error", Threshold: 1, Error: err.Error()}
	}
	ok := make([][]bool, len(want))
	for i := range want {
		ok[i] = make([]bool, len(got))
		for j := range got {
			ok[i][j] = callMatches(want[i], got[j])
		}
	}
	var steps []alignStep
	ordered := match == "exact" || match == "in_order"
	if ordered {
		steps = alignInOrder(ok, len(got))
	} else {
		steps = alignAnyOrder(ok, len(got))
	}
	matched := 0
	for _, s := range steps {
		if s.want >= 0 && s.got >= 0 {
			matched++
		}
	}
	strict := match == "exact" || match == "any_order"
	value := ratio(matched, len(want))
	if strict {
		value = ratio(matched, max(len(want), len(got)))
	}
	// The value is 1 exactly when every expected call is matched (and,
	// when strict, nothing else was called): then the score passes.
	sc := verdict(scoreTrajectory, value, 1, "")

	var b strings.Builder
	order := "in order"
	if !ordered {
		order = "in any order"
	}
	fmt.Fprintf(&b, "%s: %d of %s found %s", match, matched, count(len(want), "expected call"), order)
	if extra := len(got) - matched; strict && extra > 0 {
		fmt.Fprintf(&b, ", %d unexpected", extra)
	}
	fmt.Fprintf(&b, " (%s observed)", count(len(got), "call"))
	used := map[int]bool{}
	for _, s := range steps {
		if s.got >= 0 {
			used[s.got] = true
		}
	}
	lines := 0
	for _, s := range steps {
		if lines == maxDiffLines {
			fmt.Fprintf(&b, "\n  … (%d more)", len(steps)-lines)
			break
		}
		lines++
		switch {
		case s.want >= 0 && s.got >= 0:
			fmt.Fprintf(&b, "\n= %s", describeGot(got[s.got], s.got))
		case s.want >= 0:
			fmt.Fprintf(&b, "\n- %s   %s", describeWant(want[s.want]), closest(want[s.want], got, used))
		case strict:
			fmt.Fprintf(&b, "\n+ %s", describeGot(got[s.got], s.got))
		default:
			fmt.Fprintf(&b, "\n  %s", describeGot(got[s.got], s.got))
		}
	}
	if !sc.Pass {
		b.WriteString("\n(= as expected; - expected, missing; ")
		if strict {
			b.WriteString("+ observed, not expected)")
		} else {
			b.WriteString("indented: other calls, allowed)")
		}
	}
	sc.Explanation = b.String()
	return sc
}

// alignStep pairs an expected call with an observed one; -1 on a side
// means none.
type alignStep struct{ want, got int }

// alignInOrder aligns the expected calls with the observed ones by their
// longest common subsequence (ok[i][j]: observed call j is expected call
// i; m observed calls), in the order of both.
func alignInOrder(ok [][]bool, m int) []alignStep {
	n := len(ok)
	// l[i][j] is the length of the longest common subsequence of the
	// expected calls from i and the observed ones from j.
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			best := max(l[i+1][j], l[i][j+1])
			if ok[i][j] {
				best = max(best, 1+l[i+1][j+1])
			}
			l[i][j] = best
		}
	}
	var steps []alignStep
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && ok[i][j] && l[i][j] == 1+l[i+1][j+1]:
			steps = append(steps, alignStep{i, j})
			i++
			j++
		case j < m && (i == n || l[i][j+1] >= l[i+1][j]):
			steps = append(steps, alignStep{-1, j})
			j++
		default:
			steps = append(steps, alignStep{i, -1})
			i++
		}
	}
	return steps
}

// alignAnyOrder pairs as many expected calls with observed ones as can
// be (a maximum bipartite matching: a call that fits several expected
// ones is given to the one that needs it), then lists the expected calls
// in order and the unpaired observed ones after them.
func alignAnyOrder(ok [][]bool, m int) []alignStep {
	n := len(ok)
	owner := make([]int, m) // owner[j]: the expected call observed call j is given to
	for j := range owner {
		owner[j] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for j := range m {
			if ok[i][j] && !seen[j] {
				seen[j] = true
				if owner[j] < 0 || try(owner[j], seen) {
					owner[j] = i
					return true
				}
			}
		}
		return false
	}
	for i := range n {
		try(i, make([]bool, m))
	}
	mine := make([]int, n)
	for i := range mine {
		mine[i] = -1
	}
	for j, i := range owner {
		if i >= 0 {
			mine[i] = j
		}
	}
	var steps []alignStep
	for i, j := range mine {
		steps = append(steps, alignStep{i, j})
	}
	for j, i := range owner {
		if i < 0 {
			steps = append(steps, alignStep{-1, j})
		}
	}
	return steps
}

// closest says which observed call comes closest to an expected one that
// was not found, and how it differs: the one of the same name with the
// fewest differences, preferring calls not matched to another.
func closest(want wantCall, got []gotCall, used map[int]bool) string {
	best, bestDiff := -1, []string(nil)
	for pass := 0; pass < 2 && best < 0; pass++ {
		for j, g := range got {
			if g.Name != want.Name || (pass == 0 && used[j]) {
				continue
			}
			d := callDiff(want, g)
			if best < 0 || len(d) < len(bestDiff) {
				best, bestDiff = j, d
			}
		}
	}
	if best < 0 {
		return fmt.Sprintf("(missing: no call of %s)", want.Name)
	}
	if len(bestDiff) == 0 {
		return fmt.Sprintf("(missing: #%d matches but is out of order or taken by another expected call)", best+1)
	}
	return fmt.Sprintf("(missing: closest %s: %s)", describeGot(got[best], best), strings.Join(firstN(bestDiff, 5), "; "))
}

func describeWant(c wantCall) string {
	s := c.Name
	if c.Args == nil {
		s += " (any args)"
	} else {
		s += " " + compact(c.args)
		if c.ArgsMatch == "exact" {
			s += " (exactly)"
		}
	}
	if len(c.Ignore) > 0 {
		s += " ignoring " + strings.Join(c.Ignore, ", ")
	}
	if c.Agent != "" {
		s += " by " + c.Agent
	}
	return s
}

func describeGot(c gotCall, i int) string {
	s := fmt.Sprintf("#%d %s %s", i+1, c.Name, describeArgs(c))
	if c.Kind == "handoff" {
		s += " (handoff)"
	}
	if c.Agent != "" {
		s += " by " + c.Agent
	}
	return s
}

func describeArgs(c gotCall) string {
	if c.argsErr != nil {
		return clip(string(c.Args), 120)
	}
	return compact(c.args)
}

// forbidScore fails when the run made a call that one of forbid
// describes, and names each such call.
func forbidScore(forbid []Call, observed []ObservedCall) Score {
	rules, got := wantCalls(forbid), gotCalls(observed)
	if err := wantArgsError(rules); err != nil {
		return Score{Name: scoreForbid, Label: "error", Threshold: 1, Error: err.Error()}
	}
	var made []string
	for j, g := range got {
		for _, r := range rules {
			if callMatches(r, g) {
				made = append(made, fmt.Sprintf("%s (forbidden: %s)", describeGot(g, j), describeWant(r)))
				break
			}
		}
	}
	if len(made) == 0 {
		return verdict(scoreForbid, 1, 1, "no forbidden call made (of "+count(len(forbid), "rule")+")")
	}
	return verdict(scoreForbid, 0, 1, fmt.Sprintf("%s made: %s", count(len(made), "forbidden call"), strings.Join(firstN(made, 10), "; ")))
}

func validateTrajectory(v *validator, t Trajectory) {
	if t.Match != "" && !slices.Contains(trajectoryMatches, t.Match) {
		v.errf("expect.trajectory.match", "unknown match %q (want one of %s)", t.Match, strings.Join(trajectoryMatches, ", "))
	}
	if len(t.Calls) == 0 && (t.Match == "" || t.Match == "in_order" || t.Match == "subset") {
		v.errf("expect.trajectory.calls", "no calls: nothing to check (for a run that must make no call, use match exact)")
	}
	for i, c := range t.Calls {
		validateCall(v, fmt.Sprintf("expect.trajectory.calls[%d]", i), c)
	}
}

func validateCall(v *validator, field string, c Call) {
	if strings.TrimSpace(c.Name) == "" {
		v.errf(field+".name", "empty name")
	}
	if c.ArgsMatch != "" && !slices.Contains(argsMatches, c.ArgsMatch) {
		v.errf(field+".args_match", "unknown args_match %q (want one of %s)", c.ArgsMatch, strings.Join(argsMatches, ", "))
	}
	if c.Args != nil {
		if _, err := normalize(c.Args); err != nil {
			v.errf(field+".args", "not JSON: %v", err)
		}
	}
	for i, p := range c.Ignore {
		if slices.Contains(splitPath(p), "") {
			v.errf(fmt.Sprintf("%s.ignore[%d]", field, i), "path %q has an empty segment", p)
		}
	}
}
