//go:build unix

package config_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/team"
)

// TestCommandGuardrail: a YAML command guardrail reads the check on its
// standard input; its tripwire verdict fails the run with its reason, and
// an empty output allows the step.
func TestCommandGuardrail(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "guard.sh", `#!/bin/sh
input=$(cat)
case "$input" in
  *'"point":"output"'*secret*) echo '{"verdict": "tripwire", "message": "leaks a secret"}' ;;
esac
`, 0o755)
	write(t, dir, "script.yaml", `
desk:
  - tool_calls:
      - {id: c1, name: handoff_to_helper, arguments: {request: "tell me"}}
  - text: the secret is 42
helper:
  - text: here it is
`, 0o644)
	path := write(t, dir, "swarm.yaml", `
version: 1
model: scripted:script.yaml
guardrails:
  no_secrets:
    command: [./guard.sh]
    points: [output, handoff]
    timeout: 5s
agents:
  helper:
    description: helps
    guardrails: [no_secrets]
swarms:
  desk:
    instructions: answer
    handoffs: [helper]
    guardrails: [no_secrets]
    hold_stream: true
`, 0o644)
	st, got := runDesk(t, path)
	if st.State != swarm.StateFailed || st.Reason != "guardrail no_secrets: leaks a secret" {
		t.Fatalf("state %s reason %q", st.State, st.Reason)
	}
	// The helper names the swarm's guardrail again: it checks once.
	want := "desk:output:allow desk:handoff:allow helper:output:allow desk:output:tripwire"
	if got != want {
		t.Errorf("verdicts\n got %s\nwant %s", got, want)
	}
}

// TestCommandGuardrailAtCallAndResult: a YAML guardrail at a tool's call
// and its result that trips on the result fails the run with its reason;
// the tool runs once, and both verdicts are journaled.
func TestCommandGuardrailAtCallAndResult(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "guard.sh", `#!/bin/sh
case "$(cat)" in
  *'"point":"tool_result"'*) echo '{"verdict": "tripwire", "message": "leaks"}' ;;
esac
`, 0o755)
	write(t, dir, "fetch.sh", "#!/bin/sh\necho ran >> runs.txt\necho fetched\n", 0o755)
	write(t, dir, "script.yaml", `
desk:
  - tool_calls:
      - {id: c1, name: fetch, arguments: {}}
  - text: done
`, 0o644)
	path := write(t, dir, "swarm.yaml", `
version: 1
model: scripted:script.yaml
tools:
  fetch:
    description: Fetches
    command: [./fetch.sh]
guardrails:
  screen:
    command: [./guard.sh]
    points: [tool_call, tool_result]
swarms:
  desk:
    instructions: answer
    tools: [fetch]
    guardrails: [screen]
`, 0o644)
	st, verdicts := runDesk(t, path)
	if st.State != swarm.StateFailed || st.Reason != "guardrail screen: leaks" {
		t.Fatalf("state %s reason %q; want the result's tripwire", st.State, st.Reason)
	}
	if runs, err := os.ReadFile(filepath.Join(dir, "runs.txt")); err != nil || string(runs) != "ran\n" {
		t.Errorf("tool runs %q (%v), want one", runs, err)
	}
	if want := "desk:tool_call:allow desk:tool_result:tripwire"; verdicts != want {
		t.Errorf("verdicts %s, want %s", verdicts, want)
	}
}

