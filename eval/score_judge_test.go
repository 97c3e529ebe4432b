package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/model"
)

// fakeJudge answers from a script: answers[key] when the key is there,
// else next(key) if set, else an error. It records what it was asked.
type fakeJudge struct {
	answers map[string]string
	next    func(key string) string
	keys    []string
	agents  []string
	msgs    [][]model.Message
	given   map[string]string // the answers by key
}

func (f *fakeJudge) Ask(ctx context.Context, key, agent string, msgs []model.Message) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if slices.Contains(f.keys, key) {
		return "", fmt.Errorf("key %q asked twice", key)
	}
	f.keys = append(f.keys, key)
	f.agents = append(f.agents, agent)
	f.msgs = append(f.msgs, slices.Clone(msgs))
	a, ok := f.answers[key]
	if !ok && f.next == nil {
		return "", fmt.Errorf("no answer for %q", key)
	}
	if !ok {
		a = f.next(key)
	}
	if f.given == nil {
		f.given = map[string]string{}
	}
	f.given[key] = a
	return a, nil
}

func answer(score float64, label string) string {
	return fmt.Sprintf(`{"score": %v, "label": %q, "explanation": "scored %v"}`, score, label, score)
}

var judgeCase = Case{
	ID:     "refund",
	Input:  "I want my money back for order 42",
	Values: map[string]any{"tier": "gold"},
	Expect: Expect{Rubrics: []Rubric{{Name: "polite", Criteria: "The answer is polite and offers a refund.",
		Reference: "We are sorry; your refund for order 42 is on its way."}}},
}

var judgeObserved = Observed{Status: "completed", Output: "Refund issued for order 42.",
	Calls:      obs(`refund {"order":42}`),
	Transcript: []model.Message{{Role: model.RoleUser, Content: "I want my money back"}, {Role: model.RoleAssistant, Content: "Refund issued."}}}

