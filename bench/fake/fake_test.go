package fake

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/openai"
)

// The policy: a handoff tool call when the user spoke last and the handoff
// tool is offered, a text answer otherwise; and the counts.
func TestPolicy(t *testing.T) {
	s, err := Start(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := openai.New(openai.WithBaseURL(s.URL), openai.WithModel("m"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	handoff := model.ToolDef{Name: "handoff_to_" + Specialist, Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}
	other := model.ToolDef{Name: "lookup", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}
	user := []model.Message{{Role: model.RoleUser, Content: "q"}}

	resp, err := m.Generate(ctx, &model.Request{Messages: user, Tools: []model.ToolDef{other, handoff}})
	if err != nil {
		t.Fatal(err)
	}
	if calls := resp.Message.ToolCalls; len(calls) != 1 || calls[0].Name != handoff.Name || resp.Message.Content != "" {
		t.Fatalf("user last, handoff offered: got %+v, want one call of %s", resp.Message, handoff.Name)
	}
	var args struct{ Request string }
	if err := json.Unmarshal(resp.Message.ToolCalls[0].Arguments, &args); err != nil || args.Request == "" {
		t.Fatalf("handoff arguments %s: want a request (%v)", resp.Message.ToolCalls[0].Arguments, err)
	}
	after := append(user, resp.Message, model.Message{Role: model.RoleTool, ToolCallID: resp.Message.ToolCalls[0].ID, Content: "42"})
	for name, req := range map[string]*model.Request{
		"no handoff tool": {Messages: user, Tools: []model.ToolDef{other}},
		"tool last":       {Messages: after, Tools: []model.ToolDef{handoff}},
	} {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Message.ToolCalls) != 0 || resp.Message.Content == "" {
			t.Fatalf("%s: got %+v, want a text answer", name, resp.Message)
		}
	}
	c := s.Counts()
	if c.Requests != 3 || c.Handoffs != 1 || c.Bad != 0 || c.Conns != 1 || c.Bytes < 100 {
		t.Fatalf("counts %+v: want 3 requests, 1 handoff, 1 connection, the bodies' bytes", c)
	}
}
