// Command content is the multi-phase content pipeline with a human in the
// loop, as a workflow graph: research (a planner splits the topic, a
// researcher takes each sub-topic in parallel), write, edit, evaluate
// (back to research while the evaluator finds gaps, at most 3 cycles),
// then a human review (back to research with the reviewer's changes, or
// done). The review pauses the run; the program answers as a reviewer
// would through swarm resume, first asking for a change, then approving.
//
//	go run ./examples/content "urban beekeeping"
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/workflow"
)

// ContentResult is the workflow's result.
type ContentResult struct {
	Topic   string `json:"topic"`
	Content string `json:"content"`
	Cycles  int    `json:"cycles"`
	Reviews int    `json:"reviews"`
}

// Evaluation is the evaluator's verdict.
type Evaluation struct {
	IsComplete bool   `json:"isComplete"`
	Gaps       string `json:"gaps,omitempty"`
}

// Review is what the human reviewer answers (its JSON schema is sent with
// the question).
type Review struct {
	Approved bool   `json:"approved"`
	Changes  string `json:"changes,omitempty" jsonschema:"what to change when not approved"`
}

// piece is the state the graph carries from node to node.
type piece struct {
	Topic     string     `json:"topic"`
	Subtopics []string   `json:"subtopics"`
	Notes     []string   `json:"notes"`
	Draft     string     `json:"draft"`
	Feedback  string     `json:"feedback,omitempty"`
	Eval      Evaluation `json:"eval"`
	Review    Review     `json:"review"`
	Cycles    int        `json:"cycles"`
	Reviews   int        `json:"reviews"`
}

var (
	planner    = &swarm.Agent{Name: "planner", Description: "Splits a topic", Instructions: "Split the topic into 2 or 3 sub-topics. Answer with a JSON array of strings."}
	researcher = &swarm.Agent{Name: "researcher", Description: "Researches a specific sub-topic using web search", Instructions: "Research the sub-topic; answer with three facts."}
	writer     = &swarm.Agent{Name: "writer", Description: "Writes content based on research and style", Instructions: "Write a short article from the research, taking the feedback into account."}
	editor     = &swarm.Agent{Name: "editor", Description: "Polishes a draft for grammar and readability", Instructions: "Polish the draft. Answer with the polished text only."}
	evaluator  = &swarm.Agent{Name: "evaluator", Description: "Evaluates content quality and completeness", Instructions: `Evaluate the article. Answer with JSON: {"isComplete": true} or {"isComplete": false, "gaps": "what is missing"}.`}
)

const maxCycles = 3

// content is the pipeline as a graph over a piece.
var content = func() *swarm.Swarm[string, ContentResult] {
	plan := workflow.Within(workflow.Agent[string, []string](planner).Retry(1),
		func(p piece) string { return p.Topic },
		func(p piece, subs []string) piece { p.Subtopics = subs; return p })
	research := workflow.Within(workflow.ForEach("research", workflow.Agent[string, string](researcher)),
		func(p piece) []string {
			if p.Feedback == "" {
				return p.Subtopics
			}
			return append(append([]string(nil), p.Subtopics...), p.Feedback)
		},
		func(p piece, notes []string) piece { p.Notes, p.Cycles = notes, p.Cycles+1; return p })
	write := workflow.Within(workflow.Agent[string, string](writer),
		func(p piece) string {
			return fmt.Sprintf("Topic: %s\nResearch:\n- %s\nFeedback: %s", p.Topic, strings.Join(p.Notes, "\n- "), p.Feedback)
		},
		func(p piece, d string) piece { p.Draft = d; return p })
	edit := workflow.Within(workflow.Agent[string, string](editor),
		func(p piece) string { return p.Draft },
		func(p piece, d string) piece { p.Draft = d; return p })
	evaluate := workflow.Within(workflow.Agent[string, Evaluation](evaluator),
		func(p piece) string { return p.Draft },
		func(p piece, e Evaluation) piece { p.Eval, p.Feedback = e, e.Gaps; return p })
	review := workflow.Within(workflow.Human[string, Review]("review", 0, func(d string) string { return "Publish this article?\n\n" + d }),
		func(p piece) string { return p.Draft },
		func(p piece, r Review) piece { p.Review, p.Feedback, p.Reviews = r, r.Changes, p.Reviews+1; return p })
	done := func(p piece) bool { return p.Eval.IsComplete || p.Cycles >= maxCycles }
	g := workflow.NewGraph[piece, piece]("content", "planner", 30).
		Add(workflow.Node(plan), workflow.Node(research), workflow.Node(write), workflow.Node(edit), workflow.Node(evaluate), workflow.Node(review)).
		Edge("planner", "research").Edge("research", "writer").Edge("writer", "editor").Edge("editor", "evaluator").
		EdgeIf("evaluator", "review", workflow.When(done)).Edge("evaluator", "research").
		EdgeIf("review", "research", workflow.When(func(p piece) bool { return !p.Review.Approved }))
	start := workflow.Func("brief", func(_ context.Context, topic string) (piece, error) { return piece{Topic: topic}, nil })
	compile := workflow.Func("compile", func(_ context.Context, p piece) (ContentResult, error) {
		return ContentResult{Topic: p.Topic, Content: p.Draft, Cycles: p.Cycles, Reviews: p.Reviews}, nil
	})
	return workflow.Define("content-creation", "Researches, writes, edits and evaluates content, with a human review",
		workflow.Then(workflow.Then(start, g.Step()), compile))
}()

