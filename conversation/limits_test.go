package conversation_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// A conversation is one run tree for its whole life: its call limits
// count per user message, so ten messages of two model calls and a tool
// call each are answered under limits of 3 model calls and 1 tool call,
// where limits over its life ended it at the second message.
func TestLimitsCountPerMessage(t *testing.T) {
	const messages = 10
	var steps []scripted.Step
	for range messages {
		steps = append(steps, scripted.Tools(scripted.CallTool("note", map[string]any{})), scripted.Text("noted"))
	}
	note := swarm.NewTool("note", "Notes", func(context.Context, struct{}) (string, error) { return "ok", nil })
	desk := conversation.Define("desk", "Notes", conversation.Spec[struct{}]{
		Queen: &swarm.Agent{Name: "clerk", Instructions: "Note it.", Tools: []swarm.Tool{note}},
	})
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(scripted.Script{"clerk": steps}), MaxModelCalls: 3, MaxToolCalls: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := ctxT(t)
	session, err := desk.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range messages {
		reply, err := session.Say(ctx, fmt.Sprintf("message %d", i))
		if err != nil || reply.Text != "noted" {
			t.Fatalf("message %d: %+v %v", i, reply, err)
		}
	}
}
