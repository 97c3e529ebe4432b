package config

import (
	"strings"
	"testing"
)

// Mistakes in a workflow are reported with their line.
func TestWorkflowMistakes(t *testing.T) {
	base := "version: 1\nagents:\n  writer: {instructions: Write.}\nswarms:\n  pub: {instructions: Publish.}\nconversations:\n  desk: {queen: writer}\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"two kinds", "workflows:\n  w:\n    nodes:\n      a: {agent: writer, human: Ready}\n", "want exactly one of agent, swarm, human and route"},
		{"unknown agent", "workflows:\n  w:\n    nodes:\n      a: {agent: nobody}\n", `unknown agent "nobody"`},
		{"conversation", "workflows:\n  w:\n    nodes:\n      a: {swarm: desk}\n", "is a conversation, which cannot be a node"},
		{"reserved", "workflows:\n  w:\n    nodes:\n      start: {agent: writer}\n", `the name "start" cannot be a node's`},
		{"digits", "workflows:\n  w:\n    nodes:\n      \"12\": {agent: writer}\n", `the name "12" cannot be a node's`},
		{"bad start", "workflows:\n  w:\n    start: b\n    nodes:\n      a: {agent: writer}\n", `start: no node "b"`},
		{"edge", "workflows:\n  w:\n    nodes:\n      a: {agent: writer}\n    edges:\n      - {from: a, to: b}\n", `edge 1: to: no node "b"`},
		{"when", "workflows:\n  w:\n    nodes:\n      a: {agent: writer}\n    edges:\n      - {from: a, to: a, when: {field: ok}}\n", "when: missing equals"},
		{"schema", "workflows:\n  w:\n    nodes:\n      a: {agent: writer, schema: {type: object}}\n", "only a human node has an answer schema"},
		{"namespace", "workflows:\n  pub:\n    nodes:\n      a: {agent: writer}\n", "workflow pub: the name is already used by the swarm"},
		{"guardrail", "workflows:\n  w:\n    guardrails: [nope]\n    nodes:\n      a: {agent: writer}\n", `unknown guardrail "nope"`},
		{"timeout", "workflows:\n  w:\n    nodes:\n      a: {agent: writer, timeout: soon}\n", `invalid timeout "soon"`},
	} {
		_, err := Parse([]byte(base+c.yaml), "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
