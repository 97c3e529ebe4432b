package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/swarmrt/swarm/model"
)

const (
	// maxSamples bounds Rubric.Samples.
	maxSamples = 10
	// judgeAttempts bounds the questions for one sample: the first and
	// the corrections after malformed answers.
	judgeAttempts = 3
	// maxRubricName bounds a rubric's name, a segment of its judge's
	// step keys.
	maxRubricName = 100
	// maxSection bounds, in bytes, each part of the run shown to a judge
	// (the output, the transcript, the calls), so a long run cannot make
	// a prompt without end.
	maxSection = 16 << 10
)

// judgeAnswerFormat is the answer a judge must give.
const judgeAnswerFormat = `{"score": <a number from 0 to 1>, "label": "<a short verdict, one or two words>", "explanation": "<why, in one to three sentences>"}`

// judgeKey is the key a judge is asked a rubric's sample under (samples
// and attempts from 0): a function of the case alone, so a replay of the
// eval run finds every answer recorded and asks no model again. Keys
// under "rubric/" are the rubrics'; custom scorers that ask a judge use
// others.
func judgeKey(rubric string, sample, attempt int) string {
	return fmt.Sprintf("rubric/%s/%d/%d", rubric, sample, attempt)
}

// askError is a judge that could not be asked (not a malformed answer):
// the eval run may be stopping, so no further judge is asked.
type askError struct{ err error }

func (e *askError) Error() string { return e.err.Error() }
func (e *askError) Unwrap() error { return e.err }

// judgeRubric has a judge score c's run by rubric r, r.Samples times
// (each retried, bounded, while the answer is malformed). The value is
// the mean; Agreement is the share of samples agreeing with the majority
// verdict. A judge that cannot be asked or whose answers stay malformed
// gives a Score with Error and that error.
func judgeRubric(ctx context.Context, j Judge, s *Set, c Case, o Observed, r Rubric) (Score, error) {
	threshold := r.Threshold
	if threshold == 0 {
		threshold = 0.5
	}
	fail := func(err error) (Score, error) {
		err = fmt.Errorf("rubric %q: %w", r.Name, err)
		return Score{Name: r.Name, Label: "error", Threshold: threshold, Error: err.Error()}, err
	}
	agent := r.Judge
	if agent == "" && s != nil {
		agent = s.Judge
	}
	n := max(r.Samples, 1)
	switch {
	case agent == "":
		return fail(errors.New("no judge agent: set the rubric's judge or the set's judge"))
	case j == nil:
		return fail(errors.New("no judge to ask (the runner gave none)"))
	case n > maxSamples:
		return fail(fmt.Errorf("%d samples, at most %d", n, maxSamples))
	case r.Name == "" || strings.Contains(r.Name, "/"):
		return fail(errors.New(`a rubric's name must be set and have no "/"`))
	}
	prompt := judgePrompt(c, o, r)
	answers := make([]judgeAnswer, 0, n)
	for k := range n {
		a, err := askJudge(ctx, j, agent, r.Name, k, prompt)
		if err != nil {
			if n > 1 {
				err = fmt.Errorf("sample %d of %d: %w", k+1, n, err)
			}
			return fail(err)
		}
		answers = append(answers, a)
	}
	return sampledScore(r.Name, threshold, answers), nil
}

