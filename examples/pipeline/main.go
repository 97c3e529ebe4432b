// Command pipeline is a typed workflow: a sequence (each step's output is
// the next one's input), parallel branches joined, and a bounded loop that
// an evaluator agent ends. It plans a product launch from a one-line
// brief.
//
//	go run ./examples/pipeline "a solar kettle"
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/workflow"
)

// Facts is what the researcher finds.
type Facts struct {
	Product  string   `json:"product"`
	Audience string   `json:"audience"`
	Features []string `json:"features"`
}

// Launch is the workflow's result.
type Launch struct {
	Product string   `json:"product"`
	Names   []string `json:"names"`
	Pitch   string   `json:"pitch"`
	Rounds  int      `json:"rounds"`
}

var (
	researcher = &swarm.Agent{Name: "researcher", Description: "Finds facts", Instructions: `Describe the product as JSON: {"product", "audience", "features": [...]}.`}
	namer      = &swarm.Agent{Name: "namer", Description: "Names products", Instructions: "Propose one product name. Answer with the name only."}
	punster    = &swarm.Agent{Name: "punster", Description: "Names products playfully", Instructions: "Propose one playful product name. Answer with the name only."}
	copywriter = &swarm.Agent{Name: "copywriter", Description: "Writes pitches", Instructions: "Write or improve a one-sentence pitch for the product."}
	judge      = &swarm.Agent{Name: "judge", Description: "Judges pitches", Instructions: "If the pitch is short, concrete and names the audience, answer DONE; otherwise say what to fix."}
)

// draft is the state the polishing loop works on.
type draft struct {
	Facts  Facts    `json:"facts"`
	Names  []string `json:"names"`
	Pitch  string   `json:"pitch"`
	Rounds int      `json:"rounds"`
}

// launch is the workflow: research, then two namers in parallel, then a pitch polished by the
// copywriter until the judge says DONE (at most 3 rounds).
var launch = workflow.Define("launch", "Plans a product launch", workflow.Then(
	workflow.Then(
		workflow.Agent[string, Facts](researcher).Retry(1),
		workflow.Func("begin", func(_ context.Context, f Facts) (draft, error) { return draft{Facts: f}, nil }),
	),
	workflow.Then(
		workflow.Within(
			workflow.Parallel("naming", workflow.Join{Tolerate: true},
				workflow.Agent[Facts, string](namer),
				workflow.Agent[Facts, string](punster),
			),
			func(d draft) Facts { return d.Facts },
			func(d draft, names []string) draft { d.Names = names; return d },
		),
		workflow.Then(
			workflow.Loop("polish", 3, workflow.UntilAgent[draft](judge), workflow.Within(
				workflow.Agent[string, string](copywriter),
				func(d draft) string {
					if d.Pitch == "" {
						return fmt.Sprintf("Pitch %s to %s: %s", d.Names[0], d.Facts.Audience, strings.Join(d.Facts.Features, ", "))
					}
					return "Improve: " + d.Pitch
				},
				func(d draft, pitch string) draft { d.Pitch, d.Rounds = pitch, d.Rounds+1; return d },
			)),
			workflow.Func("result", func(_ context.Context, d draft) (Launch, error) {
				return Launch{Product: d.Facts.Product, Names: d.Names, Pitch: d.Pitch, Rounds: d.Rounds}, nil
			}),
		),
	),
))

var script = scripted.Script{
	"researcher": {scripted.Text(`{"product": "solar kettle", "audience": "campers", "features": ["boils in 9 minutes", "folds flat"]}`)},
	"namer":      {scripted.Text("SunBoil")},
	"punster":    {scripted.Text("Kettlelight")},
	"copywriter": {
		scripted.Text("SunBoil is a kettle that uses the sun, with many features, for everyone who likes tea outdoors."),
		scripted.Text("SunBoil boils water for campers in 9 minutes, on sunlight alone, and folds flat."),
	},
	"judge": {scripted.Text("Too long, and name the audience."), scripted.Text("DONE")},
}

func main() {
	ctx := context.Background()
	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	res, _ := demo.Complete(ctx, rt, launch, demo.Input("a solar kettle"))
	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Println(string(out))
}
