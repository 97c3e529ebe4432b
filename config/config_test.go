package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/adaptive"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// write creates a file in dir (executable when mode says so) and returns
// its path.
func write(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.TrimPrefix(content, "\n")), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newRuntime(t *testing.T, m model.Model) *swarm.Runtime {
	t.Helper()
	cfg := swarm.Config{Store: memory.New(), RetryBackoff: time.Millisecond, PollInterval: 10 * time.Millisecond}
	if m != nil {
		cfg.Model = m
	}
	rt, err := swarm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

const fullFile = `
version: 1
model: scripted:script.yaml
tools:
  lookup_policy:
    description: Looks up a policy by number
    command: ["./tools/lookup.sh", "--verbose"]
    input_schema:
      type: object
      properties: {policy: {type: string}}
      required: [policy]
    timeout: 10s
    dir: .
    env: {FOO: bar}
  echo:
    command: [cat]
agents:
  weather:
    description: Weather forecasts
    instructions: You forecast the weather for {{.Input}}.
    model: openai:gpt-4.1-mini
    tools: [lookup_policy]
    handoffs: [calendar, {agent: allergens, description: "Pollen levels"}]
    max_turns: 5
  calendar:
    description: Calendar
    handoffs: [weather]
  allergens:
    instructions: Pollen.
swarms:
  planner:
    description: Plans activities
    instructions: Plan for {{.Input}}.
    handoffs: [weather]
    tools: [echo]
    max_turns: 10
    input: text
    result_schema: {type: object, properties: {activity: {type: string}}, required: [activity]}
    tags: [planning]
  chat:
    instructions: Chat.
  trip:
    input:
      type: object
      properties: {city: {type: string}}
      required: [city]
  trip_plan:
    input: {type: object}
    result_schema: {type: array, items: {type: string}}
`

func TestLoadAndRegisterFullFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tools/lookup.sh", "#!/bin/sh\ncat\n", 0o755)
	path := write(t, dir, "swarm.yaml", fullFile, 0o644)
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "scripted:" + filepath.Join(dir, "script.yaml"); f.Model != want {
		t.Errorf("Model = %q, want %q", f.Model, want)
	}
	if f.Version != 1 || f.Dir != dir || f.Path != path {
		t.Errorf("Version %d, Dir %q, Path %q", f.Version, f.Dir, f.Path)
	}
	if got := strings.Join(f.AgentNames(), ","); got != "weather,calendar,allergens" {
		t.Errorf("AgentNames = %s", got)
	}
	if got := strings.Join(f.SwarmIDs(), ","); got != "planner,chat,trip,trip_plan" {
		t.Errorf("SwarmIDs = %s", got)
	}
	if got := strings.Join(f.ToolNames(), ","); got != "lookup_policy,echo" {
		t.Errorf("ToolNames = %s", got)
	}
	lookup := f.Tool("lookup_policy")
	if lookup == nil || lookup.Description() != "Looks up a policy by number" || !strings.Contains(string(lookup.Schema()), `"required":["policy"]`) {
		t.Fatalf("lookup_policy tool: %+v", lookup)
	}
	if s := string(f.Tool("echo").Schema()); s != `{"type":"object"}` {
		t.Errorf("default schema %s", s)
	}
	if f.Tool("nope") != nil {
		t.Error("Tool(nope) != nil")
	}

	rt := newRuntime(t, nil)
	if err := f.Register(rt); err != nil {
		t.Fatal(err)
	}
	agents := map[string]*swarm.Agent{}
	for _, a := range rt.Agents() {
		agents[a.Name] = a
	}
	w := agents["weather"]
	if w == nil || len(agents) != 3 {
		t.Fatalf("agents %v", agents)
	}
	if w.Model != "openai:gpt-4.1-mini" || w.MaxTurns != 5 || len(w.Tools) != 1 || w.Tools[0].Name() != "lookup_policy" {
		t.Errorf("weather = %+v", w)
	}
	if agents["calendar"].Model != f.Model {
		t.Errorf("calendar model %q, want the file's default", agents["calendar"].Model)
	}
	var targets []string
	for _, h := range w.Handoffs {
		targets = append(targets, h.Target())
	}
	if strings.Join(targets, ",") != "calendar,allergens" {
		t.Errorf("weather handoffs %v", targets)
	}
	// The cycle weather -> calendar -> weather is wired by value.
	if cal := agents["calendar"]; len(cal.Handoffs) != 1 || cal.Handoffs[0].Target() != "weather" {
		t.Errorf("calendar handoffs %+v", cal.Handoffs)
	}

	defs := map[string]swarm.Definition{}
	for _, d := range rt.Swarms() {
		defs[d.ID()] = d
	}
	if len(defs) != 4 {
		t.Fatalf("swarms %v", defs)
	}
	p := defs["planner"]
	if p.Description() != "Plans activities" || !strings.Contains(string(p.ResultSchema()), `"activity"`) {
		t.Errorf("planner: %q %s", p.Description(), p.ResultSchema())
	}
	if tg, ok := p.(interface{ Tags() []string }); !ok || !slices.Equal(tg.Tags(), []string{"planning"}) {
		t.Errorf("planner tags")
	}
	if s := string(defs["chat"].ResultSchema()); s != `{"type":"string"}` {
		t.Errorf("chat result schema %s", s)
	}
	if s := string(defs["trip_plan"].ResultSchema()); !strings.Contains(s, `"array"`) {
		t.Errorf("trip_plan result schema %s", s)
	}
	if s := string(defs["trip"].InputSchema()); !strings.Contains(s, `"required":["city"]`) {
		t.Errorf("trip input schema %s", s)
	}
	if s := string(defs["chat"].InputSchema()); s != `{"type":"string"}` {
		t.Errorf("chat input schema %s", s)
	}

	// A second runtime gets its own values; registering twice in one
	// runtime fails before anything is registered.
	if err := f.Register(newRuntime(t, nil)); err != nil {
		t.Fatal(err)
	}
	if err := f.Register(rt); !errors.Is(err, swarm.ErrDuplicate) {
		t.Errorf("second Register: %v", err)
	}
}

