package eval

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStatusScore(t *testing.T) {
	tests := []struct {
		want, got, reason string
		scored, pass      bool
		expl              string
	}{
		{"", "completed", "", true, true, "status completed"},
		{"", "failed", "tool crashed", true, false, "status failed, want completed: tool crashed"},
		{"failed", "failed", "", true, true, ""},
		{"paused", "completed", "", true, false, "status completed, want paused"},
		{"completed", "", "", true, false, "status (none), want completed"},
		{"any", "failed", "", false, false, ""},
	}
	for _, tt := range tests {
		sc := statusScore(tt.want, Observed{Status: tt.got, Reason: tt.reason})
		if (sc != nil) != tt.scored {
			t.Fatalf("%q/%q: scored %v", tt.want, tt.got, sc)
		}
		if sc == nil {
			continue
		}
		if sc.Pass != tt.pass || sc.Value != map[bool]float64{true: 1}[tt.pass] || !strings.Contains(sc.Explanation, tt.expl) {
			t.Errorf("%q/%q: %+v", tt.want, tt.got, *sc)
		}
	}
}

func TestBoundsScore(t *testing.T) {
	o := Observed{Turns: 3, ModelCalls: 4, Tokens: 1200, Cost: 0.02, Duration: Duration(2 * time.Second)}
	tests := []struct {
		name  string
		b     Bounds
		value float64
		expl  []string
	}{
		{"all within", Bounds{Turns: 3, ModelCalls: 4, Tokens: 1200, Cost: 0.02, Duration: Duration(2 * time.Second)}, 1,
			[]string{"turns 3 within 3", "model calls 4 within 4", "tokens 1200 within 1200", "cost $0.0200 within $0.0200", "duration 2s within 2s"}},
		{"turns over", Bounds{Turns: 2}, 0, []string{"turns 3 over the bound 2"}},
		{"model calls over", Bounds{ModelCalls: 3, Tokens: 5000}, 0.5, []string{"model calls 4 over the bound 3"}},
		{"tokens over", Bounds{Tokens: 1199}, 0, []string{"tokens 1200 over the bound 1199"}},
		{"cost over", Bounds{Cost: 0.01}, 0, []string{"cost $0.0200 over the bound $0.0100"}},
		{"duration over", Bounds{Duration: Duration(time.Second), Turns: 5, Tokens: 2000}, 2.0 / 3, []string{"duration 2s over the bound 1s"}},
	}
	for _, tt := range tests {
		sc := boundsScore(tt.b, o)
		if sc.Value != tt.value || sc.Pass != (tt.value == 1) || sc.Name != "bounds" {
			t.Errorf("%s: value %v pass %v: %s", tt.name, sc.Value, sc.Pass, sc.Explanation)
		}
		for _, e := range tt.expl {
			if !strings.Contains(sc.Explanation, e) {
				t.Errorf("%s: explanation %q lacks %q", tt.name, sc.Explanation, e)
			}
		}
	}
}

// scorerFunc is a custom scorer of a function.
type scorerFunc struct {
	name string
	f    func(c Case, o Observed) ([]Score, error)
}

func (s scorerFunc) Name() string { return s.name }
func (s scorerFunc) Score(_ context.Context, _ Judge, c Case, o Observed) ([]Score, error) {
	return s.f(c, o)
}

