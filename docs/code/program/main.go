package main

import (
	"context"
	"fmt"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	_ "github.com/swarmrt/swarm/store/sqlite"
)

type Day struct {
	Day string `json:"day" jsonschema:"saturday or sunday"`
}

var forecast = swarm.NewTool("forecast", "The forecast for a day",
	func(ctx context.Context, in Day) (string, error) { return "sunny, 22C", nil })

var weather = &swarm.Agent{
	Name:         "weather",
	Description:  "Weather forecasts",
	Instructions: "You answer with the forecast tool.",
	Tools:        []swarm.Tool{forecast},
}

type Plan struct {
	Activity string `json:"activity"`
	Day      string `json:"day"`
}

var planner = swarm.Define[string, Plan]("planner", "Recommends an outdoor activity",
	func(request string) swarm.Spec {
		return swarm.Spec{
			Instructions: "Ask the weather agent, then recommend one activity for: {{.Input}}",
			Handoffs:     []swarm.Handoff{swarm.ToAgent(weather)},
		}
	})

func main() {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:runs.db") // every step of every run is journaled here
	if err != nil {
		panic(err)
	}
	m := scripted.New(scripted.Script{ // offline; model.Open("openai:gpt-4.1-mini") for a real one
		"planner": {
			scripted.Tools(scripted.CallTool("handoff_to_weather", map[string]any{"request": "Saturday?"})),
			scripted.Text(`{"activity": "hiking", "day": "Saturday"}`),
		},
		"weather": {
			scripted.Tools(scripted.CallTool("forecast", map[string]any{"day": "saturday"})),
			scripted.Text("Sunny, 22C on Saturday."),
		},
	})
	rt, err := swarm.New(swarm.Config{Store: st, Model: m})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	res, _, err := planner.Run(ctx, rt, "something outdoors this weekend")
	if err != nil {
		panic(err)
	}
	if done, ok := res.(swarm.Completed[Plan]); ok {
		fmt.Printf("%s on %s\n", done.Output.Activity, done.Output.Day) // typed: a Plan
	}
}
