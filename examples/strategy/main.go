// Command strategy runs a kind of run written by a user on the engine's
// public seam (strategy.Strategy and strategy.Driver), not on the model's
// tool-calling loop: three classifiers label a support ticket at once, a
// recorded vote picks the label (a tie asks a human), and the agent for
// that label answers. Every step is journaled: killed anywhere, the run
// continues at its first step without a recorded outcome. The program shows
// it: its first runtime stops once the vote is recorded, as a killed
// process would, and a second one on the same store finishes the run
// without asking any classifier again.
//
//	go run ./examples/strategy "My invoice was charged twice"
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/strategy"
)

// vote is the strategy: classify in parallel, vote, route.
type vote struct {
	classifiers []string
	answerers   map[string]string // label -> agent
}

func (v vote) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	var ticket string
	if err := json.Unmarshal(d.Input(), &ticket); err != nil {
		return nil, &strategy.Failure{Reason: "the ticket is not text"}
	}
	labels := make([]string, len(v.classifiers))
	for i, err := range d.Parallel(ctx, len(v.classifiers), func(ctx context.Context, i int) error {
		out, err := d.Delegate(ctx, "classify/"+v.classifiers[i], v.classifiers[i], ticket)
		labels[i] = strings.ToLower(strings.TrimSpace(out))
		return err
	}) {
		if err != nil {
			return nil, fmt.Errorf("classifier %s: %w", v.classifiers[i], err)
		}
	}
	// The vote is a decision of the strategy's own: recorded, so that a
	// replay takes the same route even if counting changed.
	raw, err := d.Record(ctx, "vote", "vote", func(context.Context) (json.RawMessage, error) {
		count := map[string]int{}
		best, tie := "", false
		for _, l := range labels {
			count[l]++
		}
		for _, l := range labels { // in the classifiers' order: no map order
			switch {
			case count[l] > count[best]:
				best, tie = l, false
			case l != best && count[l] == count[best]:
				tie = true
			}
		}
		if tie {
			best = ""
		}
		return json.Marshal(best)
	})
	if err != nil {
		return nil, err
	}
	var label string
	_ = json.Unmarshal(raw, &label)
	if label == "" {
		// No majority: a human decides, without a goroutine waiting.
		if label, err = d.Await(ctx, "ask-label", strategy.Question{Reason: "The classifiers disagree: " + strings.Join(labels, ", ") + ". Which label?"}); err != nil {
			return nil, err
		}
	}
	agent, ok := v.answerers[label]
	if !ok {
		return nil, &strategy.Failure{Reason: "no agent answers " + label + " tickets"}
	}
	answer, err := d.Delegate(ctx, "answer", agent, ticket)
	if err != nil {
		return nil, err
	}
	return json.Marshal(label + ": " + answer)
}

func agent(name, desc string) *swarm.Agent {
	return &swarm.Agent{Name: name, Description: desc, Instructions: "You are the " + desc + "."}
}

var (
	classifiers = []string{"fast", "careful", "senior"}
	triage      = swarm.Define[string, string]("ticket-vote", "Labels a ticket by a vote of three classifiers and answers it",
		func(string) swarm.Spec {
			var hs []swarm.Handoff
			for _, c := range classifiers {
				hs = append(hs, swarm.ToAgent(agent(c, c+" classifier: reply billing, tech or other")))
			}
			hs = append(hs, swarm.ToAgent(agent("billing", "billing specialist")), swarm.ToAgent(agent("tech", "technical support")))
			return swarm.Spec{Handoffs: hs, Strategy: strategy.Of(vote{classifiers: classifiers, answerers: map[string]string{"billing": "billing", "tech": "tech"}})}
		})
	script = scripted.Script{
		"fast":    {scripted.Text("billing")},
		"careful": {scripted.Text("billing")},
		"senior":  {scripted.Text("tech")},
		"billing": {{Text: "Refunded the duplicate charge; it shows within 3 days.", Delay: 500 * time.Millisecond}},
	}
)

func main() {
	ctx := context.Background()
	ticket := demo.Input("My invoice was charged twice")
	m, err := demo.Model(scripted.New(script))
	demo.Exit(err)
	st, err := demo.Store(ctx)
	demo.Exit(err)
	rt, err := swarm.New(swarm.Config{Store: st, Model: m})
	demo.Exit(err)
	demo.Exit(rt.Register(triage))
	run, err := triage.Start(ctx, rt, ticket)
	demo.Exit(err)
	// The first runtime goes until the vote is recorded, then stops as a
	// killed process would: its run is interrupted mid-step, not ended.
	after := demo.FollowUntil(ctx, os.Stderr, rt, run.ID(), 0, func(ev swarm.Event) bool {
		return ev.Type == swarm.EventRecorded && ev.Kind == "vote"
	})
	fmt.Fprintln(os.Stderr, "the process stops here, as if killed: the vote and every classifier's answer are journaled")
	demo.Exit(rt.Close())
	rt, err = swarm.New(swarm.Config{Store: st, Model: m})
	demo.Exit(err)
	defer rt.Close()
	demo.Exit(rt.Register(triage))
	if err := rt.Drive(ctx, run.ID()); err != nil {
		// On a slow machine the run may have ended before the stop.
		if s, serr := rt.Status(ctx, run.ID()); serr != nil || s.State == swarm.StateRunning {
			demo.Exit(err)
		}
	}
	fmt.Fprintln(os.Stderr, "a new runtime continues the run from its journal: no classifier is asked again, the vote is not taken again")
	demo.Follow(ctx, os.Stderr, rt, run.ID(), after)
	s, err := rt.Wait(ctx, run.ID())
	demo.Exit(err)
	switch s.State {
	case swarm.StateCompleted:
		var out string
		_ = json.Unmarshal(s.Result, &out)
		fmt.Println(out)
	case swarm.StatePaused:
		fmt.Println("waiting for a human:", s.Reason)
	default:
		demo.Exit(fmt.Errorf("the run ended %s: %s", s.State, s.Reason))
	}
}
