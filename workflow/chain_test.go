package workflow_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/workflow"
)

type words []string

// Seven stages of four types written flat run as the nested Thens would,
// under the same keys; a chain of one type is checked by the compiler.
func TestChainFlat(t *testing.T) {
	count := workflow.Func("count", func(_ context.Context, s string) (int, error) { return len(s), nil })
	double := workflow.Func("double", func(_ context.Context, n int) (int, error) { return 2 * n, nil })
	show := workflow.Func("show", func(_ context.Context, n int) (string, error) { return strconv.Itoa(n), nil })
	split := workflow.Func("split", func(_ context.Context, s string) ([]string, error) { return strings.Split(s, ""), nil })
	glue := workflow.Func("glue", func(_ context.Context, w words) (string, error) { return strings.Join(w, "-"), nil })
	up := workflow.Func("up", func(_ context.Context, s string) (string, error) { return strings.ToUpper(s), nil })
	wrap := workflow.Func("wrap", func(_ context.Context, s string) (string, error) { return "<" + s + ">", nil })
	flat := workflow.Chain[string, string](count, double, show, split, glue, workflow.Seq(up, wrap))
	rt, id, st := run(t, workflow.Define("flat", "seven stages", flat), nil, `"abcdef"`)
	if st.State != swarm.StateCompleted || string(st.Result) != `"\u003c1-2\u003e"` {
		t.Fatalf("state %s (%s) result %s, want <1-2>", st.State, st.Reason, st.Result)
	}
	if got := strings.Join(keys(t, rt, id, swarm.EventRecorded), " "); got != "count double show split glue up wrap" {
		t.Errorf("recorded %q, want the seven stages' keys", got)
	}
	if _, err := workflow.New("named", "", flat.Named("stages")); err != nil {
		t.Errorf("a named chain: %v", err)
	}
}

// A chain whose types do not fit is refused when it is made, naming the
// steps.
func TestChainTypes(t *testing.T) {
	count := workflow.Func("count", func(_ context.Context, s string) (int, error) { return len(s), nil })
	up := workflow.Func("up", func(_ context.Context, s string) (string, error) { return s, nil })
	for _, c := range []struct {
		step workflow.Step[string, string]
		want string
	}{
		{workflow.Chain[string, string](count, up), "step 2 (up) takes string, but step 1 (count) gives int"},
		{workflow.Chain[string, string](up, count), "step 2 (count) gives int, not the chain's output string"},
		{workflow.Chain[string, string](), "no steps"},
		{workflow.Chain[string, string](up, up), `two steps named "up"`},
	} {
		if _, err := workflow.New("w", "", c.step); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	if _, err := workflow.New("w", "", workflow.Chain[int, string](up)); err == nil || !strings.Contains(err.Error(), "step 1 (up) takes string, not the chain's input int") {
		t.Errorf("error %v, want the input refused", err)
	}
}
