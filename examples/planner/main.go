// Command planner is the activity planner: a swarm with a typed result that
// consults weather, calendar and allergen agents (in parallel, when the model
// asks for them in one response) and recommends an outdoor activity.
//
//	go run ./examples/planner "Suggest outdoor activities for this weekend"
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
)

// Recommendation is the planner's typed result.
type Recommendation struct {
	Activity string `json:"activity" jsonschema:"the recommended activity"`
	Day      string `json:"day" jsonschema:"the day to do it"`
	Why      string `json:"why"`
}

type dayIn struct {
	Day string `json:"day" jsonschema:"saturday or sunday"`
}

var (
	forecast = swarm.NewTool("forecast", "Forecast for a day", func(_ context.Context, in dayIn) (string, error) {
		return map[string]string{"saturday": "sunny, 22C", "sunday": "rain, 14C"}[strings.ToLower(in.Day)], nil
	})
	weather = &swarm.Agent{
		Name: "weather", Description: "Weather forecasts for the weekend",
		Instructions: "You answer questions about the weather using the forecast tool.",
		Tools:        []swarm.Tool{forecast},
	}
	calendar = &swarm.Agent{
		Name: "calendar", Description: "The user's calendar availability",
		Instructions: "You know the user's calendar: Saturday is free, Sunday has a lunch at 12:00.",
	}
	allergens = &swarm.Agent{
		Name: "allergens", Description: "Pollen and allergen levels",
		Instructions: "You report pollen levels: low on Saturday, high on Sunday.",
	}
	planner = swarm.Define[string, Recommendation]("activity-planner", "Recommends outdoor activities",
		func(request string) swarm.Spec {
			return swarm.Spec{
				Instructions: "Using the available handoffs, gather weather, calendar availability and allergen levels, " +
					"then recommend one outdoor activity that is safe and enjoyable. The user asked: {{.Input}}",
				Handoffs: []swarm.Handoff{swarm.ToAgent(weather), swarm.ToAgent(calendar), swarm.ToAgent(allergens)},
			}
		})
)

var script = scripted.Script{
	"activity-planner": {
		scripted.Tools(
			scripted.CallTool("handoff_to_weather", map[string]any{"request": "What is the weekend forecast?"}),
			scripted.CallTool("handoff_to_calendar", map[string]any{"request": "When is the user free this weekend?"}),
			scripted.CallTool("handoff_to_allergens", map[string]any{"request": "Pollen levels this weekend?"}),
		),
		scripted.Text(`{"activity": "hiking", "day": "Saturday", "why": "sunny, free all day, low pollen"}`),
	},
	"weather":   {scripted.Tools(scripted.CallTool("forecast", map[string]any{"day": "saturday"}), scripted.CallTool("forecast", map[string]any{"day": "sunday"})), scripted.Text("Saturday sunny 22C; Sunday rain 14C.")},
	"calendar":  {scripted.Text("Saturday is free; Sunday has lunch at 12:00.")},
	"allergens": {scripted.Text("Pollen is low on Saturday and high on Sunday.")},
}

func main() {
	ctx := context.Background()
	request := demo.Input("Suggest outdoor activities for this weekend")
	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	run, err := planner.Start(ctx, rt, request)
	demo.Exit(err)
	fmt.Fprintf(os.Stderr, "run %s\n", run.ID())
	demo.Follow(ctx, os.Stderr, rt, run.ID(), 0)
	res, err := run.Wait(ctx)
	demo.Exit(err)
	switch r := res.(type) {
	case swarm.Completed[Recommendation]:
		out, _ := json.MarshalIndent(r.Output, "", "  ")
		fmt.Println(string(out))
	case swarm.Failed:
		demo.Exit(fmt.Errorf("planner failed: %s", r.Reason))
	default:
		demo.Exit(fmt.Errorf("planner ended in state %s", res.State()))
	}
}