func TestScoreCaseEveryScorer(t *testing.T) {
	c := Case{ID: "c1", Expect: Expect{
		Output:     &Output{Contains: []string{"done"}, Regex: "^done"},
		Trajectory: &Trajectory{Calls: []Call{{Name: "search"}}},
		Forbid:     []Call{{Name: "delete"}},
		Bounds:     &Bounds{Turns: 5},
		Rubrics:    []Rubric{{Name: "helpful", Criteria: "helps"}},
		Scorers:    []string{"short"},
	}}
	custom := map[string]Scorer{"short": scorerFunc{"short", func(_ Case, o Observed) ([]Score, error) {
		return []Score{verdict("", ratio(1, len(o.Output)), 0.1, "short enough")}, nil
	}}}
	j := &fakeJudge{next: func(string) string { return answer(1, "good") }}
	scores, err := scoreCase(t.Context(), j, &Set{Judge: "grader"}, c, Observed{Status: "completed", Output: "done", Calls: obs("search")}, custom)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sc := range scores {
		names = append(names, sc.Name)
		if !sc.Pass || sc.Error != "" {
			t.Errorf("%s failed: %+v", sc.Name, sc)
		}
	}
	if got := strings.Join(names, " "); got != "status output.contains output.regex trajectory forbid bounds helpful short" {
		t.Fatalf("scores %s", got)
	}
}

func TestScoreCaseNothingExpected(t *testing.T) {
	scores, err := scoreCase(t.Context(), nil, nil, Case{ID: "c"}, Observed{Status: "completed"}, nil)
	if err != nil || len(scores) != 1 || scores[0].Name != "status" || !scores[0].Pass {
		t.Fatalf("scores %+v error %v", scores, err)
	}
}

