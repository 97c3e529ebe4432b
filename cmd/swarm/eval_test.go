package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/sqlite"
)

// evalFiles are a support desk (a conversation whose clerk calls a
// command tool that logs each invocation) with two scripted
// configurations, and eval sets against it: one that passes, one that
// fails its threshold, one whose cases err.
var evalFiles = map[string]string{
	"swarm.yaml": `version: 1
model: scripted:script.yaml
tools:
  refund:
    description: Refunds an order
    command: ["./refund.sh"]
    input_schema: {type: object, properties: {order: {type: string}}, required: [order]}
agents:
  clerk:
    description: Answers customers
    instructions: Help the customer.
    tools: [refund]
  judge:
    description: Grades answers
    instructions: Grade the answer.
conversations:
  desk:
    queen: clerk
swarms:
  plain:
    description: Not a conversation
    instructions: Answer.
`,
	"script.yaml": `clerk:
  - tool_calls: [{name: refund, arguments: {order: "1234"}}]
    delay: 150ms
  - text: Refunded order 1234, the money arrives in 3 days.
    delay: 150ms
judge:
  - &ok {text: '{"score": 0.9, "label": "kind", "explanation": "clear and kind"}'}
  - *ok
  - *ok
  - *ok
  - *ok
  - *ok
  - *ok
  - *ok
plain:
  - text: hello
`,
	// v2: the clerk answers without refunding.
	"v2.yaml": `version: 1
model: scripted:script-v2.yaml
tools:
  refund:
    description: Refunds an order
    command: ["./refund.sh"]
    input_schema: {type: object, properties: {order: {type: string}}, required: [order]}
agents:
  clerk:
    description: Answers customers
    instructions: Help the customer, briefly.
    tools: [refund]
  judge:
    description: Grades answers
    instructions: Grade the answer.
conversations:
  desk:
    queen: clerk
`,
	"script-v2.yaml": `clerk:
  - text: Please wait.
judge:
  - &bad {text: '{"score": 0.2, "label": "unhelpful", "explanation": "nothing was done"}'}
  - *bad
  - *bad
  - *bad
  - *bad
  - *bad
  - *bad
  - *bad
`,
	"refund.sh": `#!/bin/sh
set -eu
cat >/dev/null
echo "$SWARM_RUN_ID $SWARM_STEP_KEY" >> "$EFFECTS/invocations.log"
echo "refund issued"
`,
	"set.yaml": `name: support
swarm: desk
judge: judge
threshold: 0.75
cases:
  - id: c1
    tags: [refund]
    turns: [I was charged twice for order 1234]
    expect:
      trajectory: {calls: [{name: refund, args: {order: "1234"}}]}
      output: {contains: ["Refunded"]}
  - id: c2
    tags: [refund]
    turns: [Order 1234 was charged twice]
    expect:
      trajectory: {calls: [{name: refund}]}
  - id: c3
    turns: [Refund 1234 please]
    expect:
      rubrics: [{name: tone, criteria: Kind and clear}]
  - id: c4
    turns: [Double charge on 1234]
    expect:
      output: {regex: "3 days"}
`,
	// The same cases, two more, and a threshold of every case.
	"six.yaml": `name: six
swarm: desk
cases:
  - {id: s1, turns: [one], expect: {output: {contains: [Refunded]}}}
  - {id: s2, turns: [two], expect: {output: {contains: [Refunded]}}}
  - {id: s3, turns: [three], expect: {output: {contains: [Refunded]}}}
  - {id: s4, turns: [four], expect: {output: {contains: [Refunded]}}}
  - {id: s5, turns: [five], expect: {output: {contains: [Refunded]}}}
  - {id: s6, turns: [six], expect: {output: {contains: [Refunded]}}}
`,
	// Cases that cannot run: messages to a swarm that takes none.
	"broken.yaml": `name: broken
swarm: plain
cases:
  - {id: b1, turns: [hi], expect: {output: {contains: [hello]}}}
  - {id: b2, turns: [hi, again], expect: {output: {contains: [hello]}}}
`,
}

func evalDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, evalFiles)
	return dir
}

// evalJSON is swarm eval run --json's report, as much as the tests read.
type evalJSON struct {
	Set, Config    string
	RunID          string `json:"run_id"`
	Passed, Failed int
	Errors         int
	PassRate       float64 `json:"pass_rate"`
	Pass           bool
	Cases          []struct {
		Case     string
		Pass     bool
		Error    string
		Observed struct {
			RunID string `json:"run_id"`
		}
		Scores []struct {
			Name  string
			Value float64
			Pass  bool
		}
	}
}

// TestEvalRunExitCodes: swarm eval run exits 0 when the set reaches its
// threshold, 1 below it with cases that failed, 5 below it with cases
// that could not run, 2 for a set it cannot use; its --json report and
// its table say the same.
func TestEvalRunExitCodes(t *testing.T) {
	dir := evalDir(t)
	r := swarmIn(t, dir, nil, "", "eval", "run", "--json", "set.yaml")
	var rep evalJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("passing set: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if !rep.Pass || rep.Passed != 4 || len(rep.Cases) != 4 || rep.Cases[0].Observed.RunID == "" || len(rep.Cases[0].Scores) == 0 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(r.stderr, "[4/4]") {
		t.Errorf("no progress lines on stderr (not a terminal):\n%s", r.stderr)
	}

	r = swarmIn(t, dir, nil, "", "eval", "run", "--config", "v2.yaml", "set.yaml")
	if r.code != 1 {
		t.Fatalf("failing set: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"CASE", "FAIL", "trajectory=0.00✗", "FAIL: support against v2.yaml: 0/4 passed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}

	r = swarmIn(t, dir, nil, "", "eval", "run", "broken.yaml")
	if r.code != 5 || !strings.Contains(r.stdout, "ERROR") {
		t.Errorf("erring set: exit %d, want 5\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no set file", []string{"eval", "run", "missing.yaml"}, "missing.yaml"},
		{"unknown tag", []string{"eval", "run", "--tag", "nope", "set.yaml"}, "nope"},
		{"bad parallel", []string{"eval", "run", "--parallel", "-1", "set.yaml"}, "--parallel"},
		{"not an eval run", []string{"eval", "compare", "nope", "nope2"}, "nope"},
	} {
		if r := swarmIn(t, dir, nil, "", c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, want 2 with %q\n%s", c.name, r.code, c.want, r.stderr)
		}
	}
	write(t, dir, map[string]string{
		"nojudge.yaml": strings.Replace(evalFiles["set.yaml"], "judge: judge", "judge: nobody", 1),
		"noswarm.yaml": strings.Replace(evalFiles["set.yaml"], "swarm: desk", "swarm: nope", 1),
	})
	for file, want := range map[string]string{"nojudge.yaml": `"nobody"`, "noswarm.yaml": `"nope"`} {
		if r := swarmIn(t, dir, nil, "", "eval", "run", file); r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, want 2 naming %s\n%s", file, r.code, want, r.stderr)
		}
	}
	write(t, dir, map[string]string{"typo.yaml": "name: t\nswarm: desk\ncases:\n  - id: x\n    turns: [hi]\n    expect: {outptu: {}}\n"})
	if r := swarmIn(t, dir, nil, "", "eval", "run", "typo.yaml"); r.code != 2 || !strings.Contains(r.stderr, "typo.yaml") || !strings.Contains(r.stderr, "6") {
		t.Errorf("a set with a mistake: exit %d, want 2 naming file and line\n%s", r.code, r.stderr)
	}
}

