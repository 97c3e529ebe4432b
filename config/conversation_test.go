package config_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/conversation"
)

const conversationFile = `
version: 1
model: scripted:script.yaml
agents:
  receptionist:
    description: Greets and routes
    instructions: Greet the customer.
  sales:
    description: Sells
    instructions: Sell {{.Context.topic}} to {{.Context.customer}}.
  support:
    instructions: Fix problems.
conversations:
  front-desk:
    description: Receptionist, sales and support
    queen: receptionist
    agents: [sales, support]
    handovers:
      receptionist: [{agent: sales, sets: [topic], description: Sales questions}, support]
      sales: [receptionist]
    return_to_queen: false
    max_turns: 4
    history: own_tools
    agent_history: {support: text}
    name_speakers: true
    context: {customer: Ada, topic: ""}
`

const conversationScript = `
receptionist:
  - tool_calls: [{name: transfer_to_sales, arguments: {topic: CRM}}]
sales:
  - text: CRM is $10 a seat.
  - text: Yes, monthly billing.
`

// loadConversation loads the file at path into a new runtime and returns
// its conversation id.
// loadFile loads the swarm.yaml at path into a new runtime.
func loadFile(t *testing.T, path string) (*config.File, *swarm.Runtime) {
	t.Helper()
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, nil)
	if err := f.Register(rt); err != nil {
		t.Fatal(err)
	}
	return f, rt
}

func loadConversation(t *testing.T, path, id string) (*config.File, *swarm.Runtime, *conversation.Conversation[map[string]any]) {
	t.Helper()
	f, rt := loadFile(t, path)
	for _, d := range rt.Swarms() {
		if c, ok := d.(*conversation.Conversation[map[string]any]); ok && d.ID() == id {
			return f, rt, c
		}
	}
	t.Fatalf("conversation %s not registered", id)
	return nil, nil, nil
}

func TestConversationFromYAML(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "swarm.yaml", conversationFile, 0o644)
	write(t, dir, "script.yaml", conversationScript, 0o644)
	f, rt, conv := loadConversation(t, path, "front-desk")
	if got := f.ConversationIDs(); !slices.Equal(got, []string{"front-desk"}) {
		t.Fatalf("conversations %q", got)
	}
	ctx := ctxT(t)
	sess, err := conv.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sess.Say(ctx, "I'd like a CRM")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Agent != "sales" || rep.Text != "CRM is $10 a seat." || rep.Context["topic"] != "CRM" || rep.Context["customer"] != "Ada" {
		t.Errorf("reply %+v", rep)
	}
	if rep, err = sess.Say(ctx, "Monthly?"); err != nil || rep.Agent != "sales" {
		t.Errorf("reply %+v %v", rep, err)
	}
	// A second registration of the same file is refused as a whole.
	if err := f.Register(rt); !errors.Is(err, swarm.ErrDuplicate) {
		t.Errorf("second register: %v", err)
	}
}

func TestConversationYAMLMistakes(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"no queen", "conversations:\n  c:\n    agents: [a]\n", "line 6: conversation c: missing queen"},
		{"unknown queen", "conversations:\n  c:\n    queen: z\n", `line 7: conversation c: queen: unknown agent "z"`},
		{"unknown member", "conversations:\n  c:\n    queen: a\n    agents: [b, z]\n", `line 8: conversation c: agents: unknown agent "z"`},
		{"outsider handover", "conversations:\n  c:\n    queen: a\n    handovers: {a: [b]}\n", `handover from a to "b", which is not the queen or one of the agents`},
		{"self handover", "conversations:\n  c:\n    queen: a\n    agents: [b]\n    handovers: {a: [a]}\n", "handover from a to itself"},
		{"unknown set", "conversations:\n  c:\n    queen: a\n    agents: [b]\n    handovers: {a: [{agent: b, sets: [colour]}]}\n    context: {topic: x}\n", `sets "colour", which is not a key`},
		{"bad history", "conversations:\n  c:\n    queen: a\n    history: everything\n", `unknown policy "everything" (want one of own_tools, full, text)`},
		{"bad flag", "conversations:\n  c:\n    queen: a\n    return_to_queen: sometimes\n", "return_to_queen: want true or false"},
		{"name clash", "conversations:\n  a:\n    queen: b\n", "already used by the agent defined at line 3"},
		{"unknown field", "conversations:\n  c:\n    queen: a\n    queens: [b]\n", `unknown field "queens"`},
		{"swarm handoff to it", "swarms:\n  desk:\n    handoffs: [{swarm: c}]\nconversations:\n  c:\n    queen: a\n", `line 7: swarm desk: handoff to "c", the conversation defined at line 9: a conversation cannot be a handoff target`},
		{"handoff to it", "  d:\n    handoffs: [c]\nconversations:\n  c:\n    queen: a\n", `line 6: agent d: handoff to "c", the conversation defined at line 8: a conversation cannot be a handoff target`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := "version: 1\nagents:\n  a: {instructions: x}\n  b: {instructions: y}\n" + tc.body
			_, err := config.Parse([]byte(body), t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
