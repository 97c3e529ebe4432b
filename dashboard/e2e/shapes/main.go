// Command shapes serves the dashboard, on a loopback address and without
// login, for the browser test of a workflow's drawing: a workflow of
// every shape (a sequence, a parallel step with a quorum join, a
// for-each, a route whose pick is a router agent, a loop an evaluator
// ends, a graph with a conditional cycle through a human node, a swarm
// node with its child run), run on a scripted model until it waits at
// its human node a second time. It prints "run ID" and then "listening
// on URL" on stderr, and serves until it is stopped.
//
//	go run ./dashboard/e2e/shapes
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/dashboard"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	_ "github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/workflow"
)

func agent(name string) *swarm.Agent {
	return &swarm.Agent{Name: name, Description: "the " + name, Instructions: "You are the " + name + "."}
}

// Approval is the human node's answer.
type Approval struct {
	OK bool `json:"ok"`
}

// shapes is the workflow of every shape.
func shapes(blog swarm.Definition) swarm.Definition {
	text := func(name string, fn func(string) string) workflow.Step[string, string] {
		return workflow.Func(name, func(_ context.Context, s string) (string, error) { return fn(s), nil })
	}
	review := workflow.Parallel("review", workflow.Join{Mode: workflow.Quorum, N: 2},
		workflow.Agent[string, string](agent("legal")),
		workflow.Agent[string, string](agent("brand")),
		workflow.Then(text("trim", strings.TrimSpace), workflow.Agent[string, string](agent("tone"))).Named("tone-check"),
	)
	merge := workflow.Func("merge", func(_ context.Context, notes []string) (string, error) { return strings.Join(notes, "; "), nil })
	split := workflow.Func("split", func(_ context.Context, s string) ([]string, error) { return []string{s, s}, nil })
	translate := workflow.ForEach("translate", workflow.Agent[string, string](agent("translator")))
	gather := workflow.Func("gather", func(_ context.Context, parts []string) (string, error) { return strings.Join(parts, " / "), nil })
	channel := workflow.Route("channel", workflow.PickAgent[string](agent("router"), 2),
		workflow.Swarm[string, string](blog),
		workflow.Agent[string, string](agent("social")),
	)
	polish := workflow.Loop("polish", 3, workflow.UntilAgent[string](agent("judge")), workflow.Agent[string, string](agent("editor")))
	publish := workflow.NewGraph[string, string]("publish", "approve", 10).
		Add(
			workflow.Node(workflow.Human[string, Approval]("approve", 2, func(s string) string { return "Publish " + s + "?" })),
			workflow.Node(workflow.Agent[json.RawMessage, string](agent("fixer")).Named("fix")),
			workflow.Node(text("post", func(s string) string { return "posted" })),
		).
		EdgeLabeled("approve", "post", "approved", workflow.FieldEquals("ok", true)).
		Edge("approve", "fix").
		Edge("fix", "approve")
	step := workflow.Then(workflow.Then(workflow.Then(workflow.Agent[string, string](agent("planner")).Named("plan"), review),
		workflow.Then(merge, workflow.Then(split, workflow.Then(translate, gather)))),
		workflow.Then(workflow.Then(channel, polish), publish.Step()))
	return workflow.Define("shapes", "every shape of a workflow", step)
}

var script = scripted.Script{
	"planner":    {scripted.Text("a plan")},
	"legal":      {scripted.Text("legal ok")},
	"brand":      {scripted.Text("on brand")},
	"tone":       {scripted.Text("warm")},
	"translator": {scripted.Text("un plan"), scripted.Text("ein Plan")},
	"router":     {scripted.Text("blog")},
	"blog":       {scripted.Text("a blog post")},
	"editor":     {scripted.Text("v1"), scripted.Text("v2")},
	"judge":      {scripted.Text("Too long."), scripted.Text("DONE")},
	"fixer":      {scripted.Text("fixed")},
}

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	st, err := store.Open(ctx, "memory:")
	if err != nil {
		return err
	}
	blog := swarm.Define[string, string]("blog", "writes a blog post", nil)
	def := shapes(blog)
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script)})
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := rt.Register(def, blog); err != nil {
		return err
	}
	id, err := rt.Start(ctx, "shapes", json.RawMessage(`"the launch"`))
	if err != nil {
		return err
	}
	// Refused once, fixed, then asked again: the graph's cycle is taken.
	for _, answer := range []string{`{"ok": false}`, ""} {
		s, err := rt.Wait(ctx, id)
		if err != nil {
			return err
		}
		if s.State != swarm.StatePaused {
			return fmt.Errorf("run %s is %s (%s), want paused", id, s.State, s.Reason)
		}
		if answer == "" {
			break
		}
		if err := rt.Resume(ctx, id, answer); err != nil {
			return err
		}
	}
	d, err := dashboard.New(rt, dashboard.Options{})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "run %s\nlistening on http://%s\n", id, ln.Addr())
	if err := http.Serve(ln, d); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
