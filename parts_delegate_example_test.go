package swarm_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
)

// A child swarm an agent hands off to sees the images of the agent's
// conversation: the run's screenshot reaches the child's model call, by
// reference to the parent's blob.
func ExampleToSwarm_parts() {
	screenshot := []byte("\x89PNG\r\n\x1a\n...the user's screen...")
	vision := swarm.Define[string, string]("vision", "Reads screenshots", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Say what the screen shows."}
	})
	desk := swarm.Define[string, string]("desk", "Support desk", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Ask vision about screenshots.", Handoffs: []swarm.Handoff{swarm.ToSwarm(vision)}}
	})
	m := scripted.New(scripted.Script{
		"desk": {
			scripted.Tools(scripted.CallTool("handoff_to_vision", map[string]any{"request": "What does the screen show?"})),
			scripted.Text("The screen shows a timeout error."),
		},
		// The child's model call asserts that the screenshot arrived.
		"vision": {{ExpectParts: []scripted.ExpectPart{{Type: model.PartImage, MinBytes: len(screenshot)}}, Text: "a timeout error"}},
	})
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, run, err := desk.Run(ctx, rt, "Why does this fail?", swarm.WithParts(model.Image("image/png", screenshot)))
	if err != nil {
		fmt.Println(err)
		return
	}
	kids, _ := rt.List(ctx, store.Filter{Parent: run.ID()})
	for _, k := range kids {
		fmt.Printf("child %s: %s %s\n", k.Swarm, k.State, k.Result)
	}
	fmt.Println(res.(swarm.Completed[string]).Output)
	// Output:
	// child vision: completed "a timeout error"
	// The screen shows a timeout error.
}
