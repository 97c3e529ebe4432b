package conversation_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// A receptionist hands the conversation over to sales, setting the topic
// of the shared context; sales stays in charge for the next message and
// records a discount with a tool.
func ExampleDefine() {
	type Lead struct {
		Topic    string `json:"topic"`
		Discount int    `json:"discount"`
	}
	type discountIn struct {
		Percent int `json:"percent"`
	}
	discount := swarm.NewTool("apply_discount", "Grant a discount", func(ctx context.Context, in discountIn) (string, error) {
		_, err := conversation.UpdateContext(ctx, func(l *Lead) { l.Discount = in.Percent })
		return "granted", err
	})
	receptionist := &swarm.Agent{Name: "receptionist", Instructions: "Greet the customer and route them."}
	sales := &swarm.Agent{Name: "sales", Description: "Sells our products",
		Instructions: "You sell {{.Context.Topic}}.", Tools: []swarm.Tool{discount}}
	desk := conversation.Define("front-desk", "Receptionist and sales", conversation.Spec[Lead]{
		Queen:     receptionist,
		Agents:    []*swarm.Agent{sales},
		Handovers: map[string][]conversation.Handover{"receptionist": {{To: "sales", Sets: []string{"topic"}}}},
	})
	// A scripted model stands in for a real one.
	m := scripted.New(scripted.Script{
		"receptionist": {scripted.Tools(scripted.CallTool("transfer_to_sales", map[string]any{"topic": "CRM"}))},
		"sales": {
			scripted.Text("Our CRM is $10 a seat."),
			scripted.Tools(scripted.CallTool("apply_discount", map[string]any{"percent": 15})),
			scripted.Text("Done: 15% off."),
		},
	})
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	defer rt.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session, err := desk.Start(ctx, rt)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, msg := range []string{"I'd like a CRM", "Any discount?"} {
		reply, err := session.Say(ctx, msg)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %s %+v\n", reply.Agent, reply.Text, reply.Context)
	}
	// Output:
	// sales: Our CRM is $10 a seat. {Topic:CRM Discount:0}
	// sales: Done: 15% off. {Topic:CRM Discount:15}
}