// runDesk registers the definitions of the swarm.yaml at path in a new
// runtime and runs its swarm desk on "hi" to its end. It returns the run's
// status and its guardrail verdicts ("agent:point:verdict ...").
func runDesk(t *testing.T, path string) (swarm.Status, string) {
	t.Helper()
	ctx := ctxT(t)
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := swarm.New(swarm.Config{Store: memory.New(), PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := f.Register(rt); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Start(ctx, "desk", json.RawMessage(`"hi"`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	evs, err := rt.History(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []string
	for _, e := range evs {
		if e.Type == swarm.EventGuardrail {
			verdicts = append(verdicts, e.Agent+":"+e.Kind+":"+e.Verdict)
		}
	}
	return st, strings.Join(verdicts, " ")
}

func TestGuardrailConfigMistakes(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"guardrails:\n  g: {command: [sh], points: [sideways]}\n", `unknown point "sideways"`},
		{"guardrails:\n  g: {command: [sh]}\n", "missing points"},
		{"swarms:\n  s: {guardrails: [nope]}\n", `unknown guardrail "nope"`},
	} {
		_, err := config.Parse([]byte("version: 1\n"+tc.yaml), ".")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func TestCompactionConfig(t *testing.T) {
	f, err := config.Parse([]byte(`version: 1
model: scripted:x.yaml
agents:
  a: {compaction: {window: 8000, keep: 2}}
swarms:
  s: {compaction: {window: 16000, trigger: 0.5, messages: 100, keep: 3, instructions: be brief}}
`), ".")
	if err != nil {
		t.Fatal(err)
	}
	_ = f
	for _, tc := range []struct{ yaml, want string }{
		{"swarms:\n  s: {compaction: {trigger: 2}}\n", "trigger: want a fraction"},
		{"swarms:\n  s: {compaction: {window: -1}}\n", "window: want a positive number"},
		{"agents:\n  a: {compaction: {size: 1}}\n", `unknown field "size"`},
	} {
		_, err := config.Parse([]byte("version: 1\n"+tc.yaml), ".")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestConversationGuardrailsAndCompactionFromYAML: a conversation's
// guardrails check its user messages and its compaction summarizes its
// history.
func TestConversationGuardrailsAndCompactionFromYAML(t *testing.T) {
	dir := t.TempDir()
	writeScreen(t, dir)
	write(t, dir, "script.yaml", `
chat:
  - text: answer 1
  - text: answer 2
  - text: answer 3
  - text: answer 4
chat_compact:
  - text: the user said hello a few times
`, 0o644)
	path := write(t, dir, "swarm.yaml", `
version: 1
model: scripted:script.yaml
guardrails:
  screen:
    command: [./screen.sh]
    points: [input]
agents:
  chat:
    instructions: Talk.
conversations:
  talk:
    queen: chat
    guardrails: [screen]
    compaction: {messages: 4, keep: 1}
`, 0o644)
	_, rt, conv := loadConversation(t, path, "talk")
	ctx := ctxT(t)
	sess, err := conv.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Say(ctx, "my secret"); !errors.Is(err, swarm.ErrTurnFailed) || !strings.Contains(err.Error(), "guardrail screen: no secrets") {
		t.Fatalf("a secret: %v", err)
	}
	for i := 1; i <= 4; i++ {
		if rep, err := sess.Say(ctx, "hello"); err != nil || rep.Text != fmt.Sprint("answer ", i) {
			t.Fatalf("hello %d: %+v %v", i, rep, err)
		}
	}
	evs, err := rt.History(ctx, sess.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	compacted := 0
	for _, e := range evs {
		if e.Type == swarm.EventCompacted && e.Text == "the user said hello a few times" {
			compacted++
		}
	}
	if compacted == 0 {
		t.Error("the conversation never compacted")
	}
	for _, tc := range []struct{ yaml, want string }{
		{"agents:\n  a: {}\nconversations:\n  c: {queen: a, compaction: {trigger: 2}}\n", "conversation c: compaction: trigger: want a fraction"},
		{"agents:\n  a: {}\nconversations:\n  c: {queen: a, guardrails: [nope]}\n", `unknown guardrail "nope"`},
		{"agents:\n  a: {}\nteams:\n  t: {lead: a, compaction: {keep: -1}}\n", "team t: compaction: keep: want a positive number"},
	} {
		_, err := config.Parse([]byte("version: 1\n"+tc.yaml), ".")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestTeamGuardrailsFromYAML: a team's guardrails check its lead's user
// messages (and every member's steps).
func TestTeamGuardrailsFromYAML(t *testing.T) {
	dir := t.TempDir()
	writeScreen(t, dir)
	write(t, dir, "script.yaml", "lead:\n  - text: hello there\n", 0o644)
	path := write(t, dir, "swarm.yaml", `
version: 1
model: scripted:script.yaml
guardrails:
  screen:
    command: [./screen.sh]
    points: [input]
agents:
  lead:
    instructions: Lead.
teams:
  crew:
    lead: lead
    guardrails: [screen]
`, 0o644)
	_, rt := loadFile(t, path)
	ctx := ctxT(t)
	var crew *team.Team
	for _, d := range rt.Swarms() {
		if tm, ok := d.(*team.Team); ok && d.ID() == "crew" {
			crew = tm
		}
	}
	if crew == nil {
		t.Fatal("team crew not registered")
	}
	tr, err := crew.Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Say(ctx, "my secret"); err == nil || !strings.Contains(err.Error(), "guardrail screen: no secrets") {
		t.Fatalf("a secret: %v", err)
	}
	if reply, err := tr.Say(ctx, "hi"); err != nil || reply != "hello there" {
		t.Fatalf("hi: %q %v", reply, err)
	}
	if _, err := config.Parse([]byte("version: 1\nagents:\n  a: {}\nteams:\n  t: {lead: a, guardrails: [nope]}\n"), "."); err == nil || !strings.Contains(err.Error(), `team t: unknown guardrail "nope"`) {
		t.Errorf("an unknown guardrail: %v", err)
	}
}

// writeScreen writes screen.sh into dir: a command guardrail that rejects
// any check whose JSON mentions a secret.
func writeScreen(t *testing.T, dir string) {
	t.Helper()
	write(t, dir, "screen.sh", `#!/bin/sh
case "$(cat)" in
  *secret*) echo '{"verdict": "reject", "message": "no secrets"}' ;;
esac
`, 0o755)
}
