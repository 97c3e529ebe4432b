package config

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/workflow"
)

// The fields of a workflow, of one of its nodes, of an edge and of an
// edge's condition.
var (
	workflowFields = []string{"description", "start", "max_steps", "nodes", "edges", "guardrails"}
	nodeFields     = []string{"agent", "swarm", "human", "schema", "asks", "retry", "timeout", "join"}
	joinFields     = []string{"mode", "n", "limit", "tolerate"}
	edgeFields     = []string{"from", "to", "when"}
	whenFields     = []string{"field", "equals"}
)

// workflowDef is a checked workflow of the file: a graph of nodes.
type workflowDef struct {
	name, description string
	start             string
	maxSteps          int
	nodes             []nodeDef
	edges             []edgeDef
	guardrails        []*guardDef
}

// nodeDef is a node of a workflow: exactly one of agent, swarm and human.
type nodeDef struct {
	name                string
	line                int
	agent, swarm, human string
	schema              json.RawMessage
	asks, retry         int
	timeout             time.Duration
	join                *workflow.Join // nil: not a join
}

// edgeDef is an edge of a workflow, taken when its field equals its value
// (always without a condition).
type edgeDef struct {
	from, to string
	when     bool
	field    string
	equals   any
}

// WorkflowIDs returns the ids of the file's workflows, in the order of
// the file.
func (f *File) WorkflowIDs() []string {
	ids := make([]string, len(f.workflows))
	for i, w := range f.workflows {
		ids[i] = w.name
	}
	return ids
}

// workflows reads the workflows section. Workflows share the namespace of
// agents, swarms, conversations and teams; their nodes name agents and
// swarms (or teams, or other workflows) of the file.
func (p *parser) workflows(top map[string]field, f *File) []*workflowDef {
	var out []*workflowDef
	taken := map[string]string{}
	for _, c := range f.conversations {
		taken[c.name] = "a conversation"
	}
	for _, t := range f.teams {
		taken[t.name] = "a team"
	}
	entries := p.entries(top, "workflows", "workflow")
	for _, e := range entries {
		p.checkName(e.key, "workflow", e.name, maxName)
		if line, dup := p.agentLines[e.name]; dup {
			p.errf(e.key, "workflow %s: the name is already used by the agent defined at line %d (agents, swarms, conversations, teams and workflows share one namespace)", e.name, line)
		}
		if line, dup := p.swarmLines[e.name]; dup {
			p.errf(e.key, "workflow %s: the name is already used by the swarm defined at line %d (agents, swarms, conversations, teams and workflows share one namespace)", e.name, line)
		}
		if what, dup := taken[e.name]; dup {
			p.errf(e.key, "workflow %s: the name is already used by %s (agents, swarms, conversations, teams and workflows share one namespace)", e.name, what)
		}
	}
	for _, e := range entries {
		taken[e.name] = "a workflow"
	}
	for _, e := range entries {
		what := "workflow " + e.name
		fs := p.fields(e.val, what, workflowFields)
		w := &workflowDef{name: e.name}
		if fd, ok := fs["description"]; ok {
			w.description = p.str(fd.val, what, "description")
		}
		p.whole(fs, what, "max_steps", 1, &w.maxSteps)
		names := map[string]bool{}
		if fd, ok := fs["nodes"]; !ok || isNull(fd.val) {
			p.errf(e.key, "%s: missing nodes", what)
		} else {
			w.nodes = p.nodes(fd.val, what, taken)
			for _, n := range w.nodes {
				names[n.name] = true
			}
		}
		if fd, ok := fs["start"]; ok {
			w.start = p.str(fd.val, what, "start")
			if w.start != "" && len(names) > 0 && !names[w.start] {
				p.errf(fd.val, "%s: start: no node %q", what, w.start)
			}
		} else if len(w.nodes) > 0 {
			w.start = w.nodes[0].name
		}
		if fd, ok := fs["edges"]; ok && !isNull(fd.val) {
			w.edges = p.edges(fd.val, what, names)
		}
		if fd, ok := fs["guardrails"]; ok {
			w.guardrails = p.guardrailRefs(fd.val, what)
		}
		if len(p.errs) == 0 {
			p.checkGraph(e.key, w)
		}
		out = append(out, w)
	}
	return out
}

