package swarm_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
)

// renewSwitch is a memory store whose lease renewals fail while failing
// is set: a process cut off from its store.
type renewSwitch struct {
	*memory.Store
	failing atomic.Bool
}

func (s *renewSwitch) Renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	if s.failing.Load() {
		return store.Renewal{}, store.ErrUnavailable
	}
	return s.Store.Renew(ctx, owner, lease)
}

// A run started on the id of a deleted run is driven, even where a driver
// of the deleted run, at a later claim of it, is still stuck in a tool
// call: the new run's lease (epoch 1, from its creation) is not taken for
// an older claim of the same run.
func TestReusedIDDrivenBesideAStaleDriver(t *testing.T) {
	ctx := ctxT(t)
	base := memory.New()
	st := &renewSwitch{Store: base}
	release := make(chan struct{})
	holding := make(chan struct{}, 1)
	hold := swarm.NewTool("hold", "holds", func(context.Context, struct{}) (string, error) {
		holding <- struct{}{}
		<-release // stuck: it does not heed its context
		return "released", nil
	})
	held := swarm.Define[string, string]("held", "", func(string) swarm.Spec { return swarm.Spec{Instructions: "Hold.", Tools: []swarm.Tool{hold}} })
	plain := swarm.Define[string, string]("plain", "", func(string) swarm.Spec { return swarm.Spec{Instructions: "Answer."} })
	a, err := swarm.New(swarm.Config{Store: st, Owner: "A", Lease: 100 * time.Millisecond, PollInterval: 10 * time.Millisecond, RetryBackoff: time.Millisecond,
		Model: scripted.New(scripted.Script{"held": {scripted.Tools(scripted.CallTool("hold", nil)), scripted.Text("done")}, "plain": {scripted.Text("fresh")}})})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer close(release)
	if err := a.Register(held, plain); err != nil {
		t.Fatal(err)
	}

	// Run r, left unowned by a process that died, is claimed here (its
	// second claim) and gets stuck in its tool call.
	data, _ := json.Marshal(swarm.Event{Swarm: "held", Input: json.RawMessage(`"x"`), Agent: "held", MaxTurns: 10})
	if _, err := base.Create(ctx, store.Run{ID: "r", Swarm: "held", Agent: "held", MaxTurns: 10}, "", 0,
		[]store.Record{{Key: "start", Type: string(swarm.EventStarted), Data: data, Time: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	<-holding
	// Cut off from the store, this process loses r to another, which
	// fails it; r is deleted.
	st.failing.Store(true)
	var l store.Lease
	for {
		if l, err = base.Claim(ctx, "r", "B", time.Minute); err == nil {
			break
		}
		if !errors.Is(err, store.ErrLeased) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := base.Append(ctx, l, []store.Record{{Key: "end", Type: string(swarm.EventFailed), Data: []byte(`{}`), Time: time.Now()}},
		store.Update{State: store.Failed, Reason: "given up by B"}); err != nil {
		t.Fatal(err)
	}
	if _, err := base.DeleteRun(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	st.failing.Store(false)

	// A new run r, started here, runs to its end.
	res, _, err := plain.Run(ctx, a, "hi", swarm.WithID("r"))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "fresh" {
		t.Fatalf("new run r: %+v, want it completed", res)
	}
}