// sampledScore makes a rubric's Score of its samples' answers.
func sampledScore(name string, threshold float64, answers []judgeAnswer) Score {
	n := len(answers)
	sum, passes := 0.0, 0
	labels := map[string]int{}
	label := ""
	for _, a := range answers {
		sum += a.Score
		if a.Score >= threshold {
			passes++
		}
		labels[a.Label]++
		if labels[a.Label] > labels[label] {
			label = a.Label // the most common, the first of equals
		}
	}
	// The mean is rounded to 6 places: 0.4, 0.4, 0.4 make 0.4, not
	// 0.4000000000000001.
	sc := verdict(name, math.Round(sum/float64(n)*1e6)/1e6, threshold, "")
	sc.Label = label
	sc.Agreement = float64(max(passes, n-passes)) / float64(n)
	if n == 1 {
		sc.Explanation = answers[0].Explanation
		return sc
	}
	var b strings.Builder
	values := make([]string, n)
	for i, a := range answers {
		values[i] = strconv.FormatFloat(a.Score, 'g', 3, 64)
	}
	fmt.Fprintf(&b, "mean of %d samples %.2f (%s), least to pass %.2f; ", n, sc.Value, strings.Join(values, ", "), threshold)
	if passes == 0 || passes == n {
		verdictWord := "fail"
		if passes == n {
			verdictWord = "pass"
		}
		fmt.Fprintf(&b, "the samples agree: all %s", verdictWord)
	} else {
		fmt.Fprintf(&b, "the samples disagree: %d of %d pass (agreement %.2f)", passes, n, sc.Agreement)
	}
	for i, a := range answers {
		fmt.Fprintf(&b, "\nsample %d (%s, %s): %s", i+1, values[i], a.Label, a.Explanation)
	}
	sc.Explanation = b.String()
	return sc
}

// askJudge asks agent the prompt for one sample, correcting it while its
// answer is malformed, at most judgeAttempts times.
func askJudge(ctx context.Context, j Judge, agent, rubric string, sample int, prompt string) (judgeAnswer, error) {
	msgs := []model.Message{{Role: model.RoleUser, Content: prompt}}
	var last error
	for attempt := range judgeAttempts {
		text, err := j.Ask(ctx, judgeKey(rubric, sample, attempt), agent, msgs)
		if err != nil {
			return judgeAnswer{}, &askError{fmt.Errorf("judge %s: %w", agent, err)}
		}
		a, err := parseJudgeAnswer(text)
		if err == nil {
			return a, nil
		}
		last = fmt.Errorf("%w (answer: %s)", err, strconv.Quote(clip(strings.TrimSpace(text), 200)))
		msgs = append(msgs[:len(msgs):len(msgs)],
			model.Message{Role: model.RoleAssistant, Content: text},
			model.Message{Role: model.RoleUser, Content: fmt.Sprintf(
				"Your answer could not be read: %v. Answer again with only this JSON object and no other text:\n%s", err, judgeAnswerFormat)})
	}
	return judgeAnswer{}, fmt.Errorf("judge %s: the answer stayed malformed after %d attempts: %w", agent, judgeAttempts, last)
}

// judgeAnswer is a judge's verdict on one sample.
type judgeAnswer struct {
	Score       float64
	Label       string
	Explanation string
}

// parseJudgeAnswer reads a judge's answer: one JSON object (fenced in ```
// or not) with a score from 0 to 1, a label and an explanation.
func parseJudgeAnswer(text string) (judgeAnswer, error) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "{") {
		if block, ok := fenced(t); ok {
			t = block
		}
	}
	var a struct {
		Score       *float64 `json:"score"`
		Label       *string  `json:"label"`
		Explanation *string  `json:"explanation"`
	}
	v, err := decodeJSON([]byte(t))
	if err != nil {
		return judgeAnswer{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return judgeAnswer{}, fmt.Errorf("not a JSON object: got %s", compact(v))
	}
	if err := json.Unmarshal([]byte(t), &a); err != nil {
		return judgeAnswer{}, fmt.Errorf("wrong field type: %w", err)
	}
	switch {
	case a.Score == nil:
		return judgeAnswer{}, errors.New(`"score" is missing`)
	case !(*a.Score >= 0 && *a.Score <= 1):
		return judgeAnswer{}, fmt.Errorf(`"score" is %v, out of range: want 0 to 1`, *a.Score)
	case a.Label == nil || strings.TrimSpace(*a.Label) == "":
		return judgeAnswer{}, errors.New(`"label" is missing`)
	case a.Explanation == nil || strings.TrimSpace(*a.Explanation) == "":
		return judgeAnswer{}, errors.New(`"explanation" is missing`)
	}
	return judgeAnswer{Score: *a.Score, Label: strings.TrimSpace(*a.Label), Explanation: strings.TrimSpace(*a.Explanation)}, nil
}

