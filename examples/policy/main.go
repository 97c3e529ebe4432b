// Command policy re-rates an insurance policy. Commercial or high-value
// policies get an underwriter-notification tool, and a rate change above
// 0.5% pauses the run for a human's approval before it completes.
//
//	go run ./examples/policy "commercial policy P-7731"
//	go run ./examples/policy -approve "Underwriter approved" "commercial policy P-7731"
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
)

// RatedPolicy is the swarm's result.
type RatedPolicy struct {
	Policy   string  `json:"policy"`
	OldAPR   float64 `json:"old_apr"`
	NewAPR   float64 `json:"new_apr"`
	Approved bool    `json:"approved"`
}

type notifyIn struct {
	Policy  string `json:"policy"`
	Message string `json:"message"`
}

var (
	notifier = swarm.NewTool("notify_underwriter", "Tells the underwriting team about a proposed change",
		func(ctx context.Context, in notifyIn) (string, error) {
			// A real notifier would send a message keyed by
			// swarm.IdempotencyKey(ctx), so a retry after a crash sends nothing twice.
			return "underwriting notified (ref " + swarm.IdempotencyKey(ctx) + ")", nil
		})
	records = &swarm.Agent{
		Name: "policy-records", Description: "Retrieves current policy data and rating history",
		Instructions: "You return the policy's current APR and its rating history.",
	}
	policy = swarm.Define[string, RatedPolicy]("policy-re-rating", "Re-rates an insurance policy",
		func(request string) swarm.Spec {
			spec := swarm.Spec{
				Instructions: "Re-rate the policy. Use the records agent for current data. If the APR change exceeds 0.5%, " +
					"notify the underwriting team (when you can) and pause for approval before completing.",
				Handoffs: []swarm.Handoff{swarm.ToAgent(records)},
			}
			if strings.Contains(request, "commercial") || strings.Contains(request, "high-value") {
				spec.Tools = []swarm.Tool{notifier}
			}
			return spec
		})
)

var script = scripted.Script{
	"policy-re-rating": {
		scripted.Tools(scripted.CallTool("handoff_to_policy-records", map[string]any{"request": "Current APR and history of P-7731"})),
		scripted.Tools(
			scripted.CallTool("notify_underwriter", map[string]any{"policy": "P-7731", "message": "APR 4.1% -> 4.9%"}),
			scripted.CallTool("pause", map[string]any{"reason": "APR change of 0.8% needs underwriter approval", "context": "P-7731: 4.1% -> 4.9%"}),
		),
		scripted.Text(`{"policy": "P-7731", "old_apr": 4.1, "new_apr": 4.9, "approved": true}`),
	},
	"policy-records": {scripted.Text("P-7731: APR 4.1%, last re-rated 2025-03; claims up 30% year on year.")},
}

func main() {
	approve := flag.String("approve", "Underwriter approved the change. Continue.", "the human's answer to the pause")
	flag.Parse()
	request := "commercial policy P-7731"
	if flag.NArg() > 0 {
		request = strings.Join(flag.Args(), " ")
	}
	ctx := context.Background()
	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	run, err := policy.Start(ctx, rt, request)
	demo.Exit(err)
	seq := demo.Follow(ctx, os.Stderr, rt, run.ID(), 0)
	res, err := run.Wait(ctx)
	demo.Exit(err)
	if p, ok := res.(swarm.Paused); ok {
		fmt.Fprintf(os.Stderr, "  a human reads %q and answers %q\n", p.Reason, *approve)
		demo.Exit(run.Resume(ctx, *approve))
		demo.Follow(ctx, os.Stderr, rt, run.ID(), seq)
		res, err = run.Wait(ctx)
		demo.Exit(err)
	}
	c, ok := res.(swarm.Completed[RatedPolicy])
	if !ok {
		demo.Exit(fmt.Errorf("ended in state %s", res.State()))
	}
	out, _ := json.MarshalIndent(c.Output, "", "  ")
	fmt.Println(string(out))
}
