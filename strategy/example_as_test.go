package strategy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/strategy"
)

// relay is a strategy that takes its steps as one agent after another:
// each writes the next draft with its own model, instructions and tools.
type relay struct{ agents []*swarm.Agent }

func (s relay) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	var draft string
	if err := json.Unmarshal(d.Input(), &draft); err != nil {
		return nil, &strategy.Failure{Reason: "the input is not text"}
	}
	for i, a := range s.agents {
		ad, err := d.As(a, strategy.Acting{Data: map[string]any{"Draft": draft}})
		if err != nil {
			return nil, err
		}
		resp, err := ad.AtTurn(i+1).Model(ctx, a.Name, nil)
		if err != nil {
			return nil, err
		}
		draft = resp.Message.Content
	}
	return json.Marshal(draft)
}

// As takes a strategy's steps as one of several agents, with their own
// instructions (rendered with the data given), tools and guardrails.
func ExampleDriver_As() {
	writer := &swarm.Agent{Name: "writer", Instructions: "Write about {{.Draft}}."}
	editor := &swarm.Agent{Name: "editor", Instructions: "Tighten: {{.Draft}}"}
	post := swarm.Define[string, string]("post", "writes a post", func(string) swarm.Spec {
		return swarm.Spec{Strategy: strategy.Of(relay{agents: []*swarm.Agent{writer, editor}})}
	})
	m := scripted.New(scripted.Script{
		"writer": {scripted.Text("Bees make honey, and they make it well.")},
		"editor": {scripted.Text("Bees make honey well.")},
	})
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	defer rt.Close()
	_ = rt.Register(post)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, _ := post.Start(ctx, rt, "bees")
	res, _ := run.Wait(ctx)
	if c, ok := res.(swarm.Completed[string]); ok {
		fmt.Println(c.Output)
	}
	// Output: Bees make honey well.
}
