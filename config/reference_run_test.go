package config_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
)

// TestReferenceConversation runs the conversation of the swarm.yaml
// reference, whose script hands over with transfer_to_sales, as the
// reference says it runs.
func TestReferenceConversation(t *testing.T) {
	path := config.WriteWalkthrough(t, "A conversation, end to end")
	_, rt, conv := loadConversation(t, path, "front-desk")
	ctx := ctxT(t)
	sess, err := conv.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sess.Say(ctx, "I'd like a CRM")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Agent != "sales" || rep.Text != "CRM is $10 a seat." || rep.Context["topic"] != "CRM" {
		t.Errorf("first reply %+v, want sales answering about the CRM", rep)
	}
	if rep, err = sess.Say(ctx, "Monthly?"); err != nil || rep.Agent != "sales" || rep.Text != "Yes, billed monthly." {
		t.Errorf("second reply %+v (%v), want sales still in charge", rep, err)
	}
}

// TestReferenceStructuredInput runs the swarm with a structured input of
// the swarm.yaml reference: a JSON input completes with the scripted result
// and costs what its prices: say; a text input is refused.
func TestReferenceStructuredInput(t *testing.T) {
	f, rt := loadFile(t, config.WriteWalkthrough(t, "A swarm with a structured input, end to end"))
	f.ApplyPrices()
	var quote *swarm.Swarm[json.RawMessage, json.RawMessage]
	for _, d := range rt.Swarms() {
		if d.ID() == "quote" {
			quote, _ = d.(*swarm.Swarm[json.RawMessage, json.RawMessage])
		}
	}
	if quote == nil {
		t.Fatal("quote is not a *swarm.Swarm[json.RawMessage, json.RawMessage]")
	}
	ctx := ctxT(t)
	res, run, err := quote.Run(ctx, rt, json.RawMessage(`{"city": "Oslo", "nights": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[json.RawMessage]); !ok || string(c.Output) != `{"total":240}` {
		t.Fatalf("result %#v", res)
	}
	st, err := rt.Status(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if want := (1000*2 + 20*8) / 1e6; math.Abs(st.Usage.Cost-want) > 1e-12 {
		t.Errorf("cost %v, want %v", st.Usage.Cost, want)
	}
	if _, _, err := quote.Run(ctx, rt, json.RawMessage(`"Oslo"`)); !errors.Is(err, swarm.ErrInvalidInput) {
		t.Errorf("a text input: %v, want ErrInvalidInput", err)
	}
}
