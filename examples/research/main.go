// Command research runs an adaptive swarm (seed 001's AdaptiveLoopWorkflow,
// MagenticOne's orchestrator): the orchestrator writes a task ledger (facts
// and a plan), then each round judges progress and directs one team member.
// Offline, the scripted orchestrator keeps sending the searcher after the
// same query; the searcher keeps returning the same page; the stall counter
// reaches its threshold, the orchestrator replans (the ledger shows what
// changed), hands the work to the analyst, and completes.
//
//	go run ./examples/research "durable execution engines"
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/adaptive"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/strategy"
)

// Brief is the swarm's result.
type Brief struct {
	Topic    string   `json:"topic"`
	Findings []string `json:"findings"`
}

var (
	searcher = &swarm.Agent{Name: "searcher", Description: "Searches the web and returns what it finds",
		Instructions: "Search for what you are asked and report what you find, with sources."}
	analyst = &swarm.Agent{Name: "analyst", Description: "Reads sources and distils findings",
		Instructions: "Distil the key findings from what you are given, one line each."}
	research = swarm.Define[string, Brief]("research", "Researches a topic with a searcher and an analyst",
		func(string) swarm.Spec {
			return swarm.Spec{
				Instructions: "You research topics thoroughly and report the key findings.",
				Handoffs:     []swarm.Handoff{swarm.ToAgent(searcher), swarm.ToAgent(analyst)},
				Strategy:     strategy.Of(adaptive.New().WithStallThreshold(2).WithMaxReplans(1)),
			}
		})
)

func step(v any) scripted.Step {
	b, _ := json.Marshal(v)
	return scripted.Text(string(b))
}

func judge(progress bool, next, instruction string) scripted.Step {
	return step(map[string]any{"is_request_satisfied": false, "is_in_loop": false, "is_progress_being_made": progress,
		"next_handoff": next, "instruction": instruction, "reason": "scripted"})
}

var script = scripted.Script{
	"research": {
		step(map[string]any{"facts": map[string]any{"given": []string{"the topic"}, "to_look_up": []string{"which engines exist", "how they recover"}},
			"plan": []string{"search for durable execution engines", "search for how each recovers", "summarize"}}),
		judge(true, "searcher", "search for durable execution engines"),
		judge(true, "searcher", "search for durable execution engines"), // the same again
		judge(true, "searcher", "search for durable execution engines"), // and again: a stall
		judge(true, "searcher", "search for durable execution engines"), // stall 2: replan
		step(map[string]any{"facts": map[string]any{"given": []string{"the topic"}, "derived": []string{"the search keeps returning one overview page"}},
			"plan": []string{"have the analyst distil the overview page", "summarize"}}),
		judge(true, "analyst", "distil the key findings from the overview page"),
		step(map[string]any{"is_request_satisfied": true, "is_in_loop": false, "is_progress_being_made": true}),
		step(Brief{Topic: "durable execution engines", Findings: []string{
			"Temporal, DBOS and Restate journal each step and replay it after a crash",
			"leases with epochs keep a stale worker from writing"}}),
	},
	"searcher": {
		scripted.Text("Overview page: 'Durable execution engines compared' (example.org/durable)"),
		scripted.Text("Overview page: 'Durable execution engines compared' (example.org/durable)"),
		scripted.Text("Overview page: 'Durable execution engines compared' (example.org/durable)"),
	},
	"analyst": {scripted.Text("Temporal, DBOS and Restate journal each step and replay it after a crash; leases with epochs fence stale workers.")},
}

func main() {
	ctx := context.Background()
	topic := demo.Input("durable execution engines")
	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	brief, _ := demo.Complete(ctx, rt, research, topic)
	out, _ := json.MarshalIndent(brief, "", "  ")
	fmt.Println(string(out))
}
