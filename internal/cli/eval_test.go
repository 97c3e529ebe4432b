package cli

import (
	"testing"

	"github.com/swarmrt/swarm/eval"
)

// TestProgressBar: the bar fills in proportion to the finished cases and
// says the counts and the last case.
func TestProgressBar(t *testing.T) {
	for _, c := range []struct {
		p    eval.Progress
		want string
	}{
		{eval.Progress{Done: 0, Total: 4}, "[........................] 0/4  0 passed  0 failed  0 errors  "},
		{eval.Progress{Case: "refund", Done: 1, Total: 4, Passed: 1}, "[######..................] 1/4  1 passed  0 failed  0 errors  refund"},
		{eval.Progress{Case: "a-very-long-case-name-indeed", Done: 3, Total: 3, Passed: 1, Failed: 1, Errors: 1}, "[########################] 3/3  1 passed  1 failed  1 errors  a-very-long-case-na…"},
		{eval.Progress{Done: 5, Total: 0}, "[........................] 5/0  0 passed  0 failed  0 errors  "},
	} {
		if got := progressBar(c.p, c.p.Case); got != c.want {
			t.Errorf("progressBar(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}
