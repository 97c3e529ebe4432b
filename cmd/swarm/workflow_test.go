package main_test

import (
	"encoding/json"
	"maps"
	"strings"
	"syscall"
	"testing"
)

// articleFiles is a workflow of four nodes: an agent, a slow agent, a
// human with an answer schema and an agent.
var articleFiles = map[string]string{
	"swarm.yaml": `version: 1
model: scripted:script.yaml
agents:
  outline: {instructions: Outline.}
  writer: {instructions: Write.}
  editor: {instructions: Edit.}
workflows:
  article:
    description: outlines, writes slowly, asks, edits
    max_steps: 10
    nodes:
      plan: {agent: outline}
      draft: {agent: writer}
      approve:
        human: Publish it?
        schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
      edit: {agent: editor}
    edges:
      - {from: plan, to: draft}
      - {from: draft, to: approve}
      - {from: approve, to: edit, when: {field: ok, equals: true}}
`,
	"script.yaml": `outline:
  - text: three parts
writer:
  - text: a long draft
    delay: 3s
editor:
  - text: the final article
`,
}

// A workflow from swarm.yaml killed with SIGKILL mid-graph continues at
// its unfinished node under swarm recover (the finished node does not run
// again), pauses at its human node, refuses an answer that breaks the
// schema and takes the next, each given by another process.
func TestWorkflowKilledRecoveredAnswered(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, articleFiles)
	code, _, stderr := signalOn(t, dir, syscall.SIGKILL, "⇒ writer", false, "run", "--lease", "2s", "--id", "w1", "article", "bees")
	if code != -1 && code != 137 {
		t.Fatalf("swarm run exit %d, want killed\n%s", code, stderr)
	}
	r := swarmIn(t, dir, nil, "", "recover", "--lease", "2s")
	if r.code != 0 || !strings.Contains(r.stdout, `"paused"`) {
		t.Fatalf("recover: exit %d %s\n%s", r.code, r.stdout, r.stderr)
	}
	status := func(out string) (st struct{ State, Reason, Context string }) {
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status %q: %v", out, err)
		}
		return st
	}
	r = swarmIn(t, dir, nil, "", "status", "w1")
	if st := status(r.stdout); st.State != "paused" || st.Reason != "Publish it?\n\na long draft" || !strings.Contains(st.Context, `"boolean"`) {
		t.Fatalf("after recover: %+v, want paused at the human node with its schema", st)
	}
	// Its progress is in nodes, not turns, in status and ls.
	if want := `"progress":{"done":2,"total":4,"at":"article/approve"}`; !strings.Contains(r.stdout, want) {
		t.Errorf("status %s, want %s", r.stdout, want)
	}
	if r = swarmIn(t, dir, nil, "", "ls"); !strings.Contains(r.stdout, "PROGRESS") || !strings.Contains(r.stdout, " 2/4 ") {
		t.Errorf("ls:\n%s\nwant the run at 2/4 nodes", r.stdout)
	}
	r = swarmIn(t, dir, nil, "", "resume", "w1", `{"ok": "sure"}`)
	if st := status(r.stdout); r.code != 3 || !strings.Contains(st.Reason, "the answer was refused") {
		t.Fatalf("resume with a wrong answer: exit %d %+v, want asked again with the reason", r.code, st)
	}
	r = swarmIn(t, dir, nil, "", "resume", "w1", `{"ok": true}`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != `"the final article"` {
		t.Fatalf("resume: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	seen := map[string]int{}
	for _, rec := range readJournal(t, dir, "w1") {
		seen[rec.Type+" "+rec.Key]++
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("%s journaled %d times", k, n)
		}
	}
	for _, node := range []string{"plan", "draft", "edit"} {
		if k := "model_response article/" + node + "/h/next/t1/model"; seen[k] != 1 {
			t.Errorf("%s journaled %d times, want once: %v", k, seen[k], seen)
		}
	}
}

// boundFiles has a workflow whose graph cycles (a writer and a critic who
// never approves) and one whose node loops on itself (an editor never
// done), each bounded by its max_steps.
var boundFiles = map[string]string{
	"swarm.yaml": `version: 1
model: scripted:script.yaml
agents:
  writer: {instructions: Write.}
  critic: {instructions: Criticise in JSON.}
  editor: {instructions: Edit in JSON.}
workflows:
  review:
    max_steps: 5
    nodes:
      write: {agent: writer}
      judge: {agent: critic}
    edges:
      - {from: write, to: judge}
      - {from: judge, to: write, when: {field: ok, equals: false}}
  polish:
    max_steps: 3
    nodes:
      edit: {agent: editor}
    edges:
      - {from: edit, to: edit, when: {field: done, equals: false}}
`,
	"script.yaml": `writer:
  - text: draft 1
  - text: draft 2
  - text: draft 3
critic:
  - text: '{"ok": false}'
  - text: '{"ok": false}'
  - text: '{"ok": false}'
editor:
  - text: '{"done": false}'
  - text: '{"done": false}'
  - text: '{"done": false}'
`,
}

// A YAML workflow whose graph cycles, and one whose node loops on itself,
// end at their bound through swarm run: exit code 1, and a reason that
// names the bound and the node it would have run, which ran no more than
// the bound allows.
func TestWorkflowBoundsCLI(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, boundFiles)
	for _, c := range []struct {
		id, workflow, reason string
		runs                 map[string]int // model calls per agent
	}{
		{"c1", "review", "graph review: stopped at its bound of 5 steps before running node judge again", map[string]int{"writer": 3, "critic": 2}},
		{"l1", "polish", "graph polish: stopped at its bound of 3 steps before running node edit again", map[string]int{"editor": 3}},
	} {
		r := swarmIn(t, dir, nil, "", "run", "--id", c.id, c.workflow, "bees")
		var st struct{ State, Reason string }
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("%s: status %q: %v\n%s", c.workflow, r.stdout, err, r.stderr)
		}
		if r.code != 1 || st.State != "failed" || st.Reason != c.reason {
			t.Errorf("%s: exit %d %+v, want exit 1, failed with %q\n%s", c.workflow, r.code, st, c.reason, r.stderr)
		}
		if !strings.Contains(r.stderr, c.reason) {
			t.Errorf("%s: stderr %q does not give the reason", c.workflow, r.stderr)
		}
		runs := map[string]int{}
		for _, rec := range readJournal(t, dir, c.id) {
			var ev struct{ Agent string }
			if rec.Type == "model_response" && json.Unmarshal(rec.Data, &ev) == nil {
				runs[ev.Agent]++
			}
		}
		if !maps.Equal(runs, c.runs) {
			t.Errorf("%s: model calls %v, want %v", c.workflow, runs, c.runs)
		}
	}
}

