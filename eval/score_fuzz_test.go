package eval

import (
	"encoding/json"
	"testing"
)

// FuzzScoreCase scores arbitrary outputs, call arguments and judge
// answers: every one gives scores or a case error, never a panic, and
// every value stays within 0 to 1.
func FuzzScoreCase(f *testing.F) {
	f.Add("```json\n{\"a\":[1,{\"b\":2}]}\n```", `{"id":1,"items":[{"id":2}]}`, `{"score":0.5,"label":"ok","explanation":"x"}`)
	f.Add("", "", "")
	f.Add("```", "[", "```json{")
	f.Add("\xff\xfe", `{"id":null}`, `{"score":1e309}`)
	c := Case{ID: "fuzz", Expect: Expect{
		Output: &Output{Exact: ptr("x"), Contains: []string{"a"}, Regex: `\d`, Fields: map[string]any{"a.1.b": 2},
			Schema: json.RawMessage(`{"type":"object"}`), Similar: &Similar{Reference: "a b c"}},
		Trajectory: &Trajectory{Match: "any_order", Calls: []Call{{Name: "t", Args: map[string]any{"items": []any{map[string]any{"id": 2}}},
			ArgsMatch: "exact", Ignore: []string{"id", "items.*.x"}}}},
		Forbid:  []Call{{Name: "t", Args: map[string]any{"id": 1}}},
		Rubrics: []Rubric{{Name: "r", Criteria: "c", Samples: 2}},
	}}
	f.Fuzz(func(t *testing.T, output, args, judged string) {
		o := Observed{Status: "completed", Output: output, Calls: []ObservedCall{{Name: "t", Args: json.RawMessage(args)}, {Name: "t"}}}
		j := &fakeJudge{next: func(string) string { return judged }}
		scores, err := scoreCase(t.Context(), j, &Set{Judge: "g"}, c, o, nil)
		for _, sc := range scores {
			if !(sc.Value >= 0 && sc.Value <= 1) || (sc.Pass && sc.Error != "") {
				t.Fatalf("score %+v", sc)
			}
			if sc.Error != "" && err == nil {
				t.Fatalf("score %s has an error the case does not: %s", sc.Name, sc.Error)
			}
		}
		if len(j.keys) > 2*judgeAttempts {
			t.Fatalf("asked %d times", len(j.keys))
		}
	})
}
