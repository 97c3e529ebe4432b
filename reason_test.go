package swarm_test

import (
	"context"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
)

// TestPauseReasonClearedWhenRunLeavesPause: a run that paused shows the
// pause's reason only while paused. Once resumed it is running with no
// reason, and it ends with its own outcome's reason (none when completed),
// on every store.
func TestPauseReasonClearedWhenRunLeavesPause(t *testing.T) {
	pause := scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "approve?"}))
	stores := freshStores(t)
	cases := []struct {
		name       string
		after      []scripted.Step
		state      swarm.State
		wantReason string
	}{
		{"completed", []scripted.Step{scripted.Tools(scripted.CallTool("probe", nil)), scripted.Text(`{"activity":"go"}`)}, swarm.StateCompleted, ""},
		{"failed", []scripted.Step{scripted.Tools(scripted.CallTool("probe", nil)), scripted.Tools(scripted.CallTool("fail", map[string]any{"reason": "no way"}))}, swarm.StateFailed, "no way"},
	}
	for sname, open := range stores {
		for _, tc := range cases {
			t.Run(sname+"/"+tc.name, func(t *testing.T) {
				ctx := ctxT(t)
				entered, release := make(chan struct{}), make(chan struct{})
				probe := swarm.NewTool("probe", "waits for the test", func(ctx context.Context, _ struct{}) (string, error) {
					close(entered)
					select {
					case <-release:
						return "ok", nil
					case <-ctx.Done():
						return "", ctx.Err()
					}
				})
				def := swarm.Define[string, Activity]("planner", "Plans activities", func(string) swarm.Spec {
					return swarm.Spec{Instructions: "Plan.", Tools: []swarm.Tool{probe}}
				})
				rt, _ := newRuntime(t, scripted.Script{"planner": append([]scripted.Step{pause}, tc.after...)}, open(t))
				if err := rt.Register(def); err != nil {
					t.Fatal(err)
				}
				id, err := rt.Start(ctx, "planner", []byte(`"x"`))
				if err != nil {
					t.Fatal(err)
				}
				s, err := rt.Wait(ctx, id)
				if err != nil || s.State != swarm.StatePaused || s.Reason != "approve?" {
					t.Fatalf("paused: %+v, %v", s, err)
				}
				if err := rt.Resume(ctx, id, "yes"); err != nil {
					t.Fatal(err)
				}
				select {
				case <-entered:
				case <-ctx.Done():
					t.Fatal("the resumed run never called its tool")
				}
				s, err = rt.Status(ctx, id)
				if err != nil || s.State != swarm.StateRunning || s.Reason != "" {
					t.Errorf("resumed, in a tool: state %s reason %q (%v), want running with no reason", s.State, s.Reason, err)
				}
				close(release)
				s, err = rt.Wait(ctx, id)
				if err != nil || s.State != tc.state || s.Reason != tc.wantReason {
					t.Fatalf("ended: state %s reason %q (%v), want %s with reason %q", s.State, s.Reason, err, tc.state, tc.wantReason)
				}
			})
		}
	}
}
