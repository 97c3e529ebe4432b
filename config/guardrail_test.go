//go:build unix

package config_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/store/memory"
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
	ctx := ctxT(t)
	id, err := rt.Start(ctx, "desk", json.RawMessage(`"hi"`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != swarm.StateFailed || st.Reason != "guardrail no_secrets: leaks a secret" {
		t.Fatalf("state %s reason %q", st.State, st.Reason)
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
	// The helper names the swarm's guardrail again: it checks once.
	want := "desk:output:allow desk:handoff:allow helper:output:allow desk:output:tripwire"
	if got := strings.Join(verdicts, " "); got != want {
		t.Errorf("verdicts\n got %s\nwant %s", got, want)
	}
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