var script = scripted.Script{
	"planner": {scripted.Text(`["hive placement", "city rules"]`)},
	"writer": {
		scripted.Text("Urban bees need shelter and paperwork."),
		scripted.Text("Urban bees need sheltered rooftops, a registration, and forage within 5 km."),
		scripted.Text("Urban bees need sheltered rooftops, a registration, forage within 5 km, and water nearby."),
	},
	"editor": {
		scripted.Text("Urban bees need shelter and paperwork."),
		scripted.Text("City bees need a sheltered rooftop, a registered hive and forage within 5 km."),
		scripted.Text("City bees need a sheltered rooftop, a registered hive, forage within 5 km and water nearby."),
	},
	"evaluator": {
		scripted.Text(`{"isComplete": false, "gaps": "how far bees forage"}`),
		scripted.Text(`{"isComplete": true}`),
		scripted.Text(`{"isComplete": true}`),
	},
}

// facts are the researcher's answers, by the sub-topic it is asked: the
// sub-topics are researched at once, and a script's order would pair
// them with the wrong questions.
var facts = map[string]string{
	"hive placement":           "Rooftops work if sheltered from wind.",
	"city rules":               "Most cities require registering hives.",
	"how far bees forage":      "Bees forage up to 5 km.",
	"say that bees need water": "Keep a water source near the hive.",
}

// reviews are the reviewer's answers, in order.
var reviews = []string{`{"approved": false, "changes": "say that bees need water"}`, `{"approved": true}`}

func main() {
	ctx := context.Background()
	rt, err := demo.RuntimeWith(ctx, demo.ByRequest(scripted.New(script), "researcher", facts))
	demo.Exit(err)
	defer rt.Close()
	run, err := content.Start(ctx, rt, demo.Input("urban beekeeping"))
	demo.Exit(err)
	var after int64
	for i := 0; ; i++ {
		after = demo.Follow(ctx, os.Stderr, rt, run.ID(), after)
		st, err := rt.Wait(ctx, run.ID())
		demo.Exit(err)
		if st.State != swarm.StatePaused {
			break
		}
		if i >= len(reviews) {
			demo.Exit(fmt.Errorf("paused with no answer left: %s", st.Reason))
		}
		fmt.Fprintf(os.Stderr, "  reviewer answers: %s\n", reviews[i])
		demo.Exit(rt.Resume(ctx, run.ID(), reviews[i]))
	}
	res, err := run.Wait(ctx)
	demo.Exit(err)
	c, ok := res.(swarm.Completed[ContentResult])
	if !ok {
		demo.Exit(fmt.Errorf("content-creation ended in state %s", res.State()))
	}
	out, _ := json.MarshalIndent(c.Output, "", "  ")
	fmt.Println(string(out))
}