// TestEvalCompareConfigs: two --config run the set against each and
// print the comparison; swarm eval compare prints it again from the
// store, and --json gives it as data.
func TestEvalCompareConfigs(t *testing.T) {
	dir := evalDir(t)
	r := swarmIn(t, dir, nil, "", "eval", "run", "--json", "--config", "swarm.yaml", "--config", "v2.yaml", "set.yaml")
	var out struct {
		Reports []struct {
			RunID  string `json:"run_id"`
			Config string
		}
		Comparisons []struct {
			Base, Other string
			Broken      int
			PassP       float64 `json:"pass_p"`
			Cases       []struct {
				Case                string
				BasePass, OtherPass bool
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 1 {
		t.Fatalf("exit %d (want 1: v2 fails), %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if len(out.Reports) != 2 || len(out.Comparisons) != 1 || out.Reports[0].Config != "swarm.yaml" || out.Reports[1].Config != "v2.yaml" {
		t.Fatalf("%+v", out)
	}
	c := out.Comparisons[0]
	if c.Base != "swarm.yaml" || c.Other != "v2.yaml" || c.Broken != 4 || len(c.Cases) != 4 || c.PassP <= 0 || c.PassP > 1 {
		t.Errorf("comparison %+v", c)
	}
	r = swarmIn(t, dir, nil, "", "eval", "compare", out.Reports[0].RunID, out.Reports[1].RunID)
	for _, want := range []string{"base:  swarm.yaml", "other: v2.yaml", "pass rate", "4 broken", "McNemar p ="} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("eval compare: exit %d, lacks %q\n%s\n%s", r.code, want, r.stdout, r.stderr)
		}
	}
	r = swarmIn(t, dir, nil, "", "eval", "ls")
	if r.code != 0 || strings.Count(r.stdout, "support") != 2 || !strings.Contains(r.stdout, "v2.yaml") {
		t.Errorf("eval ls: exit %d\n%s", r.code, r.stdout)
	}
}

// junitRead runs interop/junit's reader (a JUnit consumer from npm) on
// path; without node or its packages the test skips loudly, and fails in
// CI.
func junitRead(t *testing.T, path string) []byte {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "..", "interop", "junit"))
	_, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "test-results-parser")); err != nil || nodeErr != nil {
		msg := "!!! node or interop/junit/node_modules is missing: run (cd interop/junit && npm ci) to test against a JUnit reader !!!"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cmd := exec.Command("node", "read.mjs", path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("the JUnit reader refused %s: %v\n%s", path, err, stderr)
	}
	return out
}

