package eval

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkScoreCase scores a typical case: status, output (contains,
// fields, schema, similarity), an in-order trajectory of 3 calls among
// 10, forbidden calls, bounds and a rubric judged 3 times (by a judge that
// answers at once, so the scorers' own cost is measured).
func BenchmarkScoreCase(b *testing.B) {
	c := Case{ID: "c", Input: "Where is order 42?", Expect: Expect{
		Output: &Output{Contains: []string{"order 42"}, Fields: map[string]any{"order.id": 42, "status": "shipped"},
			Schema:  json.RawMessage(`{"type":"object","required":["order","status"],"properties":{"status":{"type":"string"}}}`),
			Similar: &Similar{Reference: "Your order 42 has shipped and arrives on Friday."}},
		Trajectory: &Trajectory{Calls: []Call{{Name: "lookup", Args: map[string]any{"id": 42}}, {Name: "track"}, {Name: "reply", Ignore: []string{"ts"}}}},
		Forbid:     []Call{{Name: "refund"}, {Name: "cancel"}},
		Bounds:     &Bounds{Turns: 5, Tokens: 10000, Cost: 1},
		Rubrics:    []Rubric{{Name: "helpful", Criteria: "Says where the order is.", Samples: 3}},
	}}
	var calls []string
	for i := range 7 {
		calls = append(calls, fmt.Sprintf(`search {"q":"order %d"}`, i))
	}
	calls = append(calls, `lookup {"id":42,"ts":"2026-01-01"}`, `track {"id":42}`, `reply {"ts":1}`)
	o := Observed{Status: "completed", Output: "```json\n" + `{"order":{"id":42},"status":"shipped","text":"Your order 42 has shipped."}` + "\n```",
		Calls: obs(calls...), Turns: 2, Tokens: 900, Cost: 0.01}
	j := &fakeJudge{}
	s := &Set{Judge: "grader"}
	b.ReportAllocs()
	for b.Loop() {
		j.keys, j.msgs, j.agents, j.given = nil, nil, nil, nil
		j.next = func(string) string { return answer(0.9, "good") }
		scores, err := scoreCase(b.Context(), j, s, c, o, nil)
		if err != nil || len(scores) != 9 {
			b.Fatalf("%d scores, error %v", len(scores), err)
		}
	}
}

// BenchmarkTrajectoryLong aligns 50 expected calls with a run of 2,000.
func BenchmarkTrajectoryLong(b *testing.B) {
	var want []Call
	var got []string
	for i := range 2000 {
		got = append(got, fmt.Sprintf(`step {"n":%d,"id":"x%d"}`, i, i))
		if i%40 == 0 {
			want = append(want, Call{Name: "step", Args: map[string]any{"n": i}, Ignore: []string{"id"}})
		}
	}
	observed := obs(got...)
	for _, m := range []string{"in_order", "any_order"} {
		b.Run(m, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if sc := trajectoryScore(Trajectory{Match: m, Calls: want}, observed); m == "in_order" && !sc.Pass {
					b.Fatal(sc.Explanation)
				}
			}
		})
	}
}
