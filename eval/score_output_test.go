package eval

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestOutputScores(t *testing.T) {
	tests := []struct {
		name   string
		want   Output
		output string
		value  float64
		pass   bool
		expl   []string // the explanation contains each
	}{
		{"exact after trimming space", Output{Exact: ptr("Paris")}, "  Paris\n", 1, true, nil},
		{"exact differs", Output{Exact: ptr("The capital is Paris.")}, "The capital is Rome.", 0, false,
			[]string{"line 1, character 16", `want "The capital is Paris.", got "The capital is Rome."`}},
		{"exact differs far in", Output{Exact: ptr(strings.Repeat("x", 100) + "abc")}, strings.Repeat("x", 100) + "abd", 0, false,
			[]string{"character 103", `want …"xxxxxxxxxxxxxxxxxxabc"`}},
		{"exact differs on a later line", Output{Exact: ptr("a\nb\nc")}, "a\nb\nx", 0, false, []string{"line 3"}},
		{"exact longer output", Output{Exact: ptr("yes")}, "yes, sure", 0, false, []string{`want "yes" (end of text), got "yes, sure"`}},
		{"contains all", Output{Contains: []string{"Paris", "France"}}, "Paris is in France", 1, true, nil},
		{"contains some", Output{Contains: []string{"Paris", "Berlin"}}, "Paris is in France", 0.5, false,
			[]string{"1 of 2", `missing: "Berlin"`}},
		{"contains is case-sensitive", Output{Contains: []string{"paris"}}, "Paris", 0, false, nil},
		{"regex matches", Output{Regex: `order #\d+`}, "your order #123 shipped", 1, true, []string{"order #123"}},
		{"regex does not match", Output{Regex: `^order #\d+$`}, "your order #123 shipped", 0, false,
			[]string{"does not match", "your order"}},
		{"fields of plain JSON", Output{Fields: map[string]any{"status": "ok", "order.items.0.qty": 2}},
			`{"status":"ok","order":{"items":[{"qty":2.0,"sku":"x"}]}}`, 1, true, nil},
		{"fields of fenced JSON", Output{Fields: map[string]any{"city": "Paris"}},
			"Here it is:\n```json\n{\"city\": \"Paris\"}\n```\nAnything else?", 1, true, nil},
		{"fields of JSON fenced without a tag", Output{Fields: map[string]any{"n": 1}}, "```\n{\"n\": 1}\n```", 1, true, nil},
		{"fields differ", Output{Fields: map[string]any{"city": "Paris", "n": 1, "tags": []any{"a"}}},
			`{"city":"Rome","n":1,"tags":["a"]}`, 2.0 / 3, false, []string{`city: want "Paris", got "Rome"`}},
		{"field missing", Output{Fields: map[string]any{"a.b": true}}, `{"a":{}}`, 0, false, []string{"a.b: missing, want true"}},
		{"field of an object compared whole", Output{Fields: map[string]any{"a": map[string]any{"b": 1}}},
			`{"a":{"b":1,"c":2}}`, 0, false, []string{`want {"b":1}, got {"b":1,"c":2}`}},
		{"fields of text", Output{Fields: map[string]any{"a": 1}}, "no JSON here", 0, false, []string{"output is not JSON"}},
		{"schema matches", Output{Schema: json.RawMessage(`{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}`)},
			`{"id": 7}`, 1, true, nil},
		{"schema does not match", Output{Schema: json.RawMessage(`{"type":"object","required":["id"]}`)},
			`{"name": "x"}`, 0, false, []string{"does not match the schema", "id"}},
		{"schema of fenced JSON", Output{Schema: json.RawMessage(`{"type":"array"}`)}, "```json\n[1,2]\n```", 1, true, nil},
		{"similar identical", Output{Similar: &Similar{Reference: "The cat sat on the mat."}}, "the cat sat on the mat", 1, true, nil},
		{"similar enough", Output{Similar: &Similar{Reference: "the cat sat on the mat"}}, "the cat sat", 2.0 / 3, true,
			[]string{"precision 1.00, recall 0.50", "words of the reference not in the output: on, the, mat"}},
		{"similar below its min", Output{Similar: &Similar{Reference: "the cat sat on the mat", Min: 0.8}}, "the cat sat", 2.0 / 3, false, nil},
		{"similar by the default min", Output{Similar: &Similar{Reference: "a b c d e"}}, "a b c x y z", 6.0 / 11, true, []string{"least to pass 0.50"}},
		{"similar to nothing", Output{Similar: &Similar{Reference: "blue whale"}}, "red fox", 0, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scores := outputScores(tt.want, tt.output)
			if len(scores) != 1 {
				t.Fatalf("got %d scores, want 1: %+v", len(scores), scores)
			}
			sc := scores[0]
			if math.Abs(sc.Value-tt.value) > 1e-9 || sc.Pass != tt.pass || sc.Error != "" {
				t.Fatalf("value %v pass %v error %q, want %v %v: %s", sc.Value, sc.Pass, sc.Error, tt.value, tt.pass, sc.Explanation)
			}
			if want := map[bool]string{true: "pass", false: "fail"}[tt.pass]; sc.Label != want {
				t.Errorf("label %q, want %q", sc.Label, want)
			}
			if sc.Pass != (sc.Value >= sc.Threshold) || sc.Threshold <= 0 {
				t.Errorf("threshold %v does not decide pass %v at value %v", sc.Threshold, sc.Pass, sc.Value)
			}
			for _, e := range tt.expl {
				if !strings.Contains(sc.Explanation, e) {
					t.Errorf("explanation %q lacks %q", sc.Explanation, e)
				}
			}
		})
	}
}