func TestJudgeRubric(t *testing.T) {
	j := &fakeJudge{answers: map[string]string{"rubric/polite/0/0": answer(0.8, "good")}}
	scores, err := scoreCase(t.Context(), j, &Set{Judge: "grader"}, judgeCase, judgeObserved, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := scores[len(scores)-1]
	if sc.Name != "polite" || sc.Value != 0.8 || !sc.Pass || sc.Label != "good" || sc.Explanation != "scored 0.8" ||
		sc.Threshold != 0.5 || sc.Agreement != 1 || sc.Error != "" {
		t.Fatalf("score %+v", sc)
	}
	if !slices.Equal(j.keys, []string{"rubric/polite/0/0"}) || j.agents[0] != "grader" {
		t.Fatalf("asked %v of %v", j.keys, j.agents)
	}
	prompt := j.msgs[0][0].Content
	for _, want := range []string{"polite and offers a refund", "your refund for order 42 is on its way", "I want my money back for order 42",
		"Refund issued for order 42.", `#1 refund {"order":42}`, "assistant: Refund issued.", `"score"`, "completed", `{"tier":"gold"}`} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
}

func TestJudgeRubricThresholdAndAgent(t *testing.T) {
	c := judgeCase
	c.Expect.Rubrics = []Rubric{{Name: "polite", Criteria: "polite", Threshold: 0.9, Judge: "strict"}}
	j := &fakeJudge{next: func(string) string { return answer(0.8, "good") }}
	scores, err := scoreCase(t.Context(), j, &Set{Judge: "grader"}, c, judgeObserved, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc := scores[len(scores)-1]; sc.Pass || sc.Threshold != 0.9 || j.agents[0] != "strict" {
		t.Fatalf("score %+v asked %v", sc, j.agents)
	}
}

// Malformed answers are corrected, each under its own key, with the
// problem told to the judge; the first good answer counts.
func TestJudgeRetriesMalformedAnswers(t *testing.T) {
	j := &fakeJudge{answers: map[string]string{
		"rubric/polite/0/0": "It looks polite to me.",
		"rubric/polite/0/1": `{"score": 8, "label": "good", "explanation": "fine"}`,
		"rubric/polite/0/2": "```json\n" + answer(0.7, "good") + "\n```",
	}}
	scores, err := scoreCase(t.Context(), j, &Set{Judge: "grader"}, judgeCase, judgeObserved, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc := scores[len(scores)-1]; sc.Value != 0.7 || !sc.Pass || sc.Error != "" {
		t.Fatalf("score %+v", sc)
	}
	if len(j.keys) != 3 {
		t.Fatalf("asked %v", j.keys)
	}
	// The third question holds the conversation so far: the prompt, each
	// bad answer and its correction.
	third := j.msgs[2]
	if len(third) != 5 || third[1].Content != "It looks polite to me." || third[3].Role != model.RoleAssistant ||
		!strings.Contains(third[2].Content, "not a JSON object") || !strings.Contains(third[4].Content, `"score" is 8, out of range`) {
		t.Fatalf("third question: %+v", third)
	}
}

// A judge that never answers well is asked a bounded number of times,
// then the case is an error: never a pass, never a crash.
func TestJudgeGarbageIsCaseError(t *testing.T) {
	for _, garbage := range []string{"", "yes", `{"score": 0.9}`, `{"score": "0.9", "label": "good", "explanation": "x"}`,
		`{"score": 1.5, "label": "good", "explanation": "x"}`, `[0.9]`, `{"score": 0.9, "label": "good", "explanation": "x"} thanks`} {
		j := &fakeJudge{next: func(string) string { return garbage }}
		scores, err := scoreCase(t.Context(), j, &Set{Judge: "grader"}, judgeCase, judgeObserved, nil)
		if err == nil || !strings.Contains(err.Error(), "malformed after 3 attempts") {
			t.Fatalf("%q: error %v", garbage, err)
		}
		sc := scores[len(scores)-1]
		if sc.Pass || sc.Error == "" || sc.Name != "polite" || sc.Label != "error" {
			t.Fatalf("%q: score %+v", garbage, sc)
		}
		if len(j.keys) != judgeAttempts {
			t.Fatalf("%q: asked %d times, want %d", garbage, len(j.keys), judgeAttempts)
		}
	}
}

func TestParseJudgeAnswer(t *testing.T) {
	tests := []struct {
		text    string
		score   float64
		problem string // empty: a good answer
	}{
		{answer(0.5, "ok"), 0.5, ""},
		{answer(0, "bad"), 0, ""},
		{answer(1, "great"), 1, ""},
		{"  \n```json\n" + answer(0.25, "meh") + "\n```\n", 0.25, ""},
		{"The verdict:\n```\n" + answer(0.25, "meh") + "\n```", 0.25, ""},
		{`{"score": 0.5, "label": "ok", "explanation": "x", "confidence": 0.9}`, 0.5, ""},
		{"Sure! " + answer(0.5, "ok"), 0, "not a JSON object"},
		{`{"label": "ok", "explanation": "x"}`, 0, `"score" is missing`},
		{`{"score": -0.1, "label": "ok", "explanation": "x"}`, 0, "out of range"},
		{`{"score": 0.5, "explanation": "x"}`, 0, `"label" is missing`},
		{`{"score": 0.5, "label": " ", "explanation": "x"}`, 0, `"label" is missing`},
		{`{"score": 0.5, "label": "ok"}`, 0, `"explanation" is missing`},
		{`{"score": "high", "label": "ok", "explanation": "x"}`, 0, "wrong field type"},
		{`"0.5"`, 0, "not a JSON object"},
		{`null`, 0, "not a JSON object"},
	}
	for _, tt := range tests {
		a, err := parseJudgeAnswer(tt.text)
		switch {
		case tt.problem == "" && err != nil:
			t.Errorf("%q: %v", tt.text, err)
		case tt.problem == "" && a.Score != tt.score:
			t.Errorf("%q: score %v, want %v", tt.text, a.Score, tt.score)
		case tt.problem != "" && (err == nil || !strings.Contains(err.Error(), tt.problem)):
			t.Errorf("%q: error %v, want one saying %q", tt.text, err, tt.problem)
		}
	}
}

func TestJudgeSamples(t *testing.T) {
	tests := []struct {
		name      string
		scores    []float64
		value     float64
		pass      bool
		agreement float64
		expl      string
	}{
		{"unanimous pass", []float64{0.9, 0.8, 0.7}, 0.8, true, 1, "the samples agree: all pass"},
		{"unanimous fail", []float64{0.1, 0.2}, 0.15, false, 1, "the samples agree: all fail"},
		{"a mean without float noise", []float64{0.4, 0.4, 0.4}, 0.4, false, 1, "mean of 3 samples 0.40 (0.4, 0.4, 0.4)"},
		{"majority fail, mean pass", []float64{1, 0.4, 0.4}, 0.6, true, 2.0 / 3, "the samples disagree: 1 of 3 pass (agreement 0.67)"},
		{"split", []float64{0.9, 0.1, 0.8, 0.2}, 0.5, true, 0.5, "2 of 4 pass"},
		{"a sample at the threshold passes", []float64{0.5, 0.5, 0.1}, 1.1 / 3, false, 2.0 / 3, "2 of 3 pass"},
		{"majority pass of five", []float64{0.9, 0.9, 0.9, 0.9, 0.1}, 0.74, true, 0.8, "4 of 5 pass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := judgeCase
			c.Expect.Rubrics = []Rubric{{Name: "polite", Criteria: "polite", Samples: len(tt.scores)}}
			j := &fakeJudge{answers: map[string]string{}}
			for i, s := range tt.scores {
				j.answers[judgeKey("polite", i, 0)] = answer(s, fmt.Sprintf("l%d", min(i, 1)))
			}
			scores, err := scoreCase(t.Context(), j, &Set{Judge: "grader"}, c, judgeObserved, nil)
			if err != nil {
				t.Fatal(err)
			}
			sc := scores[len(scores)-1]
			if sc.Value != math.Round(tt.value*1e6)/1e6 || sc.Pass != tt.pass || math.Abs(sc.Agreement-tt.agreement) > 1e-9 {
				t.Fatalf("value %v pass %v agreement %v, want %v %v %v", sc.Value, sc.Pass, sc.Agreement, tt.value, tt.pass, tt.agreement)
			}
			if !strings.Contains(sc.Explanation, tt.expl) || !strings.Contains(sc.Explanation, "sample 2 (") {
				t.Errorf("explanation lacks %q:\n%s", tt.expl, sc.Explanation)
			}
			if len(j.keys) != len(tt.scores) {
				t.Errorf("asked %v", j.keys)
			}
		})
	}
}

// One bad sample makes the rubric an error even when the others are
// good; its retries are counted per sample.
func TestJudgeSampleMalformed(t *testing.T) {
	c := judgeCase
	c.Expect.Rubrics = []Rubric{{Name: "polite", Criteria: "polite", Samples: 3}}
	j := &fakeJudge{next: func(key string) string {
		if strings.HasPrefix(key, "rubric/polite/1/") {
			return "nope"
		}
		return answer(0.9, "good")
	}}
	scores, err := scoreCase(t.Context(), j, &Set{Judge: "grader"}, c, judgeObserved, nil)
	if err == nil || !strings.Contains(err.Error(), "sample 2 of 3") {
		t.Fatalf("error %v", err)
	}
	if sc := scores[len(scores)-1]; sc.Pass || sc.Error == "" {
		t.Fatalf("score %+v", sc)
	}
	want := []string{"rubric/polite/0/0", "rubric/polite/1/0", "rubric/polite/1/1", "rubric/polite/1/2"}
	if !slices.Equal(j.keys, want) {
		t.Fatalf("asked %v, want %v", j.keys, want)
	}
}

// The keys are a function of the case: scoring it again against the
// answers recorded asks the same keys and gives the same scores, so a
// replay of an eval run asks no model.
func TestJudgeKeysAreDeterministic(t *testing.T) {
	c := judgeCase
	c.Expect.Rubrics = []Rubric{{Name: "polite", Criteria: "polite", Samples: 2}, {Name: "correct", Reference: "refund issued", Samples: 3}}
	n := 0
	first := &fakeJudge{next: func(key string) string {
		n++
		if n%2 == 0 {
			return "garbage" // every other answer is corrected
		}
		return answer(float64(n%10)/10, "l")
	}}
	s1, err := scoreCase(t.Context(), first, &Set{Judge: "grader"}, c, judgeObserved, nil)
	if err != nil {
		t.Fatal(err)
	}
	replay := &fakeJudge{answers: first.given} // fails on any key not recorded
	s2, err := scoreCase(t.Context(), replay, &Set{Judge: "grader"}, c, judgeObserved, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.keys, replay.keys) || len(first.keys) != 9 {
		t.Fatalf("keys %v, then %v", first.keys, replay.keys)
	}
	if fmt.Sprint(s1) != fmt.Sprint(s2) {
		t.Fatalf("scores %+v, then %+v", s1, s2)
	}
}

func TestJudgeCannotAsk(t *testing.T) {
	boom := errors.New("provider down")
	tests := []struct {
		name  string
		judge Judge
		set   *Set
		want  string
	}{
		{"no judge agent", &fakeJudge{}, &Set{}, "no judge agent"},
		{"no set", &fakeJudge{}, nil, "no judge agent"},
		{"no judge", nil, &Set{Judge: "grader"}, "no judge to ask"},
		{"ask fails", &countJudge{err: boom}, &Set{Judge: "grader"}, "provider down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scores, err := scoreCase(t.Context(), tt.judge, tt.set, judgeCase, judgeObserved, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `case "refund"`) {
				t.Fatalf("error %v", err)
			}
			if sc := scores[len(scores)-1]; sc.Pass || !strings.Contains(sc.Error, tt.want) {
				t.Fatalf("score %+v", sc)
			}
		})
	}
	_, err := scoreCase(t.Context(), &countJudge{err: boom}, &Set{Judge: "grader"}, judgeCase, judgeObserved, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v does not wrap the judge's", err)
	}
}

