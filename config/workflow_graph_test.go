package config_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
)

// fanFile has a diamond, a fan-out of three and a fan-in with each join
// mode, of agents the script answers.
const fanFile = `
version: 1
model: scripted:script.yaml
agents:
  a: {instructions: A.}
  b: {instructions: B.}
  c: {instructions: C.}
  d: {instructions: D.}
  e: {instructions: E.}
  k: {instructions: Classify.}
  slow: {instructions: Slow.}
workflows:
  diamond:
    nodes:
      a: {agent: a}
      b: {agent: b}
      c: {agent: c}
      d: {agent: d, join: all}
    edges:
      - {from: a, to: b}
      - {from: a, to: c}
      - {from: b, to: d}
      - {from: c, to: d}
  three:
    nodes:
      a: {agent: a}
      b: {agent: b}
      c: {agent: c}
      e: {agent: e}
      d: {agent: d, join: {mode: quorum, n: 3, limit: 2}}
    edges:
      - {from: a, to: b}
      - {from: a, to: c}
      - {from: a, to: e}
      - {from: b, to: d}
      - {from: c, to: d}
      - {from: e, to: d}
  first:
    nodes:
      a: {agent: a}
      b: {agent: b}
      s: {agent: slow}
      d: {agent: d, join: first}
    edges:
      - {from: a, to: b}
      - {from: a, to: s}
      - {from: b, to: d}
      - {from: s, to: d}
  choice:
    nodes:
      k: {agent: k}
      b: {agent: b}
      c: {agent: c}
      d: {agent: d}
    edges:
      - {from: k, to: b, when: {field: kind, equals: bug}}
      - {from: k, to: c, when: {field: kind, equals: question}}
      - {from: b, to: d}
      - {from: c, to: d}
`

// Each agent answers with its name; slow takes its time.
const fanScript = `
a: [{text: A}]
b: [{text: B}]
c: [{text: C}]
e: [{text: E}]
k: [{text: '{"kind": "question"}'}]
slow: [{text: S, delay: 1m}]
d: [{text: D}]
`

// A diamond, a fan-out of three and a first join in swarm.yaml run every
// branch they should, and their joins get the branches' outputs by node.
func TestWorkflowFanOutYAML(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "swarm.yaml", fanFile, 0o644)
	write(t, dir, "script.yaml", fanScript, 0o644)
	_, rt := loadFile(t, path)
	ctx := ctxT(t)
	for _, tc := range []struct {
		id   string
		asks []string // the agents asked, sorted
		join string   // what d was asked
	}{
		{"diamond", []string{"a", "b", "c", "d"}, `{"b":"B","c":"C"}`},
		{"three", []string{"a", "b", "c", "d", "e"}, `{"b":"B","c":"C","e":"E"}`},
		{"first", []string{"a", "b", "d"}, `{"b":"B"}`}, // slow may be stopped before it starts
	} {
		id, err := rt.Start(ctx, tc.id, json.RawMessage(`"go"`))
		if err != nil {
			t.Fatal(err)
		}
		st, err := rt.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State != swarm.StateCompleted || string(st.Result) != `"D"` {
			t.Errorf("%s: state %s (%s) result %s, want D", tc.id, st.State, st.Reason, st.Result)
		}
		var asked []string
		var joinIn string
		evs, _ := rt.History(ctx, id, 0)
		for _, ev := range evs {
			if ev.Type == swarm.EventHandoffStarted && ev.Target != "slow" {
				asked = append(asked, ev.Target)
				if ev.Target == "d" {
					joinIn = ev.Request
				}
			}
		}
		slices.Sort(asked)
		if !slices.Equal(asked, tc.asks) || !strings.Contains(joinIn, tc.join) {
			t.Errorf("%s: asked %v (d with %q), want %v (d with %s)", tc.id, asked, joinIn, tc.asks, tc.join)
		}
	}
}

// Edges on one field with different values are a choice: the workflow
// loads without a join and runs only the edge that holds.
func TestWorkflowFieldChoiceYAML(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "swarm.yaml", fanFile, 0o644)
	write(t, dir, "script.yaml", fanScript, 0o644)
	_, rt := loadFile(t, path)
	ctx := ctxT(t)
	id, err := rt.Start(ctx, "choice", json.RawMessage(`"go"`))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted || string(st.Result) != `"D"` {
		t.Fatalf("%v %+v, want D", err, st)
	}
	evs, _ := rt.History(ctx, id, 0)
	for _, ev := range evs {
		if ev.Type == swarm.EventHandoffStarted && ev.Target == "b" {
			t.Errorf("b ran, though its edge did not hold")
		}
	}
}

// A fan-out whose branches meet at a node that is not a join is refused
// with the file and the line of the fork.
func TestWorkflowAmbiguousYAML(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"no join", strings.Replace(fanFile, "d: {agent: d, join: all}", "d: {agent: d}", 1),
			"swarm.yaml:14: workflow diamond: the branches of the fork at a (b, c) meet at d: declare how d joins them"},
		{"three unconditional edges", `
version: 1
agents:
  w: {instructions: W.}
workflows:
  review:
    nodes:
      draft: {agent: w}
      legal: {agent: w}
      brand: {agent: w}
      tone: {agent: w}
    edges:
      - {from: draft, to: legal}
      - {from: draft, to: brand}
      - {from: draft, to: tone}
`, "swarm.yaml:7: workflow review: the branches of the fork at draft (legal, brand, tone) never meet"},
	} {
		dir := t.TempDir()
		path := write(t, dir, "swarm.yaml", tc.yaml, 0o644)
		write(t, dir, "script.yaml", fanScript, 0o644)
		_, err := config.Load(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