// fanFiles is a YAML fan-out of three reviews into a join: legal answers
// at once, brand after a second and tone after three.
var fanFiles = map[string]string{
	"swarm.yaml": `version: 1
model: scripted:script.yaml
agents:
  draft: {instructions: Draft.}
  legal: {instructions: Check the law.}
  brand: {instructions: Check the brand.}
  tone: {instructions: Check the tone.}
  editor: {instructions: Merge the reviews.}
workflows:
  launch:
    nodes:
      write: {agent: draft}
      legal: {agent: legal}
      brand: {agent: brand}
      tone: {agent: tone}
      merge: {agent: editor, join: all}
    edges:
      - {from: write, to: legal}
      - {from: write, to: brand}
      - {from: write, to: tone}
      - {from: legal, to: merge}
      - {from: brand, to: merge}
      - {from: tone, to: merge}
`,
	"script.yaml": `draft:
  - text: the draft
legal:
  - text: lawful
brand:
  - text: on brand
    delay: 1s
tone:
  - text: friendly
    delay: 3s
editor:
  - text: merged
`,
}

// swarm run of a YAML fan-out killed with SIGKILL while a branch runs
// (two finished) is finished by swarm recover in another process: the
// unfinished branch runs, the join runs on all three, and no finished
// branch runs again.
func TestWorkflowFanOutKilledRecovered(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, fanFiles)
	code, _, stderr := signalOn(t, dir, syscall.SIGKILL, "⇐ brand", false, "run", "--lease", "2s", "--id", "f1", "launch", "a product")
	if code != -1 && code != 137 {
		t.Fatalf("swarm run exit %d, want killed\n%s", code, stderr)
	}
	r := swarmIn(t, dir, nil, "", "recover", "--lease", "2s")
	if r.code != 0 || !strings.Contains(r.stdout, `"completed"`) {
		t.Fatalf("recover: exit %d %s\n%s", r.code, r.stdout, r.stderr)
	}
	seen := map[string]int{}
	var joinIn string
	for _, rec := range readJournal(t, dir, "f1") {
		seen[rec.Type+" "+rec.Key]++
		if rec.Type == "handoff_started" && rec.Key == "launch/merge/call/next" {
			joinIn = string(rec.Data)
		}
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("%s journaled %d times", k, n)
		}
	}
	for _, node := range []string{"write", "legal", "brand", "tone", "merge"} {
		if k := "model_response launch/" + node + "/h/next/t1/model"; seen[k] != 1 {
			t.Errorf("%s journaled %d times, want once: %v", k, seen[k], seen)
		}
	}
	for _, out := range []string{"lawful", "on brand", "friendly"} {
		if !strings.Contains(joinIn, out) {
			t.Errorf("the join was asked %s, want every branch's output (%s among them)", joinIn, out)
		}
	}
}
