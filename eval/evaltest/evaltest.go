// Package evaltest runs an eval set from go test: each case is a subtest,
// and a case that fails fails its subtest with its scores' explanations
// (the diff of its output or trajectory, the judge's reasons).
//
//	func TestSupport(t *testing.T) {
//		set, err := eval.Load("testdata/support.yaml")
//		if err != nil {
//			t.Fatal(err)
//		}
//		evaltest.Run(t, rt, set, eval.RunOptions{})
//	}
package evaltest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/eval"
)

// Run runs s on rt (defining the eval runner with default options unless
// rt has one) as one eval run, then reports each of its cases as a
// subtest of t named after the case: a case that failed or could not be
// run or scored fails its subtest with what went wrong. It returns the
// report (nil when the eval run itself failed, which fails t). The set's
// threshold is not applied: each case stands for itself.
func Run(t *testing.T, rt *swarm.Runtime, s *eval.Set, o eval.RunOptions) *eval.Report {
	t.Helper()
	ctx := t.Context()
	if !defined(rt) {
		if err := eval.Define(rt, eval.Options{}); err != nil {
			t.Fatalf("evaltest: %v", err)
		}
	}
	rep, err := eval.Run(ctx, rt, s, o)
	if err != nil {
		t.Fatalf("evaltest: eval run of %s: %v", s.Name, err)
		return nil
	}
	for _, c := range rep.Cases {
		t.Run(c.Case, func(t *testing.T) {
			if msg := Failure(c); msg != "" {
				t.Error(msg)
			}
		})
	}
	return rep
}

// defined reports whether rt has the eval runner.
func defined(rt *swarm.Runtime) bool {
	for _, d := range rt.Swarms() {
		if d.ID() == eval.SwarmID {
			return true
		}
	}
	return false
}

// Failure says why case c did not pass, a line per failed score with its
// explanation ("" when it passed).
func Failure(c eval.CaseResult) string {
	if c.Pass && c.Error == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "case %s failed (run %s, %s)", c.Case, c.Observed.RunID, c.Observed.Status)
	if c.Observed.Reason != "" {
		fmt.Fprintf(&b, ": %s", c.Observed.Reason)
	}
	if c.Error != "" {
		fmt.Fprintf(&b, "\nerror: %s", c.Error)
	}
	for _, sc := range c.Scores {
		if sc.Pass && sc.Error == "" {
			continue
		}
		fmt.Fprintf(&b, "\n%s: %.2f (threshold %.2f)", sc.Name, sc.Value, sc.Threshold)
		if sc.Error != "" {
			fmt.Fprintf(&b, " error: %s", sc.Error)
		}
		if sc.Explanation != "" {
			fmt.Fprintf(&b, "\n  %s", strings.ReplaceAll(sc.Explanation, "\n", "\n  "))
		}
	}
	return b.String()
}