// nodes reads a workflow's nodes: a mapping from node name to its kind.
func (p *parser) nodes(n *yaml.Node, what string, taken map[string]string) []nodeDef {
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: nodes: want a mapping from node name to agent, swarm or human, got %s", what, describe(n))
		return nil
	}
	var out []nodeDef
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		nd := nodeDef{name: k.Value, line: k.Line}
		nw := what + ": node " + nd.name
		if k.Kind != yaml.ScalarNode || !p.checkName(k, "node", nd.name, maxName) {
			continue
		}
		if nd.name == "start" || nd.name == "end" || strings.Trim(nd.name, "0123456789") == "" {
			p.errf(k, "%s: the name %q cannot be a node's (start, end and numbers are keys of the journal)", what, nd.name)
			continue
		}
		if seen[nd.name] {
			p.errf(k, "%s: node %s is given twice", what, nd.name)
			continue
		}
		seen[nd.name] = true
		fs := p.fields(v, nw, nodeFields)
		kinds := 0
		if fd, ok := fs["agent"]; ok {
			kinds++
			if nd.agent = p.str(fd.val, nw, "agent"); nd.agent != "" {
				p.agentRef(fd.val, nw+": agent", nd.agent)
			}
		}
		if fd, ok := fs["swarm"]; ok {
			kinds++
			nd.swarm = p.str(fd.val, nw, "swarm")
			_, isSwarm := p.swarmLines[nd.swarm]
			switch kind := taken[nd.swarm]; {
			case nd.swarm == "" || isSwarm || kind == "a team" || kind == "a workflow":
			case kind == "a conversation":
				p.errf(fd.val, "%s: swarm: %q is a conversation, which cannot be a node (the runtime hands off only to swarms, teams and workflows)", nw, nd.swarm)
			default:
				p.errf(fd.val, "%s: swarm: unknown swarm, team or workflow %q (%s)", nw, nd.swarm, known(p.swarmNames, "swarms"))
			}
		}
		if fd, ok := fs["human"]; ok {
			kinds++
			nd.human = p.str(fd.val, nw, "human")
			if nd.human == "" {
				p.errf(fd.val, "%s: human: want the question to ask", nw)
			}
		}
		if kinds != 1 {
			p.errf(k, "%s: want exactly one of agent, swarm and human", nw)
		}
		if fd, ok := fs["schema"]; ok && !isNull(fd.val) {
			if nd.human == "" {
				p.errf(fd.key, "%s: schema: only a human node has an answer schema", nw)
			} else {
				nd.schema, _, _ = p.schema(fd.key, fd.val, nw+": schema")
			}
		}
		if _, ok := fs["asks"]; ok && nd.human == "" {
			p.errf(fs["asks"].key, "%s: asks: only a human node is asked", nw)
		}
		p.whole(fs, nw, "asks", 1, &nd.asks)
		p.whole(fs, nw, "retry", 0, &nd.retry)
		if fd, ok := fs["timeout"]; ok && !isNull(fd.val) {
			nd.timeout = p.duration(fd.val, nw, "timeout")
		}
		if fd, ok := fs["join"]; ok && !isNull(fd.val) {
			nd.join = p.join(fd.val, nw+": join")
		}
		out = append(out, nd)
	}
	return out
}

// join reads how a node joins the branches of a fork: all, first, or a
// mapping of mode, n (a quorum's), limit and tolerate.
func (p *parser) join(n *yaml.Node, what string) *workflow.Join {
	j := &workflow.Join{}
	fs := map[string]field{"mode": {val: n}}
	if deref(n).Kind == yaml.MappingNode {
		fs = p.fields(n, what, joinFields)
	}
	if fd, ok := fs["mode"]; ok {
		switch mode := p.str(fd.val, what, "mode"); mode {
		case "all":
		case "first":
			j.Mode = workflow.First
		case "quorum":
			j.Mode = workflow.Quorum
		default:
			p.errf(fd.val, "%s: mode: want all, first or quorum, got %q", what, mode)
		}
	}
	p.whole(fs, what, "n", 1, &j.N)
	p.whole(fs, what, "limit", 1, &j.Limit)
	if fd, ok := fs["tolerate"]; ok {
		j.Tolerate = p.boolean(deref(fd.val), what, "tolerate")
	}
	if (j.Mode == workflow.Quorum) != (j.N > 0) {
		p.errf(n, "%s: n is the quorum of mode quorum, which needs it", what)
	}
	if j.Tolerate && j.Mode != workflow.All {
		p.errf(n, "%s: tolerate is for mode all (first and quorum tolerate failures while enough branches may succeed)", what)
	}
	return j
}

// checkGraph reports what makes w's graph ambiguous (a fork whose
// branches do not meet at one join, a join no fork reaches: see
// workflow.Graph) at the line of the first node the reason names.
func (p *parser) checkGraph(at *yaml.Node, w *workflowDef) {
	g := workflow.NewGraph[string, string](w.name, w.start, w.maxSteps)
	w.build(g, func(n nodeDef) workflow.Step[json.RawMessage, json.RawMessage] {
		return workflow.Node(workflow.Func(n.name, func(_ context.Context, s string) (string, error) { return s, nil }))
	})
	_, err := workflow.New(w.name, "", g.Step())
	if err == nil {
		return
	}
	prefix := "graph " + w.name + ": "
	for _, line := range strings.Split(err.Error(), "\n") {
		_, reason, ok := strings.Cut(line, prefix)
		if !ok {
			reason = line
		}
		where := at
		for _, word := range nameWords.FindAllString(reason, -1) {
			if nd, ok := w.node(word); ok {
				where = &yaml.Node{Line: nd.line}
				break
			}
		}
		reason = strings.ReplaceAll(reason, "(Graph.Join)", "(join: on the node)")
		p.errf(where, "workflow %s: %s", w.name, reason)
	}
}

// nameWords are the words of a reason that may name a node.
var nameWords = regexp.MustCompile(`[A-Za-z0-9_-]+`)

