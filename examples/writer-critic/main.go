// Command writer-critic refines a text in a loop: the writer drafts, the
// critic reviews, and the orchestrator loops until the critic approves or
// the turns run out.
//
//	go run ./examples/writer-critic "a haiku about durable execution"
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
)

// ContentQuality is the swarm's result.
type ContentQuality struct {
	Content  string `json:"content"`
	Approved bool   `json:"approved"`
	Rounds   int    `json:"rounds" jsonschema:"how many drafts were written"`
}

var (
	writer   = &swarm.Agent{Name: "writer", Description: "Writes and revises drafts", Instructions: "You write concise, vivid text. Apply all feedback you are given."}
	critic   = &swarm.Agent{Name: "critic", Description: "Reviews drafts", Instructions: "Review the draft. Reply APPROVED if it is good, otherwise give one concrete piece of feedback."}
	swarmDef = swarm.Define[string, ContentQuality]("content-refinement", "Writes a text and refines it with a critic",
		func(string) swarm.Spec {
			return swarm.Spec{
				Instructions: `You coordinate content creation. Loop: hand the brief to the writer; hand the draft to the critic;
if the critic answers APPROVED, complete with the final content; otherwise send the feedback to the writer and repeat.
If you reach the turn limit without approval, complete with the best version so far.`,
				Handoffs: []swarm.Handoff{swarm.ToAgent(writer), swarm.ToAgent(critic)},
				MaxTurns: 8,
			}
		})
)

const (
	draft1 = "Logs remember all / the crash forgets nothing / work resumes, undone"
	draft2 = "The journal holds fast / a killed process wakes elsewhere / each step done but once"
)

var script = scripted.Script{
	"content-refinement": {
		scripted.Tools(scripted.CallTool("handoff_to_writer", map[string]any{"request": "Write a haiku about durable execution."})),
		scripted.Tools(scripted.CallTool("handoff_to_critic", map[string]any{"request": "Review: " + draft1})),
		scripted.Tools(scripted.CallTool("handoff_to_writer", map[string]any{"request": "Revise: say that each step runs once. Draft: " + draft1})),
		scripted.Tools(scripted.CallTool("handoff_to_critic", map[string]any{"request": "Review: " + draft2})),
		scripted.Tools(scripted.CallTool("complete", map[string]any{"result": map[string]any{"content": draft2, "approved": true, "rounds": 2}})),
	},
	"writer": {scripted.Text(draft1), scripted.Text(draft2)},
	"critic": {scripted.Text("Say that each step runs exactly once; 'undone' is misleading."), scripted.Text("APPROVED")},
}

func main() {
	ctx := context.Background()
	brief := demo.Input("a haiku about durable execution")
	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	quality, _ := demo.Complete(ctx, rt, swarmDef, brief)
	out, _ := json.MarshalIndent(quality, "", "  ")
	fmt.Println(string(out))
}