type errJudge struct{ err error }

func (e errJudge) Ask(context.Context, string, string, []model.Message) (string, error) {
	return "", e.err
}

// A stopped eval run is not the case's error: scoreCase returns the
// context's error and no scores to record.
func TestScoreCaseStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	j := &fakeJudge{next: func(string) string { cancel(); return "garbage" }}
	scores, err := scoreCase(ctx, j, &Set{Judge: "grader"}, judgeCase, judgeObserved, nil)
	if !errors.Is(err, context.Canceled) || scores != nil {
		t.Fatalf("scores %v error %v", scores, err)
	}
	if len(j.keys) != 1 {
		t.Fatalf("asked %v after the stop", j.keys)
	}
}

func TestJudgePromptBounded(t *testing.T) {
	long := strings.Repeat("é", 100_000)
	p := judgePrompt(Case{Input: long}, Observed{Output: long, Transcript: []model.Message{{Role: model.RoleUser, Content: long}}}, Rubric{Name: "r", Criteria: "c"})
	if len(p) > 5*maxSection || !strings.Contains(p, "bytes left out") || !utf8Valid(p) {
		t.Fatalf("prompt of %d bytes", len(p))
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// A judge that cannot be asked (its provider down, the eval run stopping)
// ends the scoring: no further judge or scorer is asked.
func TestJudgeAskFailureStops(t *testing.T) {
	c := judgeCase
	c.Expect.Rubrics = []Rubric{{Name: "first", Criteria: "c"}, {Name: "second", Criteria: "c"}}
	c.Expect.Scorers = []string{"later"}
	asked := 0
	custom := map[string]Scorer{"later": scorerFunc{"later", func(Case, Observed) ([]Score, error) { asked++; return nil, nil }}}
	boom := errors.New("provider down")
	j := &countJudge{err: boom}
	scores, err := scoreCase(t.Context(), j, &Set{Judge: "grader"}, c, judgeObserved, custom)
	if !errors.Is(err, boom) || j.n != 1 || asked != 0 {
		t.Fatalf("error %v, judge asked %d times, scorer %d", err, j.n, asked)
	}
	if sc := scores[len(scores)-1]; sc.Name != "first" || sc.Error == "" || sc.Pass {
		t.Fatalf("scores %+v", scores)
	}
}

// countJudge fails every question with err, counting them.
type countJudge struct {
	n   int
	err error
}

func (c *countJudge) Ask(context.Context, string, string, []model.Message) (string, error) {
	c.n++
	return "", c.err
}
