package guardrail_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model/scripted"
)

// A guardrail rejects a tool call, whose error result the model sees
// before it tries again, and trips the run on an answer that leaks a
// password.
func ExampleGuardrail() {
	policy := guardrail.Guardrail{
		Name:   "policy",
		Points: []guardrail.Point{guardrail.ToolCall, guardrail.Output},
		Check: func(_ context.Context, c guardrail.Check) (guardrail.Verdict, error) {
			switch {
			case c.Point == guardrail.ToolCall && strings.Contains(string(c.Arguments), "rm -rf"):
				return guardrail.Verdict{Action: guardrail.Reject, Message: "destructive commands are not allowed"}, nil
			case c.Point == guardrail.Output && strings.Contains(c.Text, "password"):
				return guardrail.Verdict{Action: guardrail.Tripwire, Message: "the answer leaks a password"}, nil
			}
			return guardrail.Verdict{Action: guardrail.Allow}, nil
		},
	}
	shell := swarm.NewTool("shell", "Runs a command", func(_ context.Context, in struct {
		Command string `json:"command"`
	}) (string, error) {
		return "ran " + in.Command, nil
	})
	ops := swarm.Define[string, string]("ops", "Operates servers", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{shell}, Guardrails: []guardrail.Guardrail{policy}}
	})
	m := scripted.New(scripted.Script{"ops": {
		scripted.Tools(scripted.CallTool("shell", map[string]any{"command": "rm -rf /tmp/cache"})),
		scripted.Tools(scripted.CallTool("shell", map[string]any{"command": "ls /tmp/cache"})),
		scripted.Text("The cache is clean; the admin password is hunter2."),
	}})
	rt, _ := swarm.New(swarm.Config{Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, run, err := ops.Run(ctx, rt, "clean the cache")
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev := range run.Events(ctx, 0) {
		if ev.Type == swarm.EventToolResult {
			fmt.Println("tool result:", ev.Output)
		}
	}
	fmt.Println(res.State(), res.(swarm.Failed).Reason)
	// Output:
	// tool result: error: guardrail policy rejected this call: destructive commands are not allowed
	// tool result: ran ls /tmp/cache
	// failed guardrail policy: the answer leaks a password
}
