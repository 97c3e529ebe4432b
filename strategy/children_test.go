package strategy_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/swarmtest"
)

// starter starts a child run of another definition (Child.Swarm), then
// tries an unknown one and the same id as a run of another definition.
type starter struct{ errs chan error }

func (s starter) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	id := d.RunID() + ".echo"
	if err := d.StartChildren(ctx, strategy.Child{ID: id, Swarm: "echo", Input: json.RawMessage(`"hi"`)}); err != nil {
		return nil, err
	}
	// Again: the same child, a no-op.
	if err := d.StartChildren(ctx, strategy.Child{ID: id, Swarm: "echo", Input: json.RawMessage(`"hi"`)}); err != nil {
		return nil, err
	}
	s.errs <- d.StartChildren(ctx, strategy.Child{ID: d.RunID() + ".none", Swarm: "nobody"})
	s.errs <- d.StartChildren(ctx, strategy.Child{ID: id}) // the run's own definition, under the echo child's id
	st, err := d.Runtime().Settle(ctx, id)
	if err != nil {
		return nil, err
	}
	return st.Result, nil
}

func TestStartChildrenOfAnotherSwarm(t *testing.T) {
	ctx := swarmtest.Context(t)
	echo := swarm.Define[string, string]("echo", "Echoes", func(string) swarm.Spec { return swarm.Spec{Instructions: "Echo."} })
	errs := make(chan error, 2)
	parent := swarm.Define[string, string]("parent", "Starts an echo", func(string) swarm.Spec {
		return swarm.Spec{Strategy: strategy.Of(starter{errs: errs}), NoBuiltins: true}
	})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"echo": {scripted.Text("hi back")}}, echo, parent)
	id, err := rt.Start(ctx, "parent", json.RawMessage(`"go"`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Wait(ctx, id)
	if err != nil || st.State != swarm.StateCompleted || string(st.Result) != `"hi back"` {
		t.Fatalf("%s (%s) with %s, %v", st.State, st.Reason, st.Result, err)
	}
	if err := <-errs; !errors.Is(err, swarm.ErrUnknownSwarm) {
		t.Errorf("an unknown swarm: %v", err)
	}
	if err := <-errs; !errors.Is(err, swarm.ErrDuplicate) {
		t.Errorf("the id of a child of another definition: %v", err)
	}
	child, err := rt.Status(ctx, id+".echo")
	if err != nil || child.Parent != id || child.Swarm != "echo" {
		t.Errorf("child %+v %v", child, err)
	}
}
