package swarm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// A delegation offers an agent to a model under a tool of one's own: here
// a typed "translate" tool whose arguments become the translator's
// request. The call runs the translator's loop inside the run, journaled
// like a handoff.
func ExampleDelegation() {
	translator := &swarm.Agent{Name: "translator", Instructions: "Translate the text into the language asked."}
	translate, err := swarm.Delegation{
		Agent:       translator,
		Name:        "translate",
		Description: "Translates a text",
		Schema:      json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"to":{"type":"string"}},"required":["text","to"]}`),
		Request: func(args json.RawMessage) (string, error) {
			var a struct{ Text, To string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return fmt.Sprintf("Translate into %s: %s", a.To, a.Text), nil
		},
	}.Tool()
	if err != nil {
		fmt.Println(err)
		return
	}
	s := swarm.Define[string, string]("desk", "Answers travellers", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Help the traveller.", Tools: []swarm.Tool{translate}}
	})
	m := scripted.New(scripted.Script{
		"desk":       {scripted.Tools(scripted.CallTool("translate", map[string]any{"text": "thank you", "to": "French"})), scripted.Text("Say: merci")},
		"translator": {scripted.Text("merci")},
	})
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, run, err := s.Run(ctx, rt, "how do I say thank you in French?")
	if err != nil {
		fmt.Println(err)
		return
	}
	evs, _ := rt.History(ctx, run.ID(), 0)
	for _, ev := range evs {
		if ev.Type == swarm.EventHandoffStarted {
			fmt.Printf("%s -> %s: %s\n", ev.Agent, ev.Target, ev.Request)
		}
	}
	fmt.Println(res.(swarm.Completed[string]).Output)
	// Output:
	// desk -> translator: Translate into French: thank you
	// Say: merci
}
