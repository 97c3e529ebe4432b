package strategy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/swarmtest"
)

// peeker records a value and an error, pauses, and on the drive after the
// answer reads both back with Recorded.
type peeker struct{ seen *[]string }

func (p peeker) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	v, ok, err := d.Recorded("pick")
	*p.seen = append(*p.seen, fmt.Sprintf("pick %s %t %v", v, ok, err))
	if _, err := d.Record(ctx, "pick", "decision", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`2`), nil }); err != nil {
		return nil, err
	}
	_, _ = d.Record(ctx, "bad", "decision", func(context.Context) (json.RawMessage, error) { return nil, errors.New("no luck") })
	if _, err := d.Await(ctx, "ask", strategy.Question{Reason: "go on?"}); err != nil {
		return nil, err
	}
	_, ok, err = d.Recorded("bad")
	var f *strategy.Failure
	*p.seen = append(*p.seen, fmt.Sprintf("bad %t %t", ok, errors.As(err, &f) && f.Reason == "no luck"))
	if _, _, err := d.Recorded("ask"); !errors.Is(err, swarm.ErrInvalid) {
		return nil, fmt.Errorf("Recorded of a pause: %v, want ErrInvalid", err)
	}
	return json.Marshal("ok")
}

// Recorded sees what Record journaled on an earlier drive (a value, or an
// error as a Failure) and nothing on the drive that journals it.
func TestDriverRecorded(t *testing.T) {
	var seen []string
	def := swarm.Define[string, string]("peek", "peeks", func(string) swarm.Spec { return swarm.Spec{Strategy: strategy.Of(peeker{&seen})} })
	rt, _ := swarmtest.NewRuntime(t, nil, def)
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "peek", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.Wait(ctx, id); st.State != swarm.StatePaused {
		t.Fatalf("state %s (%s), want paused", st.State, st.Reason)
	}
	if err := rt.Resume(ctx, id, "yes"); err != nil {
		t.Fatal(err)
	}
	if st, _ := rt.Wait(ctx, id); st.State != swarm.StateCompleted {
		t.Fatalf("state %s (%s), want completed", st.State, st.Reason)
	}
	want := []string{"pick  false <nil>", "pick 2 true <nil>", "bad true true"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("Recorded saw %q, want %q", seen, want)
	}
}