// judgePrompt is the question to a judge: the rubric, the case's input,
// and what the run did.
func judgePrompt(c Case, o Observed, r Rubric) string {
	var b strings.Builder
	b.WriteString("You judge the run of an AI system by a rubric. Read what it was asked and what it did, then score it.\n")
	section := func(title, body string) {
		fmt.Fprintf(&b, "\n## %s\n%s\n", title, clipSection(strings.TrimSpace(body)))
	}
	if r.Criteria != "" {
		section("Rubric: "+r.Name, r.Criteria)
	} else {
		fmt.Fprintf(&b, "\n## Rubric: %s\nThe output must agree with the reference answer.\n", r.Name)
	}
	if r.Reference != "" {
		section("Reference answer (compare the output with it)", r.Reference)
	}
	section("Input", caseInput(c))
	if len(c.Values) > 0 {
		section("Parameters of the run", jsonText(c.Values))
	}
	if len(o.Transcript) > 0 {
		var t strings.Builder
		for _, m := range o.Transcript {
			if m.Content != "" {
				fmt.Fprintf(&t, "%s: %s\n", m.Role, m.Content)
			}
		}
		section("Transcript", t.String())
	}
	if len(o.Calls) > 0 {
		var t strings.Builder
		for i, g := range gotCalls(o.Calls) {
			fmt.Fprintln(&t, describeGot(g, i))
		}
		section("Tool calls and handoffs, in order", t.String())
	}
	status := o.Status
	if o.Reason != "" {
		status += ": " + o.Reason
	}
	section("Final status", status)
	section("Final output", o.Output)
	fmt.Fprintf(&b, "\nAnswer with only this JSON object and no other text:\n%s\n", judgeAnswerFormat)
	b.WriteString("A score of 1 meets the rubric fully, 0 not at all.\n")
	return b.String()
}

// caseInput is the case's input as a judge reads it.
func caseInput(c Case) string {
	var parts []string
	if c.Input != "" {
		parts = append(parts, c.Input)
	}
	for i, t := range c.Turns {
		parts = append(parts, fmt.Sprintf("user turn %d: %s", i+1, t))
	}
	for i, m := range c.Mail {
		parts = append(parts, fmt.Sprintf("message %d to the lead: %s", i+1, m))
	}
	if sc := c.Scenario; sc != nil {
		parts = append(parts, "a simulated user with the goal: "+sc.Goal)
		if sc.Persona != "" {
			parts = append(parts, "persona: "+sc.Persona)
		}
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, "\n")
}

// clipSection cuts a part of a judge's prompt to maxSection bytes,
// keeping its start and its end.
func clipSection(s string) string {
	if len(s) <= maxSection {
		return s
	}
	head := clip(s, maxSection/2)
	tail := s[len(s)-maxSection/2:]
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s\n[… %d bytes left out …]\n%s", head, len(s)-len(head)-len(tail), tail)
}

func validateRubric(v *validator, field string, r Rubric) {
	switch {
	case strings.TrimSpace(r.Name) == "":
		v.errf(field+".name", "empty name")
	case strings.Contains(r.Name, "/"):
		v.errf(field+".name", "%q has a \"/\" (the name keys the judge's steps in the eval run's journal)", r.Name)
	case len(r.Name) > maxRubricName:
		v.errf(field+".name", "%d bytes, at most %d", len(r.Name), maxRubricName)
	}
	if strings.TrimSpace(r.Criteria) == "" && strings.TrimSpace(r.Reference) == "" {
		v.errf(field, "neither criteria nor reference: the judge has nothing to judge by")
	}
	if r.Samples < 0 || r.Samples > maxSamples {
		v.errf(field+".samples", "%d is out of range: want 1 to %d (0: 1)", r.Samples, maxSamples)
	}
	v.unit(field+".threshold", r.Threshold)
}
