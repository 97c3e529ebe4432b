package config_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/swarmtest/strategytest"
)

// parityFile has, in YAML, what the Go API composes: a loop a field ends,
// a loop an evaluator ends, a route a router picks and one a field picks,
// a for-each over a list field, a workflow as a node of another, and a
// human node.
const parityFile = `
version: 1
agents:
  planner: {instructions: Plan.}
  editor: {instructions: Edit.}
  judge: {instructions: Judge.}
  router: {instructions: Route.}
  fixer: {instructions: Fix.}
  helper: {instructions: Help.}
  translator: {instructions: Translate.}
workflows:
  inner:
    nodes:
      help: {agent: helper}
  outer:
    nodes:
      plan: {agent: planner}
      polish:
        agent: editor
        loop: {rounds: 3, until: {field: done, equals: true}}
      review:
        agent: editor
        loop: {rounds: 3, until: {agent: judge}}
      triage:
        route: {agent: router, tries: 2}
        routes:
          bug: {agent: fixer}
          other: {swarm: inner}
      kind:
        route: {field: lang}
        routes:
          many:
            agent: translator
            for_each: {field: langs, limit: 2}
          none: {swarm: inner}
      ok:
        human: Ship it?
        schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
    edges:
      - {from: plan, to: polish}
      - {from: polish, to: review}
      - {from: review, to: triage}
      - {from: triage, to: kind}
      - {from: kind, to: ok}
`

// parityScript plays the agents of parityFile once through.
var parityScript = scripted.Script{
	"planner":    {scripted.Text("the plan")},
	"editor":     {scripted.Text(`{"done": false}`), scripted.Text(`{"done": true}`), scripted.Text("v1"), scripted.Text("v2")},
	"judge":      {scripted.Text("more"), scripted.Text("DONE")},
	"router":     {scripted.Text("maybe"), scripted.Text("other")},
	"helper":     {scripted.Text(`{"lang": "many", "langs": ["fr", "de", "it"]}`)},
	"translator": {scripted.Text("t"), scripted.Text("t"), scripted.Text("t")},
}

// yamlDefs loads file and returns its definitions.
func yamlDefs(t *testing.T, file string) []swarm.Definition {
	t.Helper()
	_, rt := loadFile(t, write(t, t.TempDir(), "swarm.yaml", file, 0o644))
	return rt.Swarms()
}

// A YAML loop (both kinds), route (both kinds), for-each, nested workflow
// and human node pass the conformance kit: killed after every journal
// record and recovered, on every store, the run ends the same and nothing
// finished runs again; their keys are those the Go API gives.
func TestConformanceYAMLParity(t *testing.T) {
	strategytest.Run(t, strategytest.Case{
		Definitions: yamlDefs(t, parityFile),
		Swarm:       "outer",
		Input:       json.RawMessage(`"go"`),
		Script:      parityScript,
		Answers:     []string{`{"ok": true}`},
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			st, _ := rt.Status(context.Background(), id)
			if string(st.Result) != `"{\"ok\": true}"` {
				t.Errorf("result %s, want the human's answer", st.Result)
			}
			var ks []string
			for _, ev := range swarmtest.Events(t, rt, id) {
				if ev.Type == swarm.EventHandoffStarted || ev.Type == swarm.EventPaused {
					ks = append(ks, ev.Key)
				}
			}
			want := "outer/plan/call/next outer/polish/1/editor/call/next outer/polish/2/editor/call/next " +
				"outer/review/1/editor/call/next outer/review/1/until/call/next outer/review/2/editor/call/next outer/review/2/until/call/next " +
				"outer/triage/router/1/call/next outer/triage/router/2/call/next outer/triage/other/call/next " +
				"outer/kind/many/0/translator/call/next outer/kind/many/1/translator/call/next outer/kind/many/2/translator/call/next outer/ok"
			got := strings.Join(ks, " ")
			for _, k := range strings.Fields(want) {
				if !strings.Contains(got, k) {
					t.Errorf("no %s among %s", k, got)
				}
			}
		},
	})
}

// Loading a workflow reports, with the file and the line, a node the start
// never reaches, edges that can never hold and a cycle with no way out.
func TestWorkflowLint(t *testing.T) {
	head := "version: 1\nagents:\n  w: {instructions: W.}\nworkflows:\n  flow:\n    nodes:\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"unreachable", head + "      a: {agent: w}\n      b: {agent: w}\n", "swarm.yaml:8: workflow flow: node b cannot be reached from the start node a"},
		{"repeated edge", head + "      a: {agent: w}\n      b: {agent: w}\n    edges:\n      - {from: a, to: b}\n      - {from: a, to: b}\n",
			"swarm.yaml:11: workflow flow: edge 2 repeats edge 1 (from a to b)"},
		{"schema", head + "      a:\n        human: OK?\n        schema: {type: object, properties: {ok: {type: boolean}}}\n      b: {agent: w}\n    edges:\n      - {from: a, to: b, when: {field: ok, equals: yes}}\n",
			`swarm.yaml:12: workflow flow: edge 1 (from a to b) can never hold: the answer schema's ok never is "yes"`},
		{"closed cycle", head + "      a: {agent: w}\n      b: {agent: w}\n      c: {agent: w}\n    edges:\n      - {from: a, to: b}\n      - {from: b, to: c}\n      - {from: c, to: b}\n",
			"swarm.yaml:8: workflow flow: the cycle b → c → b has no way out"},
		{"loop without rounds", head + "      a: {agent: w, loop: {until: {field: done, equals: true}}}\n", "missing rounds (a loop is bounded)"},
		{"route without routes", head + "      a: {route: {field: kind}}\n", "missing routes"},
	} {
		path := write(t, t.TempDir(), "swarm.yaml", c.yaml, 0o644)
		_, err := config.Load(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
