package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const chatFile = `version: 1
model: scripted:script.yaml
agents:
  receptionist:
    instructions: Greet the customer and route them.
  sales:
    description: Sells our products
    instructions: Sell {{.Context.topic}}.
swarms:
  plain:
    instructions: Answer.
conversations:
  front-desk:
    queen: receptionist
    agents: [sales]
    handovers:
      receptionist: [{agent: sales, sets: [topic]}]
    context: {topic: ""}
`

const chatScript = `receptionist:
  - tool_calls: [{name: transfer_to_sales, arguments: {topic: CRM}}]
sales:
  - text: Our CRM is $10 a seat.
  - text: Yes, billed monthly.
  - text: You're welcome.
`

func chatDir(t *testing.T) (dir string, args func(...string) []string) {
	t.Helper()
	dir = t.TempDir()
	for name, body := range map[string]string{"swarm.yaml": chatFile, "script.yaml": chatScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, func(rest ...string) []string {
		return append([]string{"--file", filepath.Join(dir, "swarm.yaml"), "--store", "sqlite:" + filepath.Join(dir, "runs.db")}, rest...)
	}
}

func TestChatAcrossProcesses(t *testing.T) {
	_, args := chatDir(t)
	var out, errb bytes.Buffer
	code := Main(args("chat", "front-desk", "--id", "c1"), strings.NewReader("I'd like a CRM\n\nMonthly billing?\n/quit\nnot read\n"), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// The handover shows before the first reply of the new agent, once.
	if want := "(receptionist → sales)\nsales: Our CRM is $10 a seat.\nsales: Yes, billed monthly.\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	// Piped lines get no prompt: no "you> you> you>" on stderr.
	if !strings.Contains(errb.String(), "conversation c1 with receptionist") || strings.Contains(errb.String(), "you>") {
		t.Errorf("stderr %q", errb.String())
	}

	// Another process continues the same conversation; sales is still in
	// charge and the shared context survived.
	out.Reset()
	errb.Reset()
	code = Main(args("chat", "front-desk", "--id", "c1"), strings.NewReader("/context\nThanks!"), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "{\"topic\":\"CRM\"}\nsales: You're welcome.\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if !strings.Contains(errb.String(), "conversation c1 with sales") {
		t.Errorf("stderr %q", errb.String())
	}

	// /close ends it; it cannot be continued.
	if code := Main(args("chat", "front-desk", "--id", "c1"), strings.NewReader("/close\n"), &out, &errb); code != 0 {
		t.Fatalf("close: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := Main(args("chat", "front-desk", "--id", "c1"), strings.NewReader("hello\n"), &out, &errb); code != ExitFailed || !strings.Contains(errb.String(), "is stopped") {
		t.Errorf("chat on a closed conversation: exit %d: %s", code, errb.String())
	}
}

func TestChatBadInput(t *testing.T) {
	_, args := chatDir(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args("chat", "nope"), `unknown swarm "nope"`},
		{args("chat", "plain"), "plain is a swarm, not a conversation"},
		{args("chat"), "the conversations of"},
	} {
		var out, errb bytes.Buffer
		if code := Main(tc.args, strings.NewReader(""), &out, &errb); code != ExitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args[4:], code, errb.String())
		}
	}
}

// A swarm of the file that hands off to one of its conversations is
// refused when the file is loaded, saying what the target is: a
// conversation never returns a result to a caller.
func TestRunHandoffToConversationRefused(t *testing.T) {
	dir, args := chatDir(t)
	file := strings.Replace(chatFile, "    instructions: Answer.\n", "    instructions: Answer.\n    handoffs: [{swarm: front-desk}]\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "swarm.yaml"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Main(args("run", "plain", "hello"), strings.NewReader(""), &out, &errb)
	if code != ExitUsage || !strings.Contains(errb.String(), `swarm plain: handoff to "front-desk", the conversation defined at line 14: a conversation cannot be a handoff target`) {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}