// TestEvalJUnit: --junit writes a report that a JUnit reader from npm
// (test-results-parser, with the schema's rules checked) reads with the
// same totals and verdicts as the eval's report, one suite per
// configuration.
func TestEvalJUnit(t *testing.T) {
	dir := evalDir(t)
	path := filepath.Join(dir, "out", "junit.xml")
	r := swarmIn(t, dir, nil, "", "eval", "run", "--junit", path, "--config", "swarm.yaml", "--config", "v2.yaml", "set.yaml")
	if r.code != 1 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var got struct {
		Total, Passed, Failed, Errors int
		Suites                        []struct {
			Name                          string
			Total, Passed, Failed, Errors int
			Cases                         []struct{ Name, Status, Failure string }
		}
	}
	if err := json.Unmarshal(junitRead(t, path), &got); err != nil {
		t.Fatal(err)
	}
	if got.Total != 8 || got.Passed != 4 || got.Failed != 4 || len(got.Suites) != 2 {
		t.Fatalf("read as %+v", got)
	}
	if s := got.Suites[1]; s.Name != "support [v2.yaml]" || s.Failed != 4 || len(s.Cases) != 4 || s.Cases[0].Status != "FAIL" || !strings.Contains(s.Cases[0].Failure, "trajectory") {
		t.Errorf("v2 suite %+v", s)
	}
	if s := got.Suites[0]; s.Passed != 4 || s.Cases[2].Name != "c3" || s.Cases[2].Status != "PASS" {
		t.Errorf("swarm.yaml suite %+v", s)
	}
	// Errors are <error>, not <failure>.
	path = filepath.Join(dir, "broken.xml")
	if r := swarmIn(t, dir, nil, "", "eval", "run", "--junit", path, "broken.yaml"); r.code != 5 {
		t.Fatalf("broken: exit %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Errors int `xml:"errors,attr"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil || doc.Errors != 2 {
		t.Errorf("broken set's JUnit: errors=%d, %v\n%s", doc.Errors, err, b)
	}
	if err := json.Unmarshal(junitRead(t, path), &got); err != nil || got.Errors != 2 || got.Passed != 0 {
		t.Errorf("broken set read as %+v, %v", got, err)
	}
}

// TestEvalRunKilledContinues kills `swarm eval run` with SIGKILL once
// three of six cases have finished, then runs the same command again: it
// continues the same eval run, and no case that had finished runs again —
// no new record in its run's journal, no new model call (model_response
// records) or tool invocation for it — while the report has every case.
func TestEvalRunKilledContinues(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a real process")
	}
	dir := evalDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{"--lease", "500ms", "eval", "run", "--parallel", "1", "--json", "six.yaml"}
	cmd, errb, st := startWatched(ctx, t, dir, args...)
	var evalID string
	finished := map[string]bool{}
	for len(finished) < 3 {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for three cases\n%s", errb)
		}
		runs, _ := st.List(ctx, store.Filter{Swarm: "eval"})
		if len(runs) == 1 {
			evalID = runs[0].ID
			recs, _ := st.Read(ctx, evalID, 0, 0)
			for _, rec := range recs {
				if rec.Type == "eval_case" {
					var ev struct{ Target string }
					_ = json.Unmarshal(rec.Data, &ev)
					finished[ev.Target] = true
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	before := caseJournals(ctx, t, st, evalID)
	recsBefore, _ := st.Read(ctx, evalID, 0, 0)
	st.Close()
	invBefore := lines(t, filepath.Join(dir, "invocations.log"))
	if len(finished) >= 6 {
		t.Fatalf("the eval run finished before the kill: %v", finished)
	}

	r := swarmIn(t, dir, nil, "", args...)
	var rep evalJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("second command: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if rep.RunID != evalID || rep.Passed != 6 || len(rep.Cases) != 6 {
		t.Fatalf("second command reported %s with %d passed of %d, want eval run %s with 6", rep.RunID, rep.Passed, len(rep.Cases), evalID)
	}
	st2, err := sqlite.Open(ctx, filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	after := caseJournals(ctx, t, st2, evalID)
	// A finished case's run (a conversation, paused for its next message)
	// only gets its end when the eval run ends: nothing else is added.
	for c := range finished {
		id := evalID + ".case." + c
		b, a := before[id], after[id]
		if len(a) < len(b) {
			t.Fatalf("case %s: its run's journal shrank from %d to %d records", c, len(b), len(a))
		}
		for i := range b {
			if a[i].Key != b[i].Key || a[i].Type != b[i].Type {
				t.Errorf("case %s: record %d was %s %s, now %s %s", c, i+1, b[i].Type, b[i].Key, a[i].Type, a[i].Key)
			}
		}
		for _, rec := range a[len(b):] {
			if rec.Type != "stopped" {
				t.Errorf("case %s had finished before the kill, yet its run journaled %s %s after it", c, rec.Type, rec.Key)
			}
		}
	}
	inv := lines(t, filepath.Join(dir, "invocations.log"))
	for c := range finished {
		if n, m := countPrefix(invBefore, evalID+".case."+c+" "), countPrefix(inv, evalID+".case."+c+" "); n != 1 || m != 1 {
			t.Errorf("case %s: its tool ran %d time(s) before the kill and %d in all, want 1", c, n, m)
		}
	}
	// Every case's run made its two model calls once: none repeated, in
	// the finished cases or the others.
	for id, recs := range after {
		if n := countType(recs, "model_response"); n != 2 {
			t.Errorf("run %s: %d model calls journaled, want 2", id, n)
		}
	}
	recsAfter, _ := st2.Read(ctx, evalID, 0, 0)
	if countType(recsAfter, "eval_case") != 6 || countType(recsBefore, "eval_case") != len(finished) {
		t.Errorf("eval_case events: %d before the kill (%d finished), %d after, want 6", countType(recsBefore, "eval_case"), len(finished), countType(recsAfter, "eval_case"))
	}
	t.Logf("killed after %d of 6 cases; %d tool invocations before, %d after", len(finished), len(invBefore), len(inv))
}

// caseJournals reads the journals of eval run id's case runs.
func caseJournals(ctx context.Context, t *testing.T, st store.Store, id string) map[string][]store.Record {
	t.Helper()
	kids, err := st.List(ctx, store.Filter{Parent: id})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]store.Record{}
	for _, k := range kids {
		recs, err := st.Read(ctx, k.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[k.ID] = recs
	}
	return out
}

func countType(recs []store.Record, typ string) int {
	n := 0
	for _, r := range recs {
		if r.Type == typ {
			n++
		}
	}
	return n
}

func countPrefix(ls []string, prefix string) int {
	n := 0
	for _, l := range ls {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// TestEvalAdd: swarm eval add turns a recorded conversation into a case
// appended to a set file, keeping the file's comments; the set then loads
// and its case passes against the same configuration; a second case with
// the same id is refused, and without --to the case is printed.
func TestEvalAdd(t *testing.T) {
	dir := evalDir(t)
	if r := swarmIn(t, dir, nil, "I was charged twice for order 1234\n", "chat", "desk", "--id", "chat-1"); r.code != 0 || !strings.Contains(r.stdout, "Refunded") {
		t.Fatalf("chat: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	write(t, dir, map[string]string{"recorded.yaml": "# the recorded cases\nname: recorded\nswarm: desk\ncases:\n"})
	if r := swarmIn(t, dir, nil, "", "eval", "add", "--to", "recorded.yaml", "--id", "from-chat", "chat-1"); r.code != 0 {
		t.Fatalf("eval add: exit %d\n%s", r.code, r.stderr)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "recorded.yaml"))
	for _, want := range []string{"# the recorded cases\n", "  - id: from-chat\n", "      - I was charged twice for order 1234\n", "name: refund", "from: chat-1"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("recorded.yaml lacks %q:\n%s", want, b)
		}
	}
	if r := swarmIn(t, dir, nil, "", "eval", "add", "--to", "recorded.yaml", "--id", "from-chat", "chat-1"); r.code != 2 || !strings.Contains(r.stderr, "from-chat") {
		t.Errorf("a second case with the same id: exit %d\n%s", r.code, r.stderr)
	}
	r := swarmIn(t, dir, nil, "", "eval", "run", "--json", "recorded.yaml")
	var rep evalJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || rep.Passed != 1 {
		t.Errorf("the recorded case against the same configuration: exit %d %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "--file", "v2.yaml", "eval", "run", "--json", "recorded.yaml"); r.code != 1 {
		t.Errorf("the recorded case against v2, which does not refund: exit %d, want 1\n%s", r.code, r.stdout)
	}
	// A set file that does not exist yet is made, for the run's swarm.
	if r := swarmIn(t, dir, nil, "", "eval", "add", "--to", "new.eval.yaml", "chat-1"); r.code != 0 {
		t.Errorf("eval add to a new file: exit %d\n%s", r.code, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "eval", "run", "new.eval.yaml"); r.code != 0 || !strings.Contains(r.stdout, "PASS: new against") {
		t.Errorf("the new set: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "eval", "add", "chat-1"); r.code != 0 || !strings.HasPrefix(r.stdout, "- id: chat-1\n  turns:\n") {
		t.Errorf("eval add without --to prints the case: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "eval", "add", "nope"); r.code != 2 {
		t.Errorf("eval add of a run the store does not hold: exit %d\n%s", r.code, r.stderr)
	}
}

// otlpSpans is an OTLP/HTTP endpoint that keeps the spans it receives.
type otlpSpans struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpSpans) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attr(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// TestEvalScoresReachOTLP: with OpenTelemetry on (the standard
// variables), swarm eval run exports each score as a
// gen_ai.evaluation.result event on a span whose parent is the evaluated
// case run's invoke_agent span, in its trace.
func TestEvalScoresReachOTLP(t *testing.T) {
	col := &otlpSpans{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	dir := evalDir(t)
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_METRICS_EXPORTER=none"}
	r := swarmIn(t, dir, env, "", "eval", "run", "--json", "--config", "v2.yaml", "--tag", "refund", "set.yaml")
	var rep evalJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 1 {
		t.Fatalf("exit %d, %v\n%s", r.code, err, r.stderr)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	runSpans := map[string]*tracepb.Span{} // case run id -> its first invoke_agent span
	for _, s := range col.spans {
		if v := attr(s.Attributes, "gen_ai.conversation.id"); strings.HasPrefix(s.Name, "invoke_agent") && v != nil && runSpans[v.GetStringValue()] == nil {
			runSpans[v.GetStringValue()] = s
		}
	}
	for _, c := range rep.Cases {
		var ev *tracepb.Span
		for _, s := range col.spans {
			if s.Name == "evaluate "+c.Case {
				ev = s
			}
		}
		run := runSpans[c.Observed.RunID]
		if ev == nil || run == nil {
			t.Fatalf("case %s: evaluate span %v, run span %v (of %d spans)", c.Case, ev != nil, run != nil, len(col.spans))
		}
		if !bytes.Equal(ev.ParentSpanId, run.SpanId) || !bytes.Equal(ev.TraceId, run.TraceId) {
			t.Errorf("case %s: the evaluate span is not a child of its run's span", c.Case)
		}
		if len(ev.Events) != len(c.Scores) {
			t.Fatalf("case %s: %d events for %d scores", c.Case, len(ev.Events), len(c.Scores))
		}
		for i, e := range ev.Events {
			s := c.Scores[i]
			if e.Name != "gen_ai.evaluation.result" || attr(e.Attributes, "gen_ai.evaluation.name").GetStringValue() != s.Name ||
				attr(e.Attributes, "gen_ai.evaluation.score.value").GetDoubleValue() != s.Value || attr(e.Attributes, "gen_ai.evaluation.score.label") == nil {
				t.Errorf("case %s: event %d %s %v, want score %s %v", c.Case, i, e.Name, e.Attributes, s.Name, s.Value)
			}
		}
	}
}

// TestEvalRunInterrupted: SIGINT ends swarm eval run with 130 and says
// how the eval run continues; the same command then finishes it.
func TestEvalRunInterrupted(t *testing.T) {
	dir := evalDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd, errb, st := startWatched(ctx, t, dir, "--lease", "500ms", "eval", "run", "--parallel", "1", "six.yaml")
	for {
		runs, _ := st.List(ctx, store.Filter{Swarm: "eval"})
		if len(runs) == 1 && runs[0].LastSeq > 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the eval run did not start\n%s", errb)
		}
		time.Sleep(5 * time.Millisecond)
	}
	st.Close()
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(errb.String(), "continues when the same command runs again") {
		t.Fatalf("exit %d, want 130\n%s", code, errb)
	}
	if r := swarmIn(t, dir, nil, "", "--lease", "500ms", "eval", "run", "--parallel", "1", "six.yaml"); r.code != 0 || !strings.Contains(r.stdout, "6/6 passed") {
		t.Errorf("the same command again: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestEvalProgressBarOnATerminal: on a terminal (script(1) gives the
// command one), swarm eval run draws one bar redrawn in place as cases
// finish, rather than a line per case.
func TestEvalProgressBarOnATerminal(t *testing.T) {
	scriptCmd, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to run the command on a terminal")
	}
	dir := evalDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, scriptCmd, "-qec", binary+" eval run set.yaml >/dev/null", "/dev/null")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWARM_STORE=sqlite:"+filepath.Join(dir, "runs.db"), "EFFECTS="+dir, "SWARM_MODEL=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%q", err, out)
	}
	s := string(out)
	if n := strings.Count(s, "\r\033[K["); n != 4 || !strings.Contains(s, "[########################] 4/4  4 passed  0 failed  0 errors") || strings.Contains(s, "[1/4]") {
		t.Errorf("%d bars drawn in place, want one per case ending full, and no per-case lines:\n%q", n, s)
	}
}