// node returns w's node named name.
func (w *workflowDef) node(name string) (nodeDef, bool) {
	for _, n := range w.nodes {
		if n.name == name {
			return n, true
		}
	}
	return nodeDef{}, false
}

// edges reads a workflow's edges: a list of from, to and an optional when.
func (p *parser) edges(n *yaml.Node, what string, names map[string]bool) []edgeDef {
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "%s: edges: want a list of {from, to, when}, got %s", what, describe(n))
		return nil
	}
	var out []edgeDef
	for i, c := range n.Content {
		c = deref(c)
		ew := fmt.Sprintf("%s: edge %d", what, i+1)
		fs := p.fields(c, ew, edgeFields)
		var e edgeDef
		for _, end := range []struct {
			name string
			dst  *string
		}{{"from", &e.from}, {"to", &e.to}} {
			fd, ok := fs[end.name]
			if !ok {
				p.errf(c, "%s: missing %s", ew, end.name)
				continue
			}
			if *end.dst = p.str(fd.val, ew, end.name); *end.dst != "" && len(names) > 0 && !names[*end.dst] {
				p.errf(fd.val, "%s: %s: no node %q", ew, end.name, *end.dst)
			}
		}
		if fd, ok := fs["when"]; ok && !isNull(fd.val) {
			ww := ew + ": when"
			wfs := p.fields(fd.val, ww, whenFields)
			e.when = true
			if f, ok := wfs["field"]; ok {
				e.field = p.str(f.val, ww, "field")
			}
			if eq, ok := wfs["equals"]; !ok {
				p.errf(fd.val, "%s: missing equals", ww)
			} else {
				raw, at, err := toJSON(eq.val)
				if err == nil {
					err = json.Unmarshal(raw, &e.equals)
				}
				if err != nil {
					p.errf(at, "%s: equals: %v", ww, err)
				}
			}
		}
		out = append(out, e)
	}
	return out
}

// define makes the workflow: a graph with a text input and result, whose
// nodes take and give JSON.
func (w *workflowDef) define(byName map[string]*swarm.Agent, swarms map[string]bool) (swarm.Definition, error) {
	g := workflow.NewGraph[string, string](w.name, w.start, w.maxSteps)
	w.build(g, func(n nodeDef) workflow.Step[json.RawMessage, json.RawMessage] {
		switch {
		case n.agent != "":
			return node(workflow.Agent[string, json.RawMessage](byName[n.agent]).Named(n.name), n)
		case n.swarm != "" && swarms[n.swarm]:
			return node(workflow.SwarmID[json.RawMessage, json.RawMessage](n.swarm).Named(n.name), n)
		case n.swarm != "":
			return node(workflow.SwarmID[string, json.RawMessage](n.swarm).Named(n.name), n)
		}
		schema := n.schema
		if schema == nil {
			schema = json.RawMessage(`{}`)
		}
		question := n.human
		return node(workflow.HumanSchema(n.name, n.asks, schema, func(in json.RawMessage) string {
			if txt, err := jsonText(in); err == nil && txt != "" {
				return question + "\n\n" + txt
			}
			return question
		}), n)
	})
	return workflow.New(w.name, w.description, g.Step(), workflow.WithGuardrails(guardrails(w.guardrails)...))
}

// build adds w's nodes (as step makes each), edges and joins to g.
func (w *workflowDef) build(g *workflow.Graph[string, string], step func(nodeDef) workflow.Step[json.RawMessage, json.RawMessage]) {
	for _, n := range w.nodes {
		g.Add(step(n))
		if n.join != nil {
			g.Join(n.name, *n.join)
		}
	}
	for _, e := range w.edges {
		if e.when {
			g.EdgeLabeled(e.from, e.to, e.label(), workflow.FieldEquals(e.field, e.equals))
		} else {
			g.Edge(e.from, e.to)
		}
	}
}

// label is how e's condition reads on the workflow's drawing: "ok =
// true" ("= true" for the whole output).
func (e edgeDef) label() string {
	v, err := json.Marshal(e.equals)
	if err != nil {
		v = []byte("?")
	}
	return strings.TrimSpace(e.field + " = " + string(v))
}

// node makes s a graph node with n's retries and timeout.
func node[In any](s workflow.Step[In, json.RawMessage], n nodeDef) workflow.Step[json.RawMessage, json.RawMessage] {
	if n.retry > 0 {
		s = s.Retry(n.retry)
	}
	if n.timeout > 0 {
		s = s.Timeout(n.timeout)
	}
	return workflow.Node(s)
}

// jsonText is a JSON value as a human reads it: a string's text, any
// other value's JSON.
func jsonText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	if !json.Valid(raw) {
		return "", fmt.Errorf("not JSON")
	}
	return string(raw), nil
}

// jsonInput lists the file's swarms whose input is JSON (their node gets
// its input as JSON, the others as text).
func (f *File) jsonInput() map[string]bool {
	out := map[string]bool{}
	for _, s := range f.swarms {
		out[s.name] = s.inSchema != nil
	}
	for _, w := range f.workflows {
		out[w.name] = false
	}
	return out
}
