// Command receptionist is a conversation: a receptionist (the queen) greets
// the customer, looks up their account and hands over to sales or support.
// The agent in charge stays in charge between messages, and everything the
// agents learn goes into a shared context that their instructions show.
//
//	go run ./examples/receptionist
package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
)

// Lead is the shared context of the conversation.
type Lead struct {
	Customer string `json:"customer"`
	Company  string `json:"company"`
	Plan     string `json:"plan"`
	Topic    string `json:"topic"`
	Discount int    `json:"discount"`
	Ticket   string `json:"ticket"`
}

type accountIn struct {
	Email string `json:"email" jsonschema:"the customer's email address"`
}

type discountIn struct {
	Percent int `json:"percent" jsonschema:"discount in percent, at most 20"`
}

type ticketIn struct {
	Summary string `json:"summary"`
}

var (
	lookup = swarm.NewTool("lookup_account", "Finds the customer's account by email", func(ctx context.Context, in accountIn) (string, error) {
		l, err := conversation.UpdateContext(ctx, func(l *Lead) { l.Customer, l.Company, l.Plan = "Grace", "Acme", "Team" })
		return fmt.Sprintf("%s of %s, %s plan", l.Customer, l.Company, l.Plan), err
	})
	discount = swarm.NewTool("apply_discount", "Applies a discount to the quote", func(ctx context.Context, in discountIn) (string, error) {
		if in.Percent > 20 {
			return "", fmt.Errorf("at most 20%% without a manager")
		}
		l, err := conversation.UpdateContext(ctx, func(l *Lead) { l.Discount = in.Percent })
		return fmt.Sprintf("%d%% discount applied to %s's quote", l.Discount, l.Company), err
	})
	ticket = swarm.NewTool("open_ticket", "Opens a support ticket", func(ctx context.Context, in ticketIn) (string, error) {
		// The idempotency key makes a retried call open the same ticket.
		h := fnv.New32a()
		h.Write([]byte(swarm.IdempotencyKey(ctx)))
		id := fmt.Sprintf("T-%04d", h.Sum32()%10000)
		_, err := conversation.UpdateContext(ctx, func(l *Lead) { l.Ticket = id })
		return "opened ticket " + id + ": " + in.Summary, err
	})

	receptionist = &swarm.Agent{Name: "receptionist", Description: "Greets customers and routes them",
		Instructions: "You are the receptionist. Look up the customer's account, then transfer them to sales or support. Customer so far: {{.Context.Customer}}.",
		Tools:        []swarm.Tool{lookup}}
	sales = &swarm.Agent{Name: "sales", Description: "Quotes prices and discounts",
		Instructions: "You sell {{.Context.Topic}} to {{.Context.Customer}} of {{.Context.Company}} ({{.Context.Plan}} plan). Current discount: {{.Context.Discount}}%.",
		Tools:        []swarm.Tool{discount}}
	support = &swarm.Agent{Name: "support", Description: "Fixes technical problems",
		Instructions: "You help {{.Context.Customer}} of {{.Context.Company}} with technical problems. Open a ticket for anything you cannot fix at once.",
		Tools:        []swarm.Tool{ticket}}

	desk = conversation.Define("front-desk", "Receptionist, sales and support", conversation.Spec[Lead]{
		Queen:  receptionist,
		Agents: []*swarm.Agent{sales, support},
		Handovers: map[string][]conversation.Handover{
			"receptionist": {{To: "sales", Sets: []string{"topic"}, Description: "Questions about products and prices"}, {To: "support"}},
			"sales":        {{To: "receptionist", Description: "Anything that is not about buying"}},
			"support":      {{To: "receptionist"}},
		},
		MaxTurns:     6,
		NameSpeakers: true,
		// Each round is journaled before the conversation goes on: what
		// the agent did, and the shared context after it.
		OnStep: func(ctx context.Context, s conversation.Step[Lead]) {
			for i, c := range s.ToolCalls {
				result := ""
				if i < len(s.Results) {
					result = s.Results[i].Content
				}
				demo.Say(os.Stderr, s.Agent, "calls %s %s: %s\n", c.Name, c.Arguments, result)
			}
			if s.Text != "" {
				demo.Say(os.Stderr, s.Agent, "answers message %d: %s\n", s.Message, s.Text)
			}
			if s.HandoverTo != "" {
				demo.Say(os.Stderr, s.Agent, "hands the customer over to %s, who stays in charge for the next messages\n", s.HandoverTo)
			}
			demo.Say(os.Stderr, "", "journaled; the shared context is now %+v\n", s.Context)
		},
	})
)

var script = scripted.Script{
	"receptionist": {
		scripted.Tools(scripted.CallTool("lookup_account", map[string]any{"email": "grace@acme.example"})),
		scripted.Tools(scripted.CallTool("transfer_to_sales", map[string]any{"topic": "analytics"})),
		scripted.Tools(scripted.CallTool("transfer_to_support", nil)),
	},
	"sales": {
		scripted.Text("Hi Grace! Analytics for Acme on the Team plan is $40 a seat per month."),
		scripted.Tools(scripted.CallTool("apply_discount", map[string]any{"percent": 15})),
		scripted.Text("For 50 seats I can do 15% off: $34 a seat."),
		{Text: "Let me get you to someone who can help with that.", ToolCalls: []scripted.ToolCall{scripted.CallTool("transfer_to_receptionist", nil)}},
	},
	"support": {
		scripted.Tools(scripted.CallTool("open_ticket", map[string]any{"summary": "Acme dashboard does not load"})),
		scripted.Text("Sorry about the dashboard, Grace. I've opened a ticket and we'll email you within the hour."),
	},
}

var messages = []string{
	"Hi, I'm grace@acme.example. Can someone tell me about your analytics product?",
	"Can you do better on the price for 50 seats?",
	"Great. Also, our dashboard does not load.",
}

func main() {
	ctx := context.Background()
	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	session, err := desk.Start(ctx, rt)
	demo.Exit(err)
	for _, m := range messages {
		fmt.Printf("customer: %s\n", m)
		reply, err := session.Say(ctx, m)
		demo.Exit(err)
		fmt.Printf("%s: %s\n", reply.Agent, reply.Text)
	}
	lead, err := session.Context(ctx)
	demo.Exit(err)
	fmt.Printf("context: %+v\n", lead)
}
