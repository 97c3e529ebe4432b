package swarm_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// A swarm with a typed result delegates to an agent, then answers with JSON
// that matches its result type.
func ExampleDefine() {
	type Plan struct {
		Activity string `json:"activity"`
	}
	weather := &swarm.Agent{Name: "weather", Description: "Weather forecasts", Instructions: "You forecast the weather."}
	planner := swarm.Define[string, Plan]("planner", "Plans activities", func(request string) swarm.Spec {
		return swarm.Spec{
			Instructions: "Check the weather, then plan: {{.Input}}",
			Handoffs:     []swarm.Handoff{swarm.ToAgent(weather)},
		}
	})
	// A scripted model stands in for a real one.
	m := scripted.New(scripted.Script{
		"planner": {
			scripted.Tools(scripted.CallTool("handoff_to_weather", map[string]any{"request": "weekend forecast"})),
			scripted.Text(`{"activity": "hiking"}`),
		},
		"weather": {scripted.Text("Sunny, 22C")},
	})
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	defer rt.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := planner.Start(ctx, rt, "something outdoors")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, _ := run.Wait(ctx)
	switch r := res.(type) {
	case swarm.Completed[Plan]:
		fmt.Println("activity:", r.Output.Activity)
	case swarm.Failed:
		fmt.Println("failed:", r.Reason)
	}
	for ev := range run.Events(ctx, 0) {
		if ev.Type == swarm.EventHandoffReturned {
			fmt.Printf("%s asked %s: %s\n", ev.Agent, ev.Target, ev.Output)
		}
	}
	// Output:
	// activity: hiking
	// planner asked weather: Sunny, 22C
}

// A run that pauses for a human continues when it is resumed.
func ExampleRuntime_Resume() {
	approval := swarm.Define[string, string]("approval", "Asks before acting", nil)
	m := scripted.New(scripted.Script{"approval": {
		scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "ok to book?"})),
		scripted.Text("booked"),
	}})
	rt, _ := swarm.New(swarm.Config{Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, run, _ := approval.Run(ctx, rt, "book a hut")
	fmt.Println(res.State(), res.(swarm.Paused).Reason)
	_ = rt.Resume(ctx, run.ID(), "yes")
	res, _ = run.Wait(ctx)
	fmt.Println(res.State(), res.(swarm.Completed[string]).Output)
	// Output:
	// paused ok to book?
	// completed booked
}