func TestCustomScorerFailures(t *testing.T) {
	good := scorerFunc{"good", func(Case, Observed) ([]Score, error) { return []Score{verdict("good", 1, 1, "ok")}, nil }}
	tests := []struct {
		name   string
		scorer Scorer
		want   string
	}{
		{"unknown", nil, `unknown scorer "x" (registered: good)`},
		{"error", scorerFunc{"x", func(Case, Observed) ([]Score, error) { return nil, errors.New("no database") }},
			`scorer "x": no database`},
		{"panic", scorerFunc{"x", func(Case, Observed) ([]Score, error) { panic("nil map") }}, `scorer "x" panicked: nil map`},
		{"score with an error", scorerFunc{"x", func(Case, Observed) ([]Score, error) {
			return []Score{{Name: "x", Value: 1, Threshold: 1, Pass: true, Error: "service unreachable"}}, nil
		}}, "service unreachable"},
		{"value out of range", scorerFunc{"x", func(Case, Observed) ([]Score, error) { return []Score{{Name: "x", Value: 2}}, nil }},
			`score "x" has value 2, want 0 to 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			custom := map[string]Scorer{"good": good}
			if tt.scorer != nil {
				custom["x"] = tt.scorer
			}
			c := Case{ID: "c7", Expect: Expect{Status: "any", Scorers: []string{"x", "good"}}}
			scores, err := scoreCase(t.Context(), nil, nil, c, Observed{}, custom)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `case "c7"`) {
				t.Fatalf("error %v, want one saying %s", err, tt.want)
			}
			if len(scores) != 2 || scores[0].Name != "x" || scores[0].Pass || !strings.Contains(scores[0].Error, tt.want) {
				t.Fatalf("scores %+v", scores)
			}
			if !scores[1].Pass { // the other scorers still score
				t.Fatalf("good scorer: %+v", scores[1])
			}
		})
	}
	_, err := scoreCase(t.Context(), nil, nil, Case{ID: "c", Expect: Expect{Scorers: []string{"x"}}}, Observed{}, nil)
	if err == nil || !strings.Contains(err.Error(), "no custom scorer is registered") {
		t.Fatalf("error %v", err)
	}
}

func TestValidateExpect(t *testing.T) {
	tests := []struct {
		name   string
		expect Expect
		want   []string // each error says it (with the case's id); none: valid
	}{
		{"empty", Expect{}, nil},
		{"everything valid", Expect{Status: "failed",
			Output: &Output{Exact: ptr("x"), Contains: []string{"x"}, Regex: `^\d+$`, Fields: map[string]any{"a.b": 1},
				Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","x-note":"ok"}}}`), Similar: &Similar{Reference: "x", Min: 1}},
			Trajectory: &Trajectory{Match: "any_order", Calls: []Call{{Name: "a", ArgsMatch: "exact", Args: map[string]any{"id": 1}, Ignore: []string{"id"}}}},
			Forbid:     []Call{{Name: "b"}},
			Bounds:     &Bounds{Turns: 1},
			Rubrics:    []Rubric{{Name: "r", Reference: "x", Samples: 10, Threshold: 1}},
			Scorers:    []string{"s"}}, nil},
		{"exact trajectory of no calls", Expect{Trajectory: &Trajectory{Match: "exact"}}, nil},
		{"status", Expect{Status: "done"}, []string{`expect.status: unknown status "done"`}},
		{"empty output", Expect{Output: &Output{}}, []string{"expect.output: no check given"}},
		{"bad regex", Expect{Output: &Output{Regex: "a(b"}}, []string{"expect.output.regex: error parsing regexp"}},
		{"Perl regex", Expect{Output: &Output{Regex: `(?=x)`}}, []string{"expect.output.regex"}},
		{"empty contains", Expect{Output: &Output{Contains: []string{"a", ""}}}, []string{"expect.output.contains[1]: empty text"}},
		{"field path", Expect{Output: &Output{Fields: map[string]any{"a..b": 1}}}, []string{`expect.output.fields: path "a..b" has an empty segment`}},
		{"field value", Expect{Output: &Output{Fields: map[string]any{"a": func() {}}}}, []string{"expect.output.fields.a: value is not JSON"}},
		{"schema not JSON", Expect{Output: &Output{Schema: json.RawMessage(`{"type":`)}}, []string{"expect.output.schema: schema is not a JSON schema"}},
		{"schema keyword typo", Expect{Output: &Output{Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","minLenght":3}}}`)}},
			[]string{`expect.output.schema: schema: unknown keyword "minLenght"`}},
		{"schema bad type", Expect{Output: &Output{Schema: json.RawMessage(`{"items":{"type":["string","text"]}}`)}},
			[]string{`expect.output.schema: schema: unknown type "text"`}},
		{"schema bad ref", Expect{Output: &Output{Schema: json.RawMessage(`{"$ref":"#/$defs/missing"}`)}}, []string{"expect.output.schema: schema does not compile"}},
		{"similar", Expect{Output: &Output{Similar: &Similar{Min: 1.5}}},
			[]string{"expect.output.similar.reference: empty reference", "expect.output.similar.min: 1.5 is out of range"}},
		{"match", Expect{Trajectory: &Trajectory{Match: "fuzzy", Calls: []Call{{Name: "a"}}}}, []string{`expect.trajectory.match: unknown match "fuzzy"`}},
		{"in_order of nothing", Expect{Trajectory: &Trajectory{}}, []string{"expect.trajectory.calls: no calls"}},
		{"call", Expect{Trajectory: &Trajectory{Calls: []Call{{Name: "a"}, {ArgsMatch: "loose", Ignore: []string{"x.", ""}}}}},
			[]string{"expect.trajectory.calls[1].name: empty name", `expect.trajectory.calls[1].args_match: unknown args_match "loose"`,
				`expect.trajectory.calls[1].ignore[0]: path "x."`, "expect.trajectory.calls[1].ignore[1]"}},
		{"forbid", Expect{Forbid: []Call{{Name: "a"}, {Name: " "}}}, []string{"expect.forbid[1].name: empty name"}},
		{"negative bounds", Expect{Bounds: &Bounds{Turns: -1, ModelCalls: -1, Tokens: -1, Cost: -1, Duration: -1}},
			[]string{"expect.bounds.turns", "expect.bounds.model_calls", "expect.bounds.tokens", "expect.bounds.cost", "expect.bounds.duration"}},
		{"no bound", Expect{Bounds: &Bounds{}}, []string{"expect.bounds: no bound given"}},
		{"rubric", Expect{Rubrics: []Rubric{{Samples: 11, Threshold: -0.1}}},
			[]string{"expect.rubrics[0].name: empty name", "expect.rubrics[0]: neither criteria nor reference",
				"expect.rubrics[0].samples: 11 is out of range", "expect.rubrics[0].threshold: -0.1 is out of range"}},
		{"rubric threshold", Expect{Rubrics: []Rubric{{Name: "r", Criteria: "c", Threshold: 2}}}, []string{"expect.rubrics[0].threshold: 2 is out of range"}},
		{"negative samples", Expect{Rubrics: []Rubric{{Name: "r", Criteria: "c", Samples: -1}}}, []string{"expect.rubrics[0].samples"}},
		{"rubric names", Expect{Rubrics: []Rubric{{Name: "r", Criteria: "c"}, {Name: "r", Criteria: "c"}, {Name: "bounds", Criteria: "c"}}},
			[]string{`expect.rubrics[1].name: "r" is already the name of expect.rubrics[0]`, `expect.rubrics[2].name: "bounds" is already the name of a built-in score`}},
		{"rubric name with a slash", Expect{Rubrics: []Rubric{{Name: "a/b", Criteria: "c"}}}, []string{`expect.rubrics[0].name: "a/b" has a "/"`}},
		{"rubric name too long", Expect{Rubrics: []Rubric{{Name: strings.Repeat("r", 101), Criteria: "c"}}}, []string{"expect.rubrics[0].name: 101 bytes, at most 100"}},
		{"scorers", Expect{Scorers: []string{"a", "", "a"}}, []string{"expect.scorers[1]: empty scorer name", `expect.scorers[2]: scorer "a" is named twice`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateExpect(Case{ID: "case-9", Expect: tt.expect})
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			msgs := strings.Split(err.Error(), "\n")
			if len(msgs) != len(tt.want) {
				t.Errorf("%d errors, want %d:\n%v", len(msgs), len(tt.want), err)
			}
			for _, w := range tt.want {
				found := false
				for _, m := range msgs {
					found = found || (strings.HasPrefix(m, `case "case-9": `) && strings.Contains(m, w))
				}
				if !found {
					t.Errorf("no error says %q:\n%v", w, err)
				}
			}
		})
	}
}

