package workflow_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/workflow"
)

// A workflow is a swarm definition: a writer drafts, a Go function and a
// critic look at the draft in parallel, and a loop shortens it until it
// fits. Every node is journaled under its name.
func ExampleDefine() {
	writer := &swarm.Agent{Name: "writer", Instructions: "Write a tagline for the product."}
	critic := &swarm.Agent{Name: "critic", Instructions: "Say what is weak in the tagline."}
	count := workflow.Func("count", func(_ context.Context, s string) (string, error) {
		return fmt.Sprint(len(strings.Fields(s)), " words"), nil
	})
	trim := workflow.Func("trim", func(_ context.Context, s string) (string, error) {
		words := strings.Fields(s)
		return strings.Join(words[:len(words)-1], " "), nil
	})
	tagline := workflow.Define("tagline", "Writes a short tagline", workflow.Then(
		workflow.Then(workflow.Agent[string, string](writer),
			workflow.Then(workflow.Parallel("look", workflow.Join{}, count, workflow.Agent[string, string](critic)),
				workflow.Func("pick", func(_ context.Context, looks []string) (string, error) { return looks[1], nil }))),
		workflow.Loop("shorten", 5, workflow.UntilFunc(func(s string) bool { return len(strings.Fields(s)) <= 3 }), trim),
	))

	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{
		"writer": {scripted.Text("Tea anywhere the sun shines")},
		"critic": {scripted.Text("Boils water fast with only sunlight today")},
	})})
	defer rt.Close()
	ctx := context.Background()
	run, _ := tagline.Start(ctx, rt, "a solar kettle")
	res, _ := run.Wait(ctx)
	fmt.Println(res.(swarm.Completed[string]).Output)
	// The nodes' records (branches of a parallel step finish in any
	// order: sorted here).
	history, _ := rt.History(ctx, run.ID(), 0)
	var keys []string
	for _, ev := range history {
		if ev.Type == swarm.EventRecorded || ev.Type == swarm.EventHandoffReturned {
			keys = append(keys, ev.Key)
		}
	}
	slices.Sort(keys)
	fmt.Println(strings.Join(keys, "\n"))
	// Output:
	// Boils water fast
	// look/count
	// look/critic/tool/next
	// pick
	// shorten/1/trim
	// shorten/2/trim
	// shorten/3/trim
	// shorten/4/trim
	// writer/tool/next
}

// An evaluator ends a loop, and its answer on a round that is not done is
// the next round's feedback: the editor is asked with it, and a Go
// function reads it with Feedback.
func ExampleFeedback() {
	editor := &swarm.Agent{Name: "editor", Instructions: "Improve the tagline."}
	judge := &swarm.Agent{Name: "judge", Instructions: "Answer DONE if the tagline is good, else say why not."}
	note := workflow.Func("note", func(ctx context.Context, s string) (string, error) {
		if f, ok := workflow.Feedback(ctx); ok {
			fmt.Println("feedback:", f)
		}
		return s, nil
	})
	polish := workflow.Define("polish", "Polishes a tagline", workflow.Loop("polish", 3, workflow.UntilAgent[string](judge),
		workflow.Then(workflow.Agent[string, string](editor), note)))

	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{
		"editor": {scripted.Text("Tea from the sun, anywhere you go"), scripted.Text("Sun-brewed tea")},
		"judge":  {scripted.Text("Too long."), scripted.Text("DONE")},
	})})
	defer rt.Close()
	ctx := context.Background()
	run, _ := polish.Start(ctx, rt, "Tea")
	res, _ := run.Wait(ctx)
	fmt.Println(res.(swarm.Completed[string]).Output)
	history, _ := rt.History(ctx, run.ID(), 0)
	for _, ev := range history {
		if ev.Type == swarm.EventHandoffStarted && ev.Target == "editor" {
			fmt.Printf("editor asked: %q\n", ev.Request)
		}
	}
	// Output:
	// feedback: Too long.
	// Sun-brewed tea
	// editor asked: "Tea"
	// editor asked: "Tea from the sun, anywhere you go\n\nFeedback on the previous round: Too long."
}