func TestRegisterIsAllOrNothing(t *testing.T) {
	f, err := config.Parse([]byte("version: 1\nagents: {a: {}, b: {}}\nswarms: {s: {handoffs: [a]}}\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, nil)
	if err := rt.Register(swarm.Define[string, string]("s", "", nil)); err != nil {
		t.Fatal(err)
	}
	err = f.Register(rt)
	if !errors.Is(err, swarm.ErrDuplicate) || !strings.Contains(err.Error(), `swarm "s" is already registered`) {
		t.Fatalf("err = %v", err)
	}
	if n := len(rt.Agents()); n != 0 {
		t.Errorf("%d agents registered by a failed Register", n)
	}
	if err := f.Register(nil); err == nil {
		t.Error("Register(nil) succeeded")
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "tool.sh", "#!/bin/sh\n", 0o755)
	write(t, dir, "plain.txt", "", 0o644)
	base := "version: 1\n"
	for _, tc := range []struct {
		name, yaml string
		line       int
		msg        string
	}{
		{"empty", "", 0, "file is empty"},
		{"comment only", "# nothing\n", 0, "file is empty"},
		{"not a mapping", "- a\n", 1, "want a mapping with version"},
		{"two documents", "version: 1\n---\nversion: 1\n", 3, "single YAML document"},
		{"malformed", "version: 1\nagents: [a\n", 2, "invalid YAML: did not find expected ',' or ']'"},
		{"indentation", "version: 1\nagents:\n  a:\n    instructions: x\n   description: y\nswarms:\n  s: {}\n", 5, "invalid YAML: did not find expected key"},
		{"missing version", "agents: {}\n", 1, `missing version: add "version: 1"`},
		{"unsupported version", "version: 2\nbogus: 1\n", 1, "unsupported version 2 (this build reads version 1)"},
		{"version not a number", "version: one\n", 1, `version: want a number such as 1, got the string "one"`},
		{"unknown top-level field", base + "agent: {}\n", 2, `unknown top-level field "agent" (did you mean "agents"?)`},
		{"duplicate top-level field", base + "agents: {}\nagents: {}\n", 3, `field "agents" is given twice (first at line 2)`},
		{"unknown agent field", base + "agents:\n  weather:\n    instruction: hi\n", 4, `agent weather: unknown field "instruction" (did you mean "instructions"?)`},
		{"unknown field, no suggestion", base + "agents:\n  weather:\n    colour: red\n", 4, `agent weather: unknown field "colour" (known fields: description, instructions, model, tools, toolsets, handoffs, max_turns, skills, absorb, network_tools, guardrails, compaction, memory, knowledge)`},
		{"unknown tool field", base + "tools:\n  t:\n    command: [sh]\n    shell: true\n", 5, `tool t: unknown field "shell"`},
		{"unknown swarm field", base + "swarms:\n  s:\n    result: {}\n", 4, `swarm s: unknown field "result"`},
		{"unknown handoff field", base + "agents:\n  a: {}\n  b:\n    handoffs: [{agent: a, descr: x}]\n", 5, `agent b: handoff: unknown field "descr" (did you mean "description"?)`},
		{"duplicate agent", base + "agents:\n  weather: {}\n  weather: {}\n", 4, `duplicate agent "weather" (first defined at line 3)`},
		{"duplicate field", base + "agents:\n  weather:\n    model: a:b\n    model: c:d\n", 5, `agent weather: field "model" is given twice (first at line 4)`},
		{"agent and swarm share a name", base + "agents:\n  x: {}\nswarms:\n  x: {}\n", 5, "swarm x: the name is already used by the agent defined at line 3 (agents and swarms share one namespace)"},
		{"bad agent name", base + "agents:\n  we ather: {}\n", 3, `agent "we ather": a name may contain only letters, digits, '_' and '-'`},
		{"unknown loop strategy", base + "swarms:\n  s:\n    loop: {strategy: spiral}\n", 4, `swarm s: loop: strategy: want simple or adaptive, got "spiral"`},
		{"unknown loop field", base + "swarms:\n  s:\n    loop: {strategy: adaptive, stall: 3}\n", 4, `swarm s: loop: unknown field "stall"`},
		{"bad stall threshold", base + "swarms:\n  s:\n    loop: {strategy: adaptive, stall_threshold: 0}\n", 4, `swarm s: loop: stall_threshold: want a whole number of at least 1, got the number 0`},
		{"bad on_exhausted", base + "swarms:\n  s:\n    loop: {strategy: adaptive, on_exhausted: retry}\n", 4, `swarm s: loop: on_exhausted: want pause or fail, got "retry"`},
		{"evaluator not a handoff", base + "agents:\n  a: {}\nswarms:\n  s:\n    handoffs: [a]\n    loop: {strategy: adaptive, evaluator: b}\n", 7, `swarm s: loop: evaluator: "b" is not one of the swarm's agent handoffs`},
		{"builtins not a boolean", base + "swarms:\n  s:\n    builtins: maybe\n", 4, `swarm s: builtins: want true or false, got the string "maybe"`},
		{"adaptive without a team", base + "agents:\n  a: {}\nswarms:\n  s:\n    handoffs: [a]\n    loop: {strategy: adaptive, evaluator: a}\n", 7, `swarm s: loop: an adaptive swarm needs at least one handoff to work with (besides its evaluator)`},
		{"adaptive settings on the simple loop", base + "swarms:\n  s:\n    loop: {max_replans: 1}\n", 4, `swarm s: loop: evaluator, stall_threshold, max_replans, max_rounds and on_exhausted need strategy: adaptive`},
		{"team without lead", base + "teams:\n  t: {description: x}\n", 3, "team t: missing lead"},
		{"team lead unknown", base + "teams:\n  t: {lead: boss}\n", 3, `team t: lead: unknown agent "boss"`},
		{"team member bad name", base + "agents:\n  l: {}\nteams:\n  t:\n    lead: l\n    members:\n      a b: {prompt: x}\n", 8, `team t: member name the string "a b": want 1 to 32 letters`},
		{"team member named like lead", base + "agents:\n  l: {}\nteams:\n  t:\n    lead: l\n    members:\n      l: {prompt: x}\n", 8, "team t: member l has the name of the lead"},
		{"team member with an unknown field", base + "agents:\n  l: {}\nteams:\n  t:\n    lead: l\n    members:\n      a: {role: coder, promt: x}\n", 8, `team t: member a: unknown field "promt" (did you mean "prompt"?)`},
		{"team bad timeout", base + "agents:\n  l: {}\nteams:\n  t:\n    lead: l\n    request_timeout: soon\n", 7, `team t: invalid request_timeout "soon"`},
		{"team bad max_wakes", base + "agents:\n  l: {}\nteams:\n  t:\n    lead: l\n    max_wakes: 0\n", 7, "team t: max_wakes: want a whole number of at least 1"},
		{"team named like an agent", base + "agents:\n  l: {}\nteams:\n  l: {lead: l}\n", 5, "team l: the name is already used by the agent defined at line 3"},
		{"absorb self", base + "agents:\n  a:\n    absorb: [a]\n", 4, "agent a: absorb: an agent cannot absorb itself"},
		{"absorb unknown", base + "agents:\n  a:\n    absorb: [b]\n", 4, `agent a: absorb: unknown agent "b"`},
		{"absorb not a list", base + "agents:\n  a:\n    absorb: some\n", 4, `agent a: absorb: want "all" or a list of agent names, got the string "some"`},
		{"bad skill name", base + "agents:\n  a:\n    skills: {a.b: {}}\n", 4, `skill "a.b": a name may contain only`},
		{"unknown skill field", base + "agents:\n  a:\n    skills: {s: {inputs: text}}\n", 4, `agent a: skill s: unknown field "inputs" (did you mean "input"?)`},
		{"bad swarm name", base + "swarms:\n  plan.ner: {}\n", 3, `swarm "plan.ner": a name may contain only letters, digits, '_' and '-'`},
		{"agent name too long", base + "agents:\n  " + strings.Repeat("a", 54) + ": {}\n", 3, "the name is longer than 53 characters (its handoff tool"},
		{"handoff to unknown agent", base + "agents:\n  calendar: {}\n  allergens: {}\n  weather:\n    handoffs:\n      - calender\n", 7, `agent weather: handoff to unknown agent "calender" (known: calendar, allergens, weather)`},
		{"handoff in mapping to unknown agent", base + "swarms:\n  s:\n    handoffs: [{agent: ghost}]\n", 4, `swarm s: handoff to unknown agent "ghost" (no agents are defined in this file)`},
		{"customizable agent handoff", base + "agents:\n  a: {}\nswarms:\n  t:\n    handoffs: [{agent: a, customizable: true}]\n", 6, `swarm t: handoff: customizable applies to swarm handoffs only`},
		{"unknown swarm handoff", base + "swarms:\n  t:\n    handoffs: [{swarm: nope}]\n", 4, `swarm t: handoff to unknown swarm "nope"`},
		{"agent and swarm", base + "agents:\n  a: {}\nswarms:\n  t:\n    handoffs: [{agent: a, swarm: t}]\n", 6, `give either agent or swarm, not both`},
		{"handoff listed twice", base + "agents:\n  a: {}\n  b:\n    handoffs:\n      - a\n      - {agent: a}\n", 7, `agent b: handoff to "a" is listed twice (first at line 6)`},
		{"handoff without agent", base + "agents:\n  b:\n    handoffs: [{description: x}]\n", 4, `agent b: handoff: missing field "agent"`},
		{"unknown tool", base + "tools:\n  lookup_policy: {command: [sh]}\nagents:\n  a:\n    tools: [lookup]\n", 6, `agent a: unknown tool "lookup" (known: lookup_policy)`},
		{"tool listed twice", base + "tools:\n  t: {command: [sh]}\nagents:\n  a:\n    tools:\n      - t\n      - t\n", 8, `agent a: tool "t" is listed twice (first at line 7)`},
		{"builtin tool name on a swarm", base + "tools:\n  complete: {command: [sh]}\nswarms:\n  s:\n    tools: [complete]\n", 6, `swarm s: tool "complete" has the name of a built-in tool of swarms`},
		{"handoff_ tool name", base + "tools:\n  handoff_to_x: {command: [sh]}\n", 3, `tool "handoff_to_x": names starting with "handoff_to_" are reserved`},
		{"bad tool name", base + "tools:\n  my tool: {command: [sh]}\n", 3, `tool "my tool": a name may contain only letters`},
		{"empty command", base + "tools:\n  t:\n    command: []\n", 4, "tool t: command is empty"},
		{"missing command", base + "tools:\n  t:\n    description: x\n", 3, "tool t: missing command"},
		{"shell string command", base + "tools:\n  t:\n    command: ls -la\n", 4, "tool t: command must be a list of arguments (argv), not a string"},
		{"empty program", base + "tools:\n  t:\n    command: ['', x]\n", 4, "tool t: command: the program name is empty"},
		{"command not in PATH", base + "tools:\n  t:\n    command: [no-such-program-xyz]\n", 4, `tool t: command "no-such-program-xyz": not found in PATH`},
		{"missing script", base + "tools:\n  t:\n    command: [./missing.sh]\n", 4, `tool t: command "./missing.sh": no such file or directory (looked for `},
		{"script not executable", base + "tools:\n  t:\n    command: [./plain.txt]\n", 4, `tool t: command "./plain.txt": permission denied`},
		{"bad timeout", base + "tools:\n  t:\n    command: [sh]\n    timeout: 10 parsecs\n", 5, `tool t: invalid timeout "10 parsecs": want a duration such as 10s or 2m`},
		{"negative timeout", base + "tools:\n  t:\n    command: [sh]\n    timeout: -1s\n", 5, `tool t: invalid timeout "-1s": must be positive`},
		{"missing dir", base + "tools:\n  t:\n    command: [sh]\n    dir: nowhere\n", 5, "tool t: dir: stat"},
		{"reserved env", base + "tools:\n  t:\n    command: [sh]\n    env:\n      SWARM_RUN_ID: x\n", 6, "tool t: env: SWARM_RUN_ID is set by the runtime"},
		{"invalid schema keyword", base + "tools:\n  t:\n    command: [sh]\n    input_schema:\n      type: object\n      requried: [a]\n", 7, `tool t: input_schema: unknown JSON schema keyword "requried" (did you mean "required"?)`},
		{"invalid schema type", base + "tools:\n  t:\n    command: [sh]\n    input_schema:\n      type: object\n      properties:\n        a: {type: strng}\n", 8, `tool t: input_schema: unknown JSON schema type "strng" (did you mean "string"?)`},
		{"invalid schema value", base + "tools:\n  t:\n    command: [sh]\n    input_schema:\n      type: object\n      required: a\n", 5, "tool t: input_schema: invalid JSON schema: required: got a JSON string, want []string"},
		{"invalid schema pattern", base + "swarms:\n  s:\n    result_schema: {type: string, pattern: '('}\n", 4, "swarm s: result_schema: invalid JSON schema"},
		{"unresolvable schema ref", base + "swarms:\n  s:\n    input: {$ref: '#/$defs/nope'}\n", 4, "swarm s: input: invalid JSON schema"},
		{"tool schema not an object", base + "tools:\n  t:\n    command: [sh]\n    input_schema: {type: string}\n", 5, `tool t: input_schema: type must be "object"`},
		{"schema is a list", base + "swarms:\n  s:\n    result_schema: [a]\n", 4, "swarm s: result_schema: a JSON schema must be a mapping or a boolean, got a list"},
		{"bad input", base + "swarms:\n  s:\n    input: json\n", 4, `swarm s: input: want "text" or a JSON schema, got the string "json"`},
		{"bad max_turns", base + "agents:\n  a:\n    max_turns: -1\n", 4, "agent a: max_turns: want a positive number, got the number -1"},
		{"max_turns not a number", base + "swarms:\n  s:\n    max_turns: five\n", 4, `swarm s: max_turns: want a positive number, got the string "five"`},
		{"bad template", base + "agents:\n  a:\n    instructions: 'Hello {{.Input'\n", 4, "agent a: instructions are not a valid template"},
		{"bad model spec", base + "agents:\n  a:\n    model: gpt-4\n", 4, `agent a: model: "gpt-4" is not a model spec`},
		{"bad file model", base + "model: 'scripted:'\n", 2, `model: "scripted:" needs a script path`},
		{"description not a string", base + "agents:\n  a:\n    description: [x]\n", 4, "agent a: description: want a string, got a list"},
		{"tags not a list", base + "swarms:\n  s:\n    tags: planning\n", 4, `swarm s: tags: want a list of strings`},
		{"agents not a mapping", base + "agents: [a, b]\n", 2, "agents: want a mapping from agent name to definition, got a list"},
		{"merge keys", base + "agents:\n  a: &d {description: x}\n  b:\n    <<: *d\n", 5, "agent b: merge keys (<<) are not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, dir, "swarm.yaml", tc.yaml, 0o644)
			f, err := config.Load(path)
			if err == nil {
				t.Fatalf("no error; file %+v", f)
			}
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v is not a *config.Error", err, err)
			}
			if ce.Line != tc.line || ce.File != path {
				t.Errorf("error at %s:%d, want line %d: %v", ce.File, ce.Line, tc.line, err)
			}
			if !strings.Contains(ce.Error(), tc.msg) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", ce, tc.msg)
			}
			if !strings.HasPrefix(ce.Error(), path+":") {
				t.Errorf("error %q does not start with the file name", ce)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	write(t, dir, "swarm.yaml", `
version: 1
agents:
  calendar:
    description: Calendar
  allergens:
    description: Pollen
  weather:
    description: Weather forecasts
    handoffs:
      - allergens
      - calender
`, 0o644)
	_, err := config.Load("swarm.yaml")
	want := `swarm.yaml:11: agent weather: handoff to unknown agent "calender" (known: calendar, allergens, weather)`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n  %v\nwant\n  %s", err, want)
	}
	// Parse has no file name.
	_, err = config.Parse([]byte("version: 1\nagents:\n  a:\n    handoffs: [b]\n"), dir)
	if want := `line 4: agent a: handoff to unknown agent "b" (known: a)`; err == nil || err.Error() != want {
		t.Fatalf("error\n  %v\nwant\n  %s", err, want)
	}
	// A syntax error has the file name and the parser's message.
	write(t, dir, "bad.yaml", "version: 1\nagents: {a: b: c}\n", 0o644)
	_, err = config.Load("bad.yaml")
	if err == nil || !strings.HasPrefix(err.Error(), "bad.yaml:") || !strings.Contains(err.Error(), "invalid YAML") {
		t.Fatalf("syntax error: %v", err)
	}
	if _, err := config.Load("missing.yaml"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestAllMistakesReportedInLineOrder(t *testing.T) {
	_, err := config.Parse([]byte(`
version: 1
swarms:
  s:
    handoffs: [ghost]
    tools: [nope]
agents:
  a:
    max_turns: x
`), "")
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "line 5: swarm s: handoff to unknown agent \"ghost\"") ||
		!strings.HasPrefix(lines[1], "line 6: swarm s: unknown tool \"nope\"") || !strings.HasPrefix(lines[2], "line 9: agent a: max_turns") {
		t.Fatalf("errors:\n%v", err)
	}
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Line != 5 {
		t.Fatalf("first error %+v", ce)
	}
}

func TestAliasBombIsRefused(t *testing.T) {
	for _, kw := range []string{"x-", "allOf"} {
		y := "version: 1\nswarms:\n  s:\n    result_schema:\n      allOf:\n        - &a {type: string}\n"
		prev := "a"
		for _, n := range []string{"b", "c", "d", "e", "f", "g", "h"} {
			y += "        - &" + n + " {" + kw + ": [" + strings.Repeat("*"+prev+",", 9) + "*" + prev + "]}\n"
			prev = n
		}
		// Expanded, the document has 10^7 nodes: a parser that expanded
		// it would exhaust the test's time or memory before answering.
		_, err := config.Parse([]byte(y), "")
		if err == nil || !strings.Contains(err.Error(), "too large") {
			t.Fatalf("%s: err = %v", kw, err)
		}
	}
}

func TestStructuredInputIsValidated(t *testing.T) {
	f, err := config.Parse([]byte(`
version: 1
agents:
  guide: {description: Tour guide}
swarms:
  trip:
    instructions: Plan a trip to {{.Input.city}}.
    handoffs: [{agent: guide, description: Local tips}]
    input:
      type: object
      properties: {city: {type: string}}
      required: [city]
    result_schema: {type: object, properties: {days: {type: integer}}, required: [days]}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(scripted.Script{"trip": {scripted.Text(`{"days": 3}`)}})
	reqs := make(chan *model.Request, 10)
	rt := newRuntime(t, model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		reqs <- req
		return m.Generate(ctx, req)
	}))
	if err := f.Register(rt); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	_, err = rt.Start(ctx, "trip", json.RawMessage(`{"town": "Oslo"}`))
	if !errors.Is(err, swarm.ErrInvalidInput) || !strings.Contains(err.Error(), "city") {
		t.Fatalf("invalid input: %v", err)
	}
	if runs, _ := rt.List(ctx, store.Filter{}); len(runs) != 0 {
		t.Fatalf("an invalid input created %d runs", len(runs))
	}
	id, err := rt.Start(ctx, "trip", json.RawMessage(`{"city": "Oslo"}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Days int }
	if s.State != swarm.StateCompleted || json.Unmarshal(s.Result, &res) != nil || res.Days != 3 {
		t.Fatalf("status %+v", s)
	}
	req := swarmtest.Recv(t, ctx, reqs, "the model request")
	if req.System != "Plan a trip to Oslo." {
		t.Errorf("system prompt %q", req.System)
	}
	var handoff string
	for _, td := range req.Tools {
		if td.Name == "handoff_to_guide" {
			handoff = td.Description
		}
	}
	if handoff != "Local tips" {
		t.Errorf("handoff tool description %q in %+v", handoff, req.Tools)
	}
}

// TestAdaptiveLoopFromYAML runs a swarm whose loop is adaptive in its
// swarm.yaml: the run makes a task ledger and judges its rounds.
func TestAdaptiveLoopFromYAML(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "script.yaml", `
research:
  - text: '{"facts": {"given": ["x"]}, "plan": ["ask a"]}'
  - text: '{"is_request_satisfied": false, "is_in_loop": false, "is_progress_being_made": true, "next_handoff": "a", "instruction": "go"}'
  - text: '{"is_request_satisfied": true, "is_in_loop": false, "is_progress_being_made": true}'
  - text: the answer
a:
  - text: done
`, 0o644)
	path := write(t, dir, "swarm.yaml", `
version: 1
model: scripted:script.yaml
agents:
  a: {description: does it}
  critic: {description: judges}
swarms:
  research:
    handoffs: [a, critic]
    loop: {strategy: adaptive, stall_threshold: 2, max_replans: 1, max_rounds: 5, on_exhausted: fail}
`, 0o644)
	_, rt := loadFile(t, path)
	ctx := ctxT(t)
	id, err := rt.Start(ctx, "research", []byte(`"task"`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != swarm.StateCompleted || string(s.Result) != `"the answer"` {
		t.Fatalf("state %s (%s), result %s", s.State, s.Reason, s.Result)
	}
	evs, err := rt.History(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ledgers, progress int
	for _, ev := range evs {
		switch ev.Type {
		case adaptive.EventLedger:
			ledgers++
		case adaptive.EventProgress:
			progress++
		}
	}
	if ledgers != 1 || progress != 2 {
		t.Errorf("%d ledgers and %d progress records, want 1 and 2", ledgers, progress)
	}
}

// TestBuiltinsOffFromYAML: builtins: false offers the orchestrator no
// built-in tools.
func TestBuiltinsOffFromYAML(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want []string
	}{
		{"", []string{"pause", "fail"}},
		{"    builtins: true\n", []string{"pause", "fail"}},
		{"    builtins: false\n", nil},
	} {
		f, err := config.Parse([]byte("version: 1\nswarms:\n  s:\n    instructions: hi\n"+c.yaml), "")
		if err != nil {
			t.Fatal(err)
		}
		var tools []string
		rt := newRuntime(t, model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
			for _, d := range req.Tools {
				tools = append(tools, d.Name)
			}
			return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "ok"}}, nil
		}))
		if err := f.Register(rt); err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		id, err := rt.Start(ctx, "s", []byte(`"x"`))
		if err != nil {
			t.Fatal(err)
		}
		if s, err := rt.Wait(ctx, id); err != nil || s.State != swarm.StateCompleted {
			t.Fatalf("%q: %v %v", c.yaml, s, err)
		}
		if !slices.Equal(tools, c.want) {
			t.Errorf("%q: tools %v, want %v", c.yaml, tools, c.want)
		}
	}
}
