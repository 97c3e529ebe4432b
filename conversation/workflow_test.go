package conversation_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/swarmtest/strategytest"
	"github.com/swarmrt/swarm/workflow"
)

// A conversation as a workflow node: a loop sends each draft to the same
// session, whose agent remembers the earlier messages, and the workflow's
// result is the last reply. The conformance kit crashes the workflow at
// every record, on every store: each message is sent once, and the same
// replies come back.
func TestWorkflowTalk(t *testing.T) {
	editor := &swarm.Agent{Name: "editor", Instructions: "Edit what you are sent."}
	desk := conversation.Define("desk", "An editor's desk", conversation.Spec[struct{}]{Queen: editor})
	talk := workflow.Talk("desk", desk)
	two := workflow.Loop("rounds", 3, workflow.UntilFunc(func(s string) bool { return strings.HasSuffix(s, "well.") }), talk)
	wf := workflow.Define("edit", "edits a draft twice", two)
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{wf, desk},
		Swarm:       "edit",
		Input:       json.RawMessage(`"bees make honey"`),
		Want:        swarm.StateCompleted,
		Script: scripted.Script{
			"editor": {scripted.Text("Bees make honey."), scripted.Text("Bees make honey well.")},
		},
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			st, err := rt.Status(context.Background(), id)
			if err != nil || !strings.Contains(string(st.Result), "Bees make honey well.") {
				t.Errorf("result %s, %v", st.Result, err)
			}
			var said []string
			for _, ev := range swarmtest.Events(t, rt, id+"-desk") {
				if ev.Type == swarm.EventResumed {
					said = append(said, ev.Message)
				}
			}
			if len(said) != 2 || said[0] != "bees make honey" || said[1] != "Bees make honey." {
				t.Errorf("the session was sent %q", said)
			}
		},
	})
}
