package eval_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/swarmrt/swarm/eval"
)

// wordLimit is a custom scorer: answers must be at most max words. Its
// value falls as an answer grows past the limit, so a comparison of two
// configurations sees by how much.
type wordLimit struct{ max int }

func (wordLimit) Name() string { return "word_limit" }

func (w wordLimit) Score(_ context.Context, _ eval.Judge, _ eval.Case, o eval.Observed) ([]eval.Score, error) {
	n := len(strings.Fields(o.Output))
	sc := eval.Score{Name: w.Name(), Value: 1, Threshold: 1, Pass: true, Label: "pass",
		Explanation: fmt.Sprintf("%d words, at most %d", n, w.max)}
	if n > w.max {
		sc.Value, sc.Pass, sc.Label = float64(w.max)/float64(n), false, "too long"
	}
	return []eval.Score{sc}, nil
}

// A custom scorer is Go code registered under its name; a case names it
// in Expect.Scorers ("scorers: [word_limit]" in YAML). Its error or panic
// is an error of the case it scores, never a crash of the eval run.
func ExampleScorer() {
	var s eval.Scorer = wordLimit{max: 8}
	c := eval.Case{ID: "refund", Input: "Where is my refund?", Expect: eval.Expect{Scorers: []string{s.Name()}}}
	for _, out := range []string{
		"Your refund is on its way.",
		"Your refund was issued today and should reach your account within three to five days.",
	} {
		scores, err := s.Score(context.Background(), nil, c, eval.Observed{Status: "completed", Output: out})
		if err != nil {
			fmt.Println(err)
			return
		}
		sc := scores[0]
		fmt.Printf("%s %.2f %s: %s\n", sc.Name, sc.Value, sc.Label, sc.Explanation)
	}
	// Output:
	// word_limit 1.00 pass: 6 words, at most 8
	// word_limit 0.53 too long: 15 words, at most 8
}
