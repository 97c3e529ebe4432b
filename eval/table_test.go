package eval

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

// renderReport is a report as a runner returns it: a case that passed,
// one that failed its trajectory, one whose judge could not score.
func renderReport() *Report {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	return &Report{
		Set: "support", Swarm: "desk", Config: "a.yaml", RunID: "eval-1",
		Cases: []CaseResult{
			{Case: "refund", Observed: Observed{RunID: "eval-1~refund", Status: "completed", Output: "Refunded order 42.", ModelCalls: 3, Tokens: 120, Duration: Duration(1500 * time.Millisecond)},
				Scores: []Score{{Name: "output", Value: 1, Threshold: 1, Pass: true, Label: "pass"}, {Name: "trajectory", Value: 1, Threshold: 1, Pass: true}}, Pass: true},
			{Case: "cancel", Observed: Observed{RunID: "eval-1~cancel", Status: "completed", Output: "Cancelled <now> & done. ]]> \x01", ModelCalls: 2, Tokens: 80, Duration: Duration(800 * time.Millisecond)},
				Scores: []Score{{Name: "trajectory", Value: 0.5, Threshold: 1, Label: "fail", Explanation: "missing call cancel_order(id=7)\nextra call refund(id=7)"}}},
			{Case: "tone", Observed: Observed{RunID: "eval-1~tone", Status: "completed"}, Error: "judge: answers stayed malformed after 3 tries",
				Scores: []Score{{Name: "polite", Error: "malformed answer"}}},
		},
		Passed: 1, Failed: 1, Errors: 1, PassRate: 1.0 / 3, Threshold: 0.9,
		Scores:     map[string]float64{"output": 1, "trajectory": 0.75},
		ModelCalls: 5, Tokens: 200, Started: t0, Ended: t0.Add(3 * time.Second),
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, renderReport()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"CASE", "refund", "PASS", "output=1.00 trajectory=1.00", "1.5s",
		"cancel", "FAIL", "trajectory=0.50✗",
		"tone", "ERROR", "polite=err",
		"cancel (fail, run eval-1~cancel):\n  trajectory 0.50 < 1.00: missing call cancel_order(id=7)\n    extra call refund(id=7)",
		"tone (error, run eval-1~tone):\n  error: judge: answers stayed malformed after 3 tries\n  polite: error: malformed answer",
		"FAIL: support against a.yaml: 1/3 passed (33.3%, threshold 90%), 1 failed, 1 errors; mean scores: output 1.00, trajectory 0.75; 5 model calls, 200 tokens, 3s (eval run eval-1)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "refund (") {
		t.Errorf("a passing case is explained:\n%s", out)
	}
}

func TestWriteJUnit(t *testing.T) {
	r := renderReport()
	other := renderReport()
	other.Config = "b.yaml"
	var b bytes.Buffer
	if err := WriteJUnit(&b, r, other); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Tests int    `xml:"tests,attr"`
			Cases []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				Time      string `xml:"time,attr"`
				Failure   *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Error *struct {
					Message string `xml:"message,attr"`
				} `xml:"error"`
				Out string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if doc.Tests != 6 || doc.Failures != 2 || doc.Errors != 2 || len(doc.Suites) != 2 {
		t.Fatalf("totals %d/%d/%d, %d suites:\n%s", doc.Tests, doc.Failures, doc.Errors, len(doc.Suites), b.String())
	}
	s := doc.Suites[1]
	if s.Name != "support [b.yaml]" || s.Tests != 3 || len(s.Cases) != 3 {
		t.Fatalf("suite %+v", s)
	}
	if c := s.Cases[0]; c.Name != "refund" || c.Classname != "support" || c.Time != "1.500" || c.Failure != nil || c.Error != nil || !strings.Contains(c.Out, "run: eval-1~refund") {
		t.Errorf("passing case %+v", c)
	}
	if c := s.Cases[1]; c.Failure == nil || c.Failure.Message != "trajectory 0.50 < 1.00" || !strings.Contains(c.Failure.Text, "missing call cancel_order(id=7)") ||
		!strings.Contains(c.Out, "Cancelled <now> & done. ]]> \uFFFD") {
		t.Errorf("failed case %+v", c)
	}
	if c := s.Cases[2]; c.Error == nil || c.Failure != nil || !strings.Contains(c.Error.Message, "malformed") {
		t.Errorf("erring case %+v", c)
	}
}

func TestWriteComparison(t *testing.T) {
	c := &Comparison{
		Base: "a.yaml", Other: "b.yaml", BaseRun: "eval-a", OtherRun: "eval-b",
		Cases: []CaseDelta{
			{Case: "refund", BasePass: true, OtherPass: true},
			{Case: "cancel", BasePass: false, OtherPass: true, Scores: map[string]float64{"trajectory": 0.5}, TrajectoryChanged: true,
				Diff: "- refund(id=7)\n+ cancel_order(id=7)"},
		},
		BasePassRate: 0.5, OtherPassRate: 1, PassRateDelta: 0.5, Fixed: 1, PassP: 1,
		Scores:  []ScoreDelta{{Name: "trajectory", N: 2, Base: 0.75, Other: 1, Delta: 0.25, P: 0.5}},
		Verdict: "no significant change: pass rate 50% -> 100% (1 fixed, 0 broken, McNemar p=1)",
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, c); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"base:  a.yaml (eval run eval-a)", "other: b.yaml (eval run eval-b)",
		"pass rate", "50%", "100%", "+50.0 pp",
		"trajectory  2", "0.75", "+0.25", "0.500",
		"1 fixed, 0 broken (McNemar p = 1)",
		"cancel", "FAIL", "trajectory +0.50", "trajectory\n",
		"cancel:\n  - refund(id=7)\n  + cancel_order(id=7)",
		"\nno significant change: pass rate 50% -> 100% (1 fixed, 0 broken, McNemar p=1)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "refund  pass") {
		t.Errorf("an unchanged case is listed:\n%s", out)
	}
}
