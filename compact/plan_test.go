package compact

import (
	"strings"
	"testing"

	"github.com/swarmrt/swarm/model"
)

// rounds is a task followed by n rounds of a model response calling a tool
// and the tool's result: model responses are at 1, 3, 5...
func rounds(n int) []model.Message {
	msgs := []model.Message{{Role: model.RoleUser, Content: "task"}}
	for i := range n {
		id := string(rune('a' + i))
		msgs = append(msgs,
			model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: id, Name: "fetch"}}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Content: strings.Repeat("x", 400)})
	}
	return msgs
}

// Plan cuts before the Keep-th latest model response, then on from what is
// summarized, and not at all under the trigger.
func TestPlanCutsBeforeTheKeptRounds(t *testing.T) {
	c, err := (&Config{Window: 200, Keep: 2}).Resolve("")
	if err != nil {
		t.Fatal(err)
	}
	msgs := rounds(6)
	view, cut := c.Plan(nil, "", nil, msgs)
	if cut == nil || cut.From != 1 || cut.To != 9 || cut.Prev != "" || cut.TokensBefore != Estimate("", nil, msgs) {
		t.Fatalf("cut %+v, want messages 1-9 of a request of %d tokens", cut, Estimate("", nil, msgs))
	}
	if len(view) != len(msgs) {
		t.Fatalf("view of %d messages before any compaction, want %d", len(view), len(msgs))
	}
	st := (*State)(nil).Next(msgs, cut.To, "sum")
	view, cut = c.Plan(st, "", nil, msgs)
	if len(view) != len(msgs)-9+1 || !strings.HasSuffix(view[0].Content, "\n\n[Summary of the conversation so far]\nsum") {
		t.Fatalf("view after the summary: %d messages, first %q", len(view), view[0].Content)
	}
	// Two rounds left, as many as Keep: half of them stays.
	if cut == nil || cut.From != 9 || cut.To != 11 || cut.Prev != "sum" {
		t.Fatalf("second cut %+v, want messages 9-11 after the first summary", cut)
	}
	roomy, _ := (&Config{Window: 100000}).Resolve("")
	if _, cut := roomy.Plan(nil, "", nil, msgs); cut != nil {
		t.Errorf("cut %+v of a request well within the trigger", cut)
	}
}

// Resolve fills in the defaults, takes the window from the table of known
// models (the longest prefix wins), and rejects bad numbers.
func TestResolve(t *testing.T) {
	if c, err := (*Config)(nil).Resolve("openai:gpt-4o"); c != nil || err != nil {
		t.Errorf("nil config resolved to %+v, %v", c, err)
	}
	for spec, want := range map[string]int{"openai:gpt-4o": 128000, "openai:gpt-4.1-mini": 1047576, "openai:gpt-4": 8192,
		"anthropic:claude-sonnet-4": 200000, "gpt-5": 400000, "local:unknown": 128000} {
		c, err := (&Config{}).Resolve(spec)
		if err != nil || c.Window != want || c.Trigger != 0.8 || c.Keep != 4 || c.Instructions != defaultSummaryPrompt {
			t.Errorf("%s resolved to %+v, %v, want window %d and the defaults", spec, c, err, want)
		}
	}
	for _, bad := range []Config{{Window: -1}, {Trigger: 1.5}, {Trigger: -0.1}, {Messages: -1}, {Keep: -1}} {
		if _, err := bad.Resolve(""); err == nil {
			t.Errorf("%+v resolved", bad)
		}
	}
}
