//go:build unix

package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/store/memory"
)

// TestEndToEnd runs a swarm defined in YAML on the scripted model named by
// the file: the swarm hands off to an agent whose command tool is called
// once with invalid arguments (rejected before the command starts) and
// once with valid ones.
func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	write(t, dir, "tools/lookup.sh", `#!/bin/sh
input=$(cat)
echo "$SWARM_IDEMPOTENCY_KEY" >> "$CALL_LOG"
echo "policy $input covers hail"
echo "run=$SWARM_RUN_ID step=$SWARM_STEP_KEY key=$SWARM_IDEMPOTENCY_KEY tool=$SWARM_TOOL"
`, 0o755)
	write(t, dir, "script.yaml", `
support:
  - tool_calls:
      - {id: h1, name: handoff_to_insurance, arguments: {request: "Does policy P-7 cover hail?"}}
  - text: '{"answer": "Yes, P-7 covers hail.", "source": "insurance"}'
insurance:
  - tool_calls:
      - {id: bad, name: lookup_policy, arguments: {number: 7}}
  - tool_calls:
      - {id: c1, name: lookup_policy, arguments: {policy: P-7}}
  - text: P-7 covers hail.
`, 0o644)
	path := write(t, dir, "swarm.yaml", `
version: 1
model: scripted:script.yaml
tools:
  lookup_policy:
    description: Looks up a policy by number
    command: [./tools/lookup.sh]
    input_schema:
      type: object
      properties: {policy: {type: string}}
      required: [policy]
    timeout: 5s
    env: {CALL_LOG: `+strconv.Quote(log)+`}
agents:
  insurance:
    description: Answers questions about insurance policies
    instructions: You answer questions about policies.
    tools: [lookup_policy]
    handoffs: [support_desk]
  support_desk:
    description: Front desk
    handoffs: [insurance]
swarms:
  support:
    description: Customer support
    instructions: 'Answer the customer: {{.Input}}'
    handoffs: [{agent: insurance, description: Policy coverage questions}]
    result_schema:
      type: object
      properties:
        answer: {type: string}
        source: {type: string}
      required: [answer]
`, 0o644)

	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// No default model: the file's model spec opens the scripted model.
	rt, err := swarm.New(swarm.Config{Store: memory.New(), PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := f.Register(rt); err != nil {
		t.Fatal(err)
	}
	var support *swarm.Swarm[string, json.RawMessage]
	for _, d := range rt.Swarms() {
		if d.ID() == "support" {
			support, _ = d.(*swarm.Swarm[string, json.RawMessage])
		}
	}
	if support == nil {
		t.Fatal("support is not a *swarm.Swarm[string, json.RawMessage]")
	}
	ctx := ctxT(t)
	res, run, err := support.Run(ctx, rt, "Does my policy P-7 cover hail?")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := res.(swarm.Completed[json.RawMessage])
	if !ok {
		t.Fatalf("result %#v", res)
	}
	var out struct{ Answer, Source string }
	if err := json.Unmarshal(c.Output, &out); err != nil || out.Answer != "Yes, P-7 covers hail." || out.Source != "insurance" {
		t.Fatalf("output %s (%v)", c.Output, err)
	}

	evs, err := rt.History(ctx, run.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var results []swarm.Event
	var handoff string
	for _, e := range evs {
		switch e.Type {
		case swarm.EventToolResult:
			results = append(results, e)
		case swarm.EventHandoffReturned:
			handoff = e.Output
		}
	}
	if handoff != "P-7 covers hail." {
		t.Errorf("handoff output %q", handoff)
	}
	if len(results) != 2 {
		t.Fatalf("tool results %+v", results)
	}
	if r := results[0]; !r.IsError || r.Agent != "insurance" || !strings.Contains(r.Output, "invalid arguments for tool lookup_policy") {
		t.Errorf("invalid call result %+v", r)
	}
	step := "t1/h/h1/t2/tool/c1"
	key := run.ID() + "/" + evs[0].Instance + "/" + step
	want := `policy {"policy":"P-7"} covers hail` + "\nrun=" + run.ID() + " step=" + step + " key=" + key + " tool=lookup_policy"
	if r := results[1]; r.IsError || r.Output != want {
		t.Errorf("tool result\n%+v\nwant output\n%s", r, want)
	}
	// The command ran once: the invalid call never started it.
	b, err := os.ReadFile(log)
	if err != nil || string(b) != key+"\n" {
		t.Errorf("call log %q, %v", b, err)
	}
}