func TestOutputScoresEachCheckApart(t *testing.T) {
	out := Output{Exact: ptr("x"), Contains: []string{"x"}, Regex: "x", Fields: map[string]any{"a": 1},
		Schema: json.RawMessage(`{}`), Similar: &Similar{Reference: "x"}}
	var names []string
	for _, sc := range outputScores(out, "x") {
		names = append(names, sc.Name)
	}
	want := "output.exact output.contains output.regex output.fields output.schema output.similar"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("scores %s, want %s", got, want)
	}
}

func TestRouge1(t *testing.T) {
	tests := []struct {
		ref, cand string
		f1        float64
	}{
		{"a b c d", "a b c d", 1},
		{"a b c d", "d c b a", 1}, // unigrams: order does not count
		{"a a b", "a b b", 2.0 / 3},
		{"a b", "", 0},
		{"", "", 1},
		{"Hello, World!", "hello world", 1},
		{"Grüße aus Köln", "grüße aus köln", 1},
	}
	for _, tt := range tests {
		f1, _, _, _ := rouge1(words(tt.ref), words(tt.cand))
		if math.Abs(f1-tt.f1) > 1e-9 {
			t.Errorf("rouge1(%q, %q) = %v, want %v", tt.ref, tt.cand, f1, tt.f1)
		}
	}
}

func TestOutputJSON(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		want string
	}{
		{`{"a":1}`, true, `{"a":1}`},
		{"  [1, 2]\n", true, `[1,2]`},
		{"```json\n{\"a\":1}\n```", true, `{"a":1}`},
		{"Sure:\n```JSON\n{\"a\":1}\n```", true, `{"a":1}`},
		{"```{\"a\":1}```", true, `{"a":1}`},
		{"```json{\"a\":1}```", true, `{"a":1}`},
		{"```json [1]```", true, `[1]`},
		{"```\ntrue\n```", true, `true`},
		{"```json\r\n{\"a\":1}\r\n```", true, `{"a":1}`},
		{`{"a":1} and more`, false, ""},
		{"```json\nnot json\n```", false, ""},
		{"plain text", false, ""},
	}
	for _, tt := range tests {
		v, err := outputJSON(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("outputJSON(%q): error %v, want ok %v", tt.in, err, tt.ok)
			continue
		}
		if tt.ok && compact(v) != tt.want {
			t.Errorf("outputJSON(%q) = %s, want %s", tt.in, compact(v), tt.want)
		}
	}
}
