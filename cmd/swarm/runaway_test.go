package main_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// loopFile is a swarm whose agent hands off to itself; its scripted model
// (loopScript) never stops delegating.
const loopFile = `version: 1
model: scripted:loop.yaml
%s
agents:
  writer:
    description: Writes
    instructions: Write.
    handoffs: [writer]
swarms:
  loop:
    description: Loops
    instructions: Loop on {{.Input}}.
    handoffs: [writer]
`

func loopScript(steps int) string {
	var b strings.Builder
	b.WriteString("loop:\n  - tool_calls: [{name: handoff_to_writer, arguments: {request: again}}]\n")
	b.WriteString("writer:\n")
	for range steps {
		b.WriteString("  - tool_calls: [{name: handoff_to_writer, arguments: {request: again}}]\n")
	}
	return b.String()
}

// TestRunawayHandoffCycleFailsTheRun: `swarm run` of a swarm whose agent
// hands off to itself ends failed (exit 1) at the run tree's model call
// limit, with a reason naming the limit: the default, the file's limits:
// section, or --max-model-calls, which wins over the file.
func TestRunawayHandoffCycleFailsTheRun(t *testing.T) {
	for _, c := range []struct {
		name, limits string
		args         []string
		want         int
	}{
		{"default", "", nil, 1000},
		{"file", "limits:\n  model_calls: 30", nil, 30},
		{"flag", "limits:\n  model_calls: 30", []string{"--max-model-calls", "45"}, 45},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{
				"swarm.yaml": fmt.Sprintf(loopFile, c.limits),
				"loop.yaml":  loopScript(1200),
			})
			args := append(append([]string{"run", "-q"}, c.args...), "loop", "go")
			r := swarmIn(t, dir, nil, "", args...)
			want := fmt.Sprintf("model calls %d of %d", c.want, c.want)
			if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "Config.MaxModelCalls") {
				t.Fatalf("exit %d, want 1 and a reason naming %q\nstderr: %s", r.code, want, r.stderr)
			}
			var st struct {
				ID    string `json:"id"`
				State string `json:"state"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.State != "failed" {
				t.Fatalf("stdout %q: want the failed run's status (%v)", r.stdout, err)
			}
			// The journal holds the limit's number of model responses.
			ev := swarmIn(t, dir, nil, "", "events", st.ID)
			if n := strings.Count(ev.stdout, `"type":"model_response"`); n != c.want {
				t.Errorf("%d model responses in the journal, want %d", n, c.want)
			}
		})
	}
}

// TestRunawayLimitsInTheFileAreChecked: a limit of 0, or one that is not a
// number, is a configuration error (exit 2) naming the file.
func TestRunawayLimitsInTheFileAreChecked(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"swarm.yaml": fmt.Sprintf(loopFile, "limits:\n  model_calls: 0\n  tool_calls: many"),
		"loop.yaml":  loopScript(1),
	})
	r := swarmIn(t, dir, nil, "", "run", "loop", "go")
	if r.code != 2 || !strings.Contains(r.stderr, "limits: model_calls") || !strings.Contains(r.stderr, "limits: tool_calls") {
		t.Fatalf("exit %d, want 2 naming both limits\n%s", r.code, r.stderr)
	}
}

// TestRunawayToolCallLimitFailsTheRun: --max-tool-calls bounds a run's
// tool executions; reaching it fails the run (exit 1) naming the limit.
func TestRunawayToolCallLimitFailsTheRun(t *testing.T) {
	dir := t.TempDir()
	var script strings.Builder
	script.WriteString("busy:\n")
	for range 30 {
		script.WriteString("  - tool_calls: [{name: ping, arguments: {}}]\n")
	}
	script.WriteString("  - text: done\n")
	write(t, dir, map[string]string{
		"swarm.yaml": `version: 1
model: scripted:busy.yaml
tools:
  ping:
    description: Pings
    command: ["echo", "pong"]
swarms:
  busy:
    description: Pings a lot
    instructions: Ping.
    tools: [ping]
    max_turns: 40
`,
		"busy.yaml": script.String(),
	})
	r := swarmIn(t, dir, nil, "", "run", "-q", "--max-tool-calls", "7", "busy", "go")
	if r.code != 1 || !strings.Contains(r.stderr, "tool calls 7 of 7") || !strings.Contains(r.stderr, "Config.MaxToolCalls") {
		t.Fatalf("exit %d, want 1 and a reason naming the tool call limit\n%s", r.code, r.stderr)
	}
	// Lifted, the same run completes.
	r = swarmIn(t, dir, nil, "", "run", "-q", "--max-tool-calls", "-1", "busy", "go")
	if r.code != 0 || strings.TrimSpace(r.stdout) != `"done"` {
		t.Fatalf("lifted: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
}
