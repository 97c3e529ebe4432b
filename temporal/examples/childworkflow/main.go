// Command childworkflow shows a Temporal user's own workflow running a
// swarm as a typed child workflow: OrderReview, an ordinary Temporal
// workflow, asks the swarm "triage" (a triage agent with a refund tool and
// a handoff to a specialist) what to do with a customer's complaint, as a
// child workflow named temporal.WorkflowName, with a temporal.RunInput,
// and reads its temporal.RunOutput. The swarm's model calls and tool calls
// are activities of the same worker; its journal is mirrored into the
// Swarm store, so `swarm-temporal serve` on that store would show it.
//
// It runs offline: an in-process Temporal server
// (go.temporal.io/server/temporaltest) and the scripted model.
//
//	cd temporal && GOTOOLCHAIN=go1.27.3 go run ./examples/childworkflow
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/temporal"
)

// Decision is the triage swarm's typed result.
type Decision struct {
	Action string `json:"action" jsonschema:"refund, replace or escalate"`
	Note   string `json:"note"`
}

// Complaint is the input of OrderReview.
type Complaint struct {
	Order string
	Text  string
}

// Review is OrderReview's result.
type Review struct {
	Order    string
	Decision Decision
	SwarmRun string
}

var (
	refund = swarm.NewTool("refund", "Refunds an order", func(_ context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		return "refunded " + in.Order, nil
	})
	specialist = &swarm.Agent{Name: "specialist", Description: "Knows the shipping carriers",
		Instructions: "Say whether the carrier lost the parcel."}
	triage = swarm.Define[string, Decision]("triage", "Decides what to do with a complaint", func(string) swarm.Spec {
		return swarm.Spec{
			Instructions: "Decide what to do with the complaint: {{.Input}}",
			Tools:        []swarm.Tool{refund},
			Handoffs:     []swarm.Handoff{swarm.ToAgent(specialist)},
		}
	})
	script = scripted.Script{
		"triage": {
			scripted.Tools(scripted.CallTool("handoff_to_specialist", map[string]any{"request": "Was parcel 1042 lost?"})),
			scripted.Tools(scripted.CallTool("refund", map[string]any{"order": "1042"})),
			scripted.Text(`{"action": "refund", "note": "the carrier lost the parcel; refunded"}`),
		},
		"specialist": {scripted.Text("Yes: the carrier reports parcel 1042 lost.")},
	}
)

// OrderReview is the Temporal user's own workflow: it runs the triage
// swarm as a child workflow and returns its decision.
func OrderReview(ctx workflow.Context, c Complaint) (Review, error) {
	input, err := json.Marshal(c.Order + ": " + c.Text)
	if err != nil {
		return Review{}, err
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: "order-" + c.Order + "-triage", // the swarm run's id too
	})
	// snippet child
	var out temporal.RunOutput
	err = workflow.ExecuteChildWorkflow(cctx, temporal.WorkflowName,
		temporal.RunInput{Swarm: "triage", Input: input}).Get(ctx, &out)
	// out.Status "completed", out.Result the swarm's JSON result
	// end snippet
	if err != nil {
		return Review{}, err
	}
	if out.Status != "completed" {
		return Review{}, fmt.Errorf("the triage swarm ended %s: %s", out.Status, out.Reason)
	}
	var d Decision
	if err := json.Unmarshal(out.Result, &d); err != nil {
		return Review{}, fmt.Errorf("the triage swarm's result: %w", err)
	}
	return Review{Order: c.Order, Decision: d, SwarmRun: "order-" + c.Order + "-triage"}, nil
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "childworkflow:", err)
		os.Exit(1)
	}
}

// run starts a Temporal server in process, a worker with the swarm engine
// and OrderReview, runs OrderReview and prints its result and the swarm
// run's events as the Swarm store holds them.
func run(ctx context.Context, w io.Writer) error {
	ts := temporaltest.NewServer()
	defer ts.Stop()
	c := ts.GetDefaultClient()

	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(script)})
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := rt.Register(triage); err != nil {
		return err
	}
	eng, err := temporal.New(rt, temporal.Options{Client: c})
	if err != nil {
		return err
	}
	wk := worker.New(c, temporal.DefaultTaskQueue, worker.Options{})
	eng.Register(wk)
	wk.RegisterWorkflow(OrderReview)
	if err := wk.Start(); err != nil {
		return err
	}
	defer wk.Stop()

	we, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "order-1042", TaskQueue: temporal.DefaultTaskQueue}, OrderReview,
		Complaint{Order: "1042", Text: "my parcel never arrived"})
	if err != nil {
		return err
	}
	var review Review
	if err := we.Get(ctx, &review); err != nil {
		return fmt.Errorf("OrderReview: %w", err)
	}
	out, _ := json.MarshalIndent(review, "", "  ")
	fmt.Fprintln(w, string(out))

	// The swarm's run, mirrored into the Swarm store by the engine.
	evs, err := rt.History(ctx, review.SwarmRun, 0)
	if err != nil {
		return fmt.Errorf("the swarm run's events: %w", err)
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != swarm.EventCompleted {
		return errors.New("the swarm run's journal in the Swarm store does not end completed")
	}
	for _, ev := range evs {
		fmt.Fprintf(w, "%3d %-16s %s\n", ev.Seq, ev.Type, ev.Agent)
	}
	return nil
}
