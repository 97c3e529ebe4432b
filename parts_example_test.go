package swarm_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// A screenshot attached to a run reaches the model, and a tool returns a
// chart the model sees with the tool's result in its next call.
func ExampleWithParts() {
	screenshot := []byte("\x89PNG\r\n\x1a\n...the user's screen...")
	chart := swarm.NewTool("chart", "Draws the error rate", func(ctx context.Context, _ struct{}) (string, error) {
		return "the chart is attached", swarm.AttachParts(ctx, model.Image("image/png", []byte("\x89PNG\r\n\x1a\n...a chart...")))
	})
	support := swarm.Define[string, string]("support", "Answers with screenshots", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Diagnose the problem on the screen.", Tools: []swarm.Tool{chart}}
	})
	// A scripted model stands in for a real one; each step asserts what the
	// request carries.
	m := scripted.New(scripted.Script{"support": {
		{ExpectParts: []scripted.ExpectPart{{Type: model.PartImage, MinBytes: len(screenshot)}},
			ToolCalls: []scripted.ToolCall{scripted.CallTool("chart", nil)}},
		{ExpectParts: []scripted.ExpectPart{{Type: model.PartImage}, {Type: model.PartImage, MinBytes: 10}},
			Text: "The error rate doubled after the release shown on screen."},
	}})
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, _, err := support.Run(ctx, rt, "Why does this fail?", swarm.WithParts(model.Image("image/png", screenshot)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.(swarm.Completed[string]).Output)
	// Output: The error rate doubled after the release shown on screen.
}

// A tool attaches a rendered chart to the run's result: Completed.Parts
// holds it once the run completes.
func ExampleAttachOutput() {
	render := swarm.NewTool("render", "Renders the sales chart", func(ctx context.Context, _ struct{}) (string, error) {
		return "rendered", swarm.AttachOutput(ctx, model.Image("image/png", []byte("\x89PNG\r\n\x1a\n...a chart...")))
	})
	charts := swarm.Define[string, string]("charts", "Draws charts", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Chart the sales.", Tools: []swarm.Tool{render}}
	})
	m := scripted.New(scripted.Script{"charts": {
		scripted.Tools(scripted.CallTool("render", nil)),
		scripted.Text("The chart is attached."),
	}})
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, _, err := charts.Run(ctx, rt, "Q3")
	if err != nil {
		fmt.Println(err)
		return
	}
	c := res.(swarm.Completed[string])
	fmt.Println(c.Output, c.Parts[0].Type, c.Parts[0].MediaType)
	// Output: The chart is attached. image image/png
}
