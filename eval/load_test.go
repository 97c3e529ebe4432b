package eval_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm/eval"
)

const goodYAML = `name: support
swarm: support
judge: judge
threshold: 0.8
cases:
  - id: refund
    input: I want my money back
    tags: [billing]
    values: {tier: gold}
    expect:
      output:
        contains: [refund]
        schema: {type: string}
      trajectory:
        match: in_order
        calls:
          - name: lookup_order
            args: {id: "42"}
            ignore: [request_id]
      bounds:
        turns: 4
        duration: 30s
      rubrics:
        - name: polite
          criteria: The answer is polite.
  - id: chat
    turns: [hello, thanks]
`

func TestParse(t *testing.T) {
	s, err := eval.Parse([]byte(goodYAML), "sets/support.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cases[0]
	if s.Name != "support" || s.Threshold != 0.8 || len(s.Cases) != 2 || c.Values["tier"] != "gold" ||
		c.Expect.Bounds.Duration != eval.Duration(30*time.Second) || string(c.Expect.Output.Schema) != `{"type":"string"}` ||
		c.Expect.Trajectory.Calls[0].Args["id"] != "42" || s.Cases[1].Turns[1] != "thanks" {
		t.Errorf("parsed %+v", s)
	}
	// The same set in JSON, and the set written back as YAML, read the same.
	raw, err := eval.MarshalYAML(s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := eval.Parse(raw, "")
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if !reflect.DeepEqual(again, s) {
		t.Errorf("written and read again:\n%s\n%+v\nwant %+v", raw, again, s)
	}
	if !strings.Contains(string(raw), "duration: 30s") || !strings.Contains(string(raw), "- id: refund") {
		t.Errorf("written:\n%s", raw)
	}
	// A name comes from the file when the set has none.
	s, err = eval.Parse([]byte("swarm: x\ncases: [{id: a, input: hi}]\n"), "dir/smoke.json")
	if err != nil || s.Name != "smoke" {
		t.Errorf("name %q, %v", s.Name, err)
	}
}

func TestLoadJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "set.json")
	data := `{
  "name": "x",
  "swarm": "support",
  "cases": [
    {"id": "a", "input": "hi", "expect": {"bounds": {"duration": "2m"}}},
    {"id": "b", "input": "hi", "expect": {"bounds": {"turns": "four"}}}
  ]
}`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := eval.Load(path)
	var e *eval.Error
	if !errors.As(err, &e) || e.File != path || e.Line != 6 || !strings.Contains(err.Error(), `cases[1].expect.bounds.turns: want an integer, got the string "four"`) {
		t.Errorf("got %v", err)
	}
	if _, err := eval.Load(filepath.Join(t.TempDir(), "none.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// Each mistake is reported with the file and the line it is on.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"empty", "", []string{"s.yaml: file is empty"}},
		{"syntax", "swarm: x\ncases: [\n", []string{"s.yaml:2: did not find expected node content"}},
		{"not a mapping", "- a\n", []string{"s.yaml:1: want a mapping with swarm: and cases:, got a list"}},
		{"unknown field", "swarm: x\ncases:\n  - id: a\n    input: hi\n    expct: {}\n", []string{`s.yaml:5: cases[0]: unknown field "expct" (known: expect, from, id, input, mail, scenario, tags, turns, values)`}},
		{"unknown top field", "swarm: x\nkases: []\n", []string{`s.yaml:2: the set: unknown field "kases"`}},
		{"duplicate ids", "swarm: x\ncases:\n  - id: a\n    input: hi\n  - id: a\n    input: ho\n", []string{"s.yaml:5: case a: the ID is already used by the case at line 3"}},
		{"no input", "swarm: x\ncases:\n  - id: a\n", []string{"s.yaml:3: case a: needs an input, turns, mail or a scenario"}},
		{"two inputs", "swarm: x\ncases:\n  - id: a\n    input: hi\n    turns: [ho]\n", []string{"s.yaml:3: case a: has more than one of input, turns, mail and scenario"}},
		{"bad id", "swarm: x\ncases:\n  - id: a/b\n    input: hi\n", []string{`s.yaml:3: case a/b: id "a/b" contains spaces, control characters or '/'`}},
		{"no id", "swarm: x\ncases:\n  - input: hi\n", []string{"s.yaml:3: case #1: needs an id"}},
		{"no swarm", "cases:\n  - id: a\n    input: hi\n", []string{"s.yaml: the set needs swarm:"}},
		{"no cases", "swarm: x\n", []string{"s.yaml: the set has no cases"}},
		{"bad duration", "swarm: x\ncases:\n  - id: a\n    input: hi\n    expect:\n      bounds: {duration: soon}\n", []string{`s.yaml:6: duration "soon": not a duration`}},
		{"threshold", "swarm: x\nthreshold: 2\ncases: [{id: a, input: hi}]\n", []string{"s.yaml:2: threshold must be between 0 and 1, got 2"}},
		{"scenario without simulator", "swarm: x\ncases:\n  - id: a\n    scenario: {goal: refund}\n", []string{"s.yaml:3: case a: scenario needs a simulator agent"}},
		{"rubric without judge", "swarm: x\ncases:\n  - id: a\n    input: hi\n    expect:\n      rubrics: [{name: polite, criteria: be polite}]\n", []string{"s.yaml:3: case a: rubric polite needs a judge agent"}},
		{"scenario turns", "swarm: x\nsimulator: u\ncases:\n  - id: a\n    scenario: {goal: g, max_turns: 500}\n", []string{"s.yaml:4: case a: scenario max_turns must be between 0 and 50, got 500"}},
		{"bad regex", "swarm: x\ncases:\n  - id: a\n    input: hi\n    expect:\n      output: {regex: '('}\n", []string{"s.yaml:5: case \"a\": expect.output.regex: error parsing regexp"}},
		{"several", "swarm: x\ncases:\n  - id: a\n  - id: b\n", []string{"s.yaml:3: case a: needs an input", "s.yaml:4: case b: needs an input"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eval.Parse([]byte(tc.yaml), "s.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("errors:\n%v\nwant %d", err, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("error %d: %q, want it to start with %q", i, lines[i], w)
				}
			}
			var e *eval.Error
			if !errors.As(err, &e) || e.File != "s.yaml" {
				t.Errorf("not an *eval.Error naming the file: %#v", err)
			}
		})
	}
}

func TestDurationJSON(t *testing.T) {
	d := eval.Duration(90 * time.Second)
	b, err := d.MarshalJSON()
	if err != nil || string(b) != `"1m30s"` {
		t.Errorf("marshal: %s %v", b, err)
	}
	var back eval.Duration
	if err := back.UnmarshalJSON(b); err != nil || back != d {
		t.Errorf("unmarshal: %v %v", back, err)
	}
	for _, bad := range []string{`"-1s"`, `"soon"`, `30`} {
		if err := back.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
