package strategy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/strategy"
)

// bestOfTwo is a kind of run of its own: two agents answer at once, a
// judge picks one, and a human signs it off. Every step is journaled, so
// a run killed anywhere continues where it was.
type bestOfTwo struct{}

func (bestOfTwo) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	var question string
	if err := json.Unmarshal(d.Input(), &question); err != nil {
		return nil, &strategy.Failure{Reason: "the input is not text"}
	}
	writers := []string{"optimist", "pessimist"}
	answers := make([]string, len(writers))
	for _, err := range d.Parallel(ctx, len(writers), func(ctx context.Context, i int) error {
		var err error
		answers[i], err = d.Delegate(ctx, "answer/"+writers[i], writers[i], question)
		return err
	}) {
		if err != nil {
			return nil, err
		}
	}
	pick, err := d.Delegate(ctx, "judge", "judge", "Reply 1 or 2. 1: "+answers[0]+" 2: "+answers[1])
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(pick)
	if err != nil || n < 1 || n > 2 {
		return nil, &strategy.Failure{Reason: "the judge answered " + strconv.Quote(pick)}
	}
	ok, err := d.Await(ctx, "sign-off", strategy.Question{Reason: "Send " + strconv.Quote(answers[n-1]) + "?"})
	if err != nil {
		return nil, err // ErrAwaiting: the run pauses until a human answers
	}
	return json.Marshal(answers[n-1] + " (" + ok + ")")
}

// A strategy drives a run with the engine's durable primitives instead of
// the model's tool-calling loop.
func ExampleStrategy() {
	agent := func(name string) swarm.Handoff {
		return swarm.ToAgent(&swarm.Agent{Name: name, Description: "the " + name, Instructions: "You are the " + name + "."})
	}
	forecast := swarm.Define[string, string]("forecast", "forecasts", func(string) swarm.Spec {
		return swarm.Spec{
			Handoffs: []swarm.Handoff{agent("optimist"), agent("pessimist"), agent("judge")},
			Strategy: strategy.Of(bestOfTwo{}),
		}
	})
	m := scripted.New(scripted.Script{
		"optimist":  {scripted.Text("Sunny all week.")},
		"pessimist": {scripted.Text("Rain by Tuesday.")},
		"judge":     {scripted.Text("2")},
	})
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	defer rt.Close()
	_ = rt.Register(forecast)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, _ := forecast.Start(ctx, rt, "Weather this week?")
	res, _ := run.Wait(ctx)
	if p, ok := res.(swarm.Paused); ok {
		fmt.Println("paused:", p.Reason)
		_ = run.Resume(ctx, "approved")
	}
	res, _ = run.Wait(ctx)
	if c, ok := res.(swarm.Completed[string]); ok {
		fmt.Println("completed:", c.Output)
	}
	// Output:
	// paused: Send "Rain by Tuesday."?
	// completed: Rain by Tuesday. (approved)
}