// A set built in Go may skip validateExpect: what it would refuse is
// then the case's error when scored, never a pass.
func TestScoreCaseInvalidExpectation(t *testing.T) {
	tests := []struct {
		name   string
		expect Expect
		score  string
	}{
		{"regex", Expect{Output: &Output{Regex: "a("}}, "output.regex"},
		{"schema", Expect{Output: &Output{Schema: json.RawMessage(`{"type":"text"}`)}}, "output.schema"},
		{"fields", Expect{Output: &Output{Fields: map[string]any{"a": make(chan int)}}}, "output.fields"},
		{"trajectory args", Expect{Trajectory: &Trajectory{Calls: []Call{{Name: "a", Args: map[string]any{"x": func() {}}}}}}, "trajectory"},
		{"forbidden args", Expect{Forbid: []Call{{Name: "a", Args: map[string]any{"x": func() {}}}}}, "forbid"},
		{"rubric name", Expect{Rubrics: []Rubric{{Name: "a/b", Criteria: "c"}}}, "a/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Case{ID: "c", Expect: tt.expect}
			c.Expect.Status = "any"
			if validateExpect(c) == nil {
				t.Fatal("validateExpect accepts it")
			}
			j := &fakeJudge{next: func(string) string { return answer(1, "good") }}
			scores, err := scoreCase(t.Context(), j, &Set{Judge: "grader"}, c, Observed{Output: `{"a":1}`, Calls: obs("a {}")}, nil)
			if err == nil || len(scores) != 1 || scores[0].Name != tt.score || scores[0].Error == "" || scores[0].Pass {
				t.Fatalf("scores %+v error %v", scores, err)
			}
		})
	}
}
