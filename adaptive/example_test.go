package adaptive_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/adaptive"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/strategy"
)

// An adaptive swarm keeps a task ledger, judges each round, and replans
// when it stalls: here the searcher is sent after the same thing twice, the
// counter reaches the threshold of 1, and the new plan goes to the writer.
func ExampleNew() {
	searcher := &swarm.Agent{Name: "searcher", Description: "Searches"}
	writer := &swarm.Agent{Name: "writer", Description: "Writes"}
	research := swarm.Define[string, string]("research", "Researches a topic", func(string) swarm.Spec {
		return swarm.Spec{
			Handoffs: []swarm.Handoff{swarm.ToAgent(searcher), swarm.ToAgent(writer)},
			Strategy: strategy.Of(adaptive.New().WithStallThreshold(1)),
		}
	})
	round := func(next string) scripted.Step {
		return scripted.Text(`{"is_request_satisfied": false, "is_in_loop": false, "is_progress_being_made": true, "next_handoff": "` + next + `", "instruction": "go on"}`)
	}
	m := scripted.New(scripted.Script{
		"research": {
			scripted.Text(`{"facts": {"given": ["a topic"]}, "plan": ["search"]}`),
			round("searcher"), round("searcher"), round("searcher"), // the third sees a repeat
			scripted.Text(`{"facts": {}, "plan": ["write from the search"]}`),
			round("writer"),
			scripted.Text(`{"is_request_satisfied": true, "is_in_loop": false, "is_progress_being_made": true}`),
			scripted.Text("a short report"),
		},
		"searcher": {scripted.Text("one page"), scripted.Text("one page")},
		"writer":   {scripted.Text("a report")},
	})
	rt, _ := swarm.New(swarm.Config{Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, run, err := research.Run(ctx, rt, "durable execution")
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev := range run.Events(ctx, 0) {
		if l, ok := adaptive.LedgerOf(ev); ok {
			fmt.Printf("ledger %d (%s): %q\n", l.Number, l.Cause, l.Plan)
		}
		if p, ok := adaptive.ProgressOf(ev); ok && p.Stalls > 0 {
			fmt.Printf("round %d stalls: %v\n", p.Round, p.Signals)
		}
	}
	fmt.Println(res.(swarm.Completed[string]).Output)
	// Output:
	// ledger 0 (start): ["search"]
	// round 3 stalls: [repeat no_new_info]
	// ledger 1 (stall): ["write from the search"]
	// a short report
}
