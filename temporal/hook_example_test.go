package temporal_test

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/temporal"
)

// A runtime whose swarm "review" runs on Temporal: its Start, Wait,
// Resume, Stop and Events are the swarm API's, and a worker of the task
// queue runs the workflows. (Compiled, not run: it needs a Temporal
// cluster at localhost:7233; TestHookSameAPI runs the same on a server in
// process.)
func ExampleHook() {
	ctx := context.Background()
	var st store.Store // the store swarm serve reads too
	review := swarm.Define[string, string]("review", "Reviews a change", nil)
	// snippet hook
	c, err := client.Dial(client.Options{HostPort: "localhost:7233"})
	h := temporal.NewHook(temporal.Options{Client: c}, "review") // no names: every swarm
	rt, err := swarm.New(swarm.Config{Store: st, Engine: h})
	w := worker.New(c, temporal.DefaultTaskQueue, worker.Options{})
	h.Engine().Register(w) // the workflows and activities
	err = w.Start()
	run, err := review.Start(ctx, rt, "the pull request")
	res, err := run.Wait(ctx)
	// end snippet
	fmt.Println(res, err)
}
