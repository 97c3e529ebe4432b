package conversation_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/swarmtest/strategytest"
)

type sale struct {
	Customer string `json:"customer"`
	Topic    string `json:"topic"`
}

// frontDesk is the conversation the conformance kit runs: a tool that
// updates the shared context, and a handover that sets a field of it.
func frontDesk() swarm.Definition {
	lookup := swarm.NewTool("lookup_customer", "Finds a customer", func(ctx context.Context, in struct {
		Name string `json:"name"`
	}) (string, error) {
		_, err := conversation.UpdateContext(ctx, func(s *sale) { s.Customer = in.Name })
		return "customer " + in.Name + " found", err
	})
	receptionist := &swarm.Agent{Name: "receptionist", Description: "Greets and routes", Instructions: "Greet {{.Context.Customer}}.", Tools: []swarm.Tool{lookup}}
	sales := &swarm.Agent{Name: "sales", Description: "Sells", Instructions: "Sell {{.Context.Topic}}."}
	return conversation.Define("shop", "A shop's front desk", conversation.Spec[sale]{
		Queen:     receptionist,
		Agents:    []*swarm.Agent{sales},
		Handovers: map[string][]conversation.Handover{"receptionist": {{To: "sales", Sets: []string{"topic"}}}},
	})
}

// The conformance kit on a conversation, on memory, SQLite and PostgreSQL:
// two user messages (the answers), a tool that updates the
// shared context, and a handover; it ends waiting for the next message.
func TestConformance(t *testing.T) {
	shop := frontDesk()
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{shop},
		Swarm:       "shop",
		Answers:     []string{"I'm Ada, CRM please", "thanks"},
		Want:        swarm.StatePaused,
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			var replies []string
			for _, ev := range swarmtest.Events(t, rt, id) {
				if strings.HasSuffix(ev.Key, "/reply") {
					replies = append(replies, fmt.Sprintf("%s %s %v", ev.Agent, ev.Text, ev.IsError))
				}
			}
			if want := []string{"sales CRM for Ada. false", "sales You're welcome, Ada. false"}; !slices.Equal(replies, want) {
				t.Errorf("replies %q, want %q", replies, want)
			}
		},
		Script: scripted.Script{
			"receptionist": {scripted.Tools(
				scripted.CallTool("lookup_customer", map[string]any{"name": "Ada"}),
				scripted.CallTool("transfer_to_sales", map[string]any{"topic": "CRM"}),
			)},
			"sales": {scripted.Text("CRM for Ada."), scripted.Text("You're welcome, Ada.")},
		},
	})
}
