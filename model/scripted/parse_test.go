package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
)

const example = `planner:                      # agent or swarm id; its responses are consumed in order
  - tool_calls:
      - {name: handoff_to_weather, arguments: {request: "weekend forecast"}}
  - text: '{"activity": "hiking"}'
    usage: {input_tokens: 120, output_tokens: 9}
weather:
  - text: "Sunny, 22C"
    delay: 150ms
  - error: rate_limited        # also server_error, timeout
`

func TestParseExample(t *testing.T) {
	got, err := scripted.Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	want := scripted.Script{
		"planner": {
			{ToolCalls: []scripted.ToolCall{{Name: "handoff_to_weather", Arguments: json.RawMessage(`{"request":"weekend forecast"}`)}}},
			{Text: `{"activity": "hiking"}`, Usage: model.Usage{InputTokens: 120, OutputTokens: 9}},
		},
		"weather": {
			{Text: "Sunny, 22C", Delay: 150 * time.Millisecond},
			{Error: "rate_limited"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %#v\nwant %#v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}

	m := scripted.New(got, scripted.WithoutDelays())
	resp := generate(t, m, "r", "planner", 0)
	if tc := resp.Message.ToolCalls; len(tc) != 1 || tc[0].ID != "call_planner_0_0" || tc[0].Name != "handoff_to_weather" || string(tc[0].Arguments) != `{"request":"weekend forecast"}` {
		t.Errorf("planner/0 = %s", show(resp.Message))
	}
	resp = generate(t, m, "r", "planner", 1)
	if resp.Message.Content != `{"activity": "hiking"}` || resp.Usage != (model.Usage{InputTokens: 120, OutputTokens: 9, Calls: 1}) {
		t.Errorf("planner/1 = %s", show(resp))
	}
	if got := generate(t, m, "r", "weather", 0).Message.Content; got != "Sunny, 22C" {
		t.Errorf("weather/0 = %q", got)
	}
	_, err = m.Generate(context.Background(), &model.Request{RunID: "r", Agent: "weather", Call: 1})
	if model.KindOf(err) != model.KindRateLimited || !model.KindOf(err).Retryable() {
		t.Errorf("weather/1: err = %v", err)
	}
	if got := m.Unconsumed("r"); len(got) != 0 {
		t.Errorf("Unconsumed = %v", got)
	}
}

func TestParseFeatures(t *testing.T) {
	src := `
a:
  - text: 42
  - text: ""
  - tool_calls:
      - id: my-id
        name: search
        arguments:
          z: 1
          a: [true, null, 1.5, "x<y>&z", {nested: {deep: -3}}]
          "3": quoted key
          when: 2024-01-02
      - name: verbatim
        arguments: '{"not": "reparsed"'
      - name: nullargs
        arguments:
      - name: noargs
      - name: list
        arguments: [1, 2]
      - name: scalar
        arguments: 7
    text: calling tools
  - &shared
    text: shared step
    delay: 2s
    usage: {cached_input_tokens: 5, reasoning_tokens: 0x10}
  - *shared
  - error: context_too_long
b: []
`
	s, err := scripted.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a := s["a"]
	if len(a) != 6 || len(s["b"]) != 0 {
		t.Fatalf("steps: %#v", s)
	}
	if a[0].Text != "42" || a[1].Text != "" {
		t.Errorf("texts %q %q", a[0].Text, a[1].Text)
	}
	calls := a[2].ToolCalls
	if a[2].Text != "calling tools" || len(calls) != 6 || calls[0].ID != "my-id" {
		t.Fatalf("tool step: %#v", a[2])
	}
	for i, want := range []string{
		`{"z":1,"a":[true,null,1.5,"x<y>&z",{"nested":{"deep":-3}}],"3":"quoted key","when":"2024-01-02"}`,
		`{"not": "reparsed"`,
		`{}`,
		``,
		`[1,2]`,
		`7`,
	} {
		got := ""
		if calls[i].Arguments != nil {
			got = string(calls[i].Arguments.(json.RawMessage))
		}
		if got != want {
			t.Errorf("call %d arguments = %s, want %s", i, got, want)
		}
	}
	want := scripted.Step{Text: "shared step", Delay: 2 * time.Second, Usage: model.Usage{CachedInputTokens: 5, ReasoningTokens: 16}}
	if !reflect.DeepEqual(a[3], want) || !reflect.DeepEqual(a[4], want) {
		t.Errorf("anchored steps: %#v %#v", a[3], a[4])
	}
	if a[5].Error != "context_too_long" {
		t.Errorf("error step %#v", a[5])
	}
	// A tool call without arguments gets {} when served.
	resp := generate(t, scripted.New(s), "r", "a", 2)
	if got := string(resp.Message.ToolCalls[3].Arguments); got != "{}" {
		t.Errorf("served noargs arguments = %s", got)
	}
}

// TestResponseIDAndModel: a step reports the response id and model it
// scripts, as a provider reports them, in Go and in a script file.
func TestResponseIDAndModel(t *testing.T) {
	s, err := scripted.Parse([]byte("a:\n  - text: hi\n    response_id: resp_7\n    model: gpt-4o-2024-08-06\n  - text: plain\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s["a"][0].ResponseID != "resp_7" || s["a"][0].Model != "gpt-4o-2024-08-06" {
		t.Fatalf("parsed %#v", s["a"][0])
	}
	m := scripted.New(s)
	if r := generate(t, m, "r", "a", 0); r.ID != "resp_7" || r.Model != "gpt-4o-2024-08-06" {
		t.Errorf("response id %q, model %q", r.ID, r.Model)
	}
	if r := generate(t, m, "r", "a", 1); r.ID != "" || r.Model != "" {
		t.Errorf("an unscripted id %q or model %q", r.ID, r.Model)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		line int
		want string
	}{
		{"unknown step field", "a:\n  - text: hi\n    colour: red\n", 3, `agent "a" step 0: unknown field "colour"`},
		{"unknown tool call field", "a:\n  - tool_calls:\n      - name: x\n        args: {}\n", 4, `tool call 0: unknown field "args"`},
		{"unknown usage field", "a:\n  - text: x\n    usage:\n      tokens: 3\n", 4, `usage: unknown field "tokens"`},
		{"empty step", "a:\n  - text: ok\n  - delay: 1s\n", 3, `agent "a" step 1: a step needs text, tool_calls or error`},
		{"empty mapping step", "a:\n  - {}\n", 2, "a step needs text, tool_calls or error"},
		{"unknown error kind", "a:\n  - text: ok\nb:\n  - error: teapot\n", 4, `agent "b" step 0: unknown error kind "teapot"`},
		{"numeric error kind", "a:\n  - error: 429\n", 2, `unknown error kind "429"`},
		{"error and text", "a:\n  - error: timeout\n    text: x\n", 2, "an error step cannot also have text or tool_calls"},
		{"invalid delay", "a:\n  - text: x\n    delay: soon\n", 3, `invalid delay "soon"`},
		{"delay without unit", "a:\n  - text: x\n    delay: 150\n", 3, `invalid delay "150"`},
		{"negative delay", "a:\n  - text: x\n    delay: -1s\n", 3, `invalid delay "-1s": negative`},
		{"null delay", "a:\n  - text: x\n    delay:\n", 3, "delay: want a string, got nothing (null)"},
		{"agent is a mapping", "a:\n  - text: x\nb:\n  text: y\n", 4, `agent "b": want a list of steps, got a mapping`},
		{"agent is a string", "a: hello\n", 1, `agent "a": want a list of steps, got the string "hello"`},
		{"agent is null", "a:\n  - text: x\nb:\n", 3, `agent "b": want a list of steps, got nothing (null)`},
		{"step is a string", "a:\n  - hello\n", 2, `agent "a" step 0: want a mapping with text, tool_calls or error, got the string "hello"`},
		{"duplicate agent", "a:\n  - text: x\na:\n  - text: y\n", 3, `agent "a" is already defined at line 1`},
		{"duplicate field", "a:\n  - text: x\n    text: y\n", 3, `field "text" is given twice`},
		{"non-string argument key", "a:\n  - tool_calls:\n      - name: t\n        arguments:\n          ok: 1\n          1: one\n", 6, "arguments: map key the number 1 is not a string"},
		{"nested non-string key", "a:\n  - tool_calls:\n      - name: t\n        arguments: {x: {true: 1}}\n", 4, "map key the boolean true is not a string"},
		{"complex argument key", "a:\n  - tool_calls:\n      - name: t\n        arguments:\n          ? [1, 2]\n          : x\n", 5, "map key a list is not a string"},
		{"duplicate argument key", "a:\n  - tool_calls:\n      - name: t\n        arguments:\n          k: 1\n          k: 2\n", 6, `arguments: key "k" is given twice`},
		{"merge key in arguments", "a:\n  - tool_calls:\n      - name: t\n        arguments:\n          <<: {x: 1}\n", 5, "merge keys"},
		{"infinite number", "a:\n  - tool_calls:\n      - name: t\n        arguments: {x: .inf}\n", 4, ".inf cannot be represented in JSON"},
		{"tool call without name", "a:\n  - tool_calls:\n      - arguments: {}\n", 3, "tool call 0 has no name"},
		{"empty tool calls", "a:\n  - tool_calls: []\n", 2, "tool_calls is empty"},
		{"tool calls not a list", "a:\n  - tool_calls: {name: x}\n", 2, "tool_calls: want a list, got a mapping"},
		{"tool call not a mapping", "a:\n  - tool_calls:\n      - search\n", 3, `tool call 0: want a mapping with name and arguments, got the string "search"`},
		{"negative usage", "a:\n  - text: x\n    usage: {input_tokens: -3}\n", 3, "usage: input_tokens: want a non-negative integer, got the number -3"},
		{"fractional usage", "a:\n  - text: x\n    usage:\n      output_tokens: 1.5\n", 4, "want a non-negative integer, got the number 1.5"},
		{"usage not a mapping", "a:\n  - text: x\n    usage: 12\n", 3, "usage: want a mapping, got the number 12"},
		{"text is a list", "a:\n  - text: [x]\n", 2, "text: want a string, got a list"},
		{"top level list", "- text: x\n", 1, "want a mapping from agent id to a list of steps, got a list"},
		{"top level string", "hello world\n", 1, `got the string "hello world"`},
		{"no agents", "{}\n", 1, "script is empty: it has no agents"},
		{"null agent id", "~:\n  - text: x\n", 1, "want an agent id, got nothing (null)"},
		{"two documents", "a:\n  - text: x\n---\nb:\n  - text: y\n", 3, "a script holds a single YAML document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := scripted.Parse([]byte(c.src))
			if err == nil {
				t.Fatalf("Parse succeeded: %#v", s)
			}
			var pe *scripted.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %q is not a *ParseError", err)
			}
			if pe.Line != c.line {
				t.Errorf("line = %d, want %d (%v)", pe.Line, c.line, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
			if prefix := "line " + strconv.Itoa(c.line) + ": "; !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
		})
	}
}

func TestParseNotYAML(t *testing.T) {
	for name, src := range map[string]string{
		"empty":        "",
		"only comment": "# nothing here\n",
		"bad indent":   "a:\n  - text: x\n - text: y\n",
		"tab":          "a:\n\t- text: x\n",
		"unclosed":     "a: [\n",
		"binary":       "\x00\x01\x02\xff",
	} {
		if _, err := scripted.Parse([]byte(src)); err == nil {
			t.Errorf("%s: Parse succeeded", name)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(good, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := scripted.Load(good, scripted.WithoutDelays())
	if err != nil {
		t.Fatal(err)
	}
	if got := generate(t, m, "r", "weather", 0).Message.Content; got != "Sunny, 22C" {
		t.Errorf("content = %q", got)
	}

	missing := filepath.Join(dir, "missing.yaml")
	_, err = scripted.Load(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: err = %v", err)
	}

	notYAML := filepath.Join(dir, "notes.txt")
	os.WriteFile(notYAML, []byte("a: [unclosed\n"), 0o644)
	_, err = scripted.Load(notYAML)
	if err == nil || !strings.Contains(err.Error(), notYAML) || !strings.Contains(err.Error(), "not valid YAML") {
		t.Errorf("not YAML: err = %v", err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("a:\n  - error: teapot\n"), 0o644)
	_, err = scripted.Load(bad)
	var pe *scripted.ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || !strings.Contains(err.Error(), bad+": line 2: ") {
		t.Errorf("bad script: err = %v", err)
	}

	if _, err := scripted.Load(""); err == nil {
		t.Error("Load(\"\") succeeded")
	}
}

func TestRegistered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(path, []byte(example), 0o644)
	m, err := model.Open("scripted:" + path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*scripted.Model); !ok {
		t.Errorf("model.Open returned %T", m)
	}
	_, err = model.Open("scripted:")
	if err == nil || !strings.Contains(err.Error(), "missing script path") {
		t.Errorf("empty path: err = %v", err)
	}
	_, err = model.Open("scripted:" + path + ".missing")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
}
