package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/temporal"
	"go.temporal.io/server/temporaltest"
)

// A swarm runs as a Temporal workflow: a worker registers the engine's
// workflow and activities, and the engine starts and waits for runs. The
// run's journal is in the runtime's store, as for a run of Swarm's own
// engine.
func Example() {
	ts := temporaltest.NewServer() // a Temporal server in this process
	defer ts.Stop()

	greeter := swarm.Define[string, string]("greeter", "greets", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Greet the user."}
	})
	rt, _ := swarm.New(swarm.Config{Model: scripted.New(scripted.Script{"greeter": {scripted.Text("Hello, Ada!")}})})
	defer rt.Close()
	_ = rt.Register(greeter)

	e, _ := temporal.New(rt, temporal.Options{Client: ts.GetDefaultClient(), TaskQueue: "swarm"})
	ts.NewWorker("swarm", e.Register)

	ctx := context.Background()
	id, err := e.Start(ctx, "greeter", "", json.RawMessage(`"Ada"`))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := e.Wait(ctx, id)
	fmt.Println(out.Status, string(out.Result))
	history, _ := rt.History(ctx, id, 0)
	fmt.Println(history[len(history)-1].Type)
	// Output:
	// completed "Hello, Ada!"
	// completed
}
