package config

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tidwall/gjson"
	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/workflow"
)

// The fields of a workflow, of one of its nodes, of an edge and of an
// edge's condition.
var (
	workflowFields = []string{"description", "start", "max_steps", "nodes", "edges", "guardrails"}
	nodeFields     = []string{"agent", "swarm", "human", "route", "routes", "schema", "asks", "retry", "timeout", "join", "loop", "for_each"}
	joinFields     = []string{"mode", "n", "limit", "tolerate"}
	nodeLoopFields = []string{"rounds", "until"}
	untilFields    = []string{"field", "equals", "agent"}
	forEachFields  = []string{"field", "limit"}
	routeFields    = []string{"agent", "tries", "field"}
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
	loop                *loopDef       // nil: runs once
	forEach             *forEachDef    // nil: runs on its input
	route               *routeDef      // a route node's
}

// loopDef repeats a node, at most rounds times, until the field of its
// output equals a value or an evaluator agent says it is done.
type loopDef struct {
	rounds   int
	field    string
	equals   any
	hasField bool
	agent    string
}

// forEachDef runs a node on each element of the list at field of its
// input, at most limit at a time (0: the runtime's MaxParallel).
type forEachDef struct {
	field string
	limit int
}

// routeDef runs one of routes, picked by a router agent or by the value
// of a field of the input.
type routeDef struct {
	agent, field string
	tries        int
	routes       []nodeDef
}

// edgeDef is an edge of a workflow, taken when its field equals its value
// (always without a condition).
type edgeDef struct {
	line     int
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
			p.lintGraph(w)
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
		if fd, ok := fs["route"]; ok {
			kinds++
			nd.route = p.route(fd.val, nw+": route", fs, taken)
		} else if fd, ok := fs["routes"]; ok {
			p.errf(fd.key, "%s: routes: only a route node has routes", nw)
		}
		if kinds != 1 {
			p.errf(k, "%s: want exactly one of agent, swarm, human and route", nw)
		}
		if fd, ok := fs["loop"]; ok && !isNull(fd.val) {
			nd.loop = p.loopNode(fd.val, nw+": loop")
		}
		if fd, ok := fs["for_each"]; ok && !isNull(fd.val) {
			nd.forEach = &forEachDef{}
			ffs := p.fields(fd.val, nw+": for_each", forEachFields)
			if f, ok := ffs["field"]; ok {
				nd.forEach.field = p.str(f.val, nw+": for_each", "field")
			}
			p.whole(ffs, nw+": for_each", "limit", 1, &nd.forEach.limit)
		}
		if (nd.loop != nil || nd.forEach != nil) && nd.agent == "" && nd.swarm == "" {
			p.errf(k, "%s: loop and for_each repeat an agent or swarm node", nw)
		}
		if nd.loop != nil && nd.forEach != nil {
			p.errf(k, "%s: a node has a loop or a for_each, not both (make two nodes)", nw)
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

// loopNode reads a node's loop: rounds and until (a field's value or an
// evaluator agent).
func (p *parser) loopNode(n *yaml.Node, what string) *loopDef {
	l := &loopDef{}
	fs := p.fields(n, what, nodeLoopFields)
	p.whole(fs, what, "rounds", 1, &l.rounds)
	if _, ok := fs["rounds"]; !ok {
		p.errf(n, "%s: missing rounds (a loop is bounded)", what)
	}
	fd, ok := fs["until"]
	if !ok {
		p.errf(n, "%s: missing until ({field, equals} or {agent})", what)
		return l
	}
	uw := what + ": until"
	ufs := p.fields(fd.val, uw, untilFields)
	if a, ok := ufs["agent"]; ok {
		if l.agent = p.str(a.val, uw, "agent"); l.agent != "" {
			p.agentRef(a.val, uw+": agent", l.agent)
		}
	}
	if f, ok := ufs["field"]; ok {
		l.field, l.hasField = p.str(f.val, uw, "field"), true
	}
	if eq, ok := ufs["equals"]; ok {
		l.hasField = true
		raw, at, err := toJSON(eq.val)
		if err == nil {
			err = json.Unmarshal(raw, &l.equals)
		}
		if err != nil {
			p.errf(at, "%s: equals: %v", uw, err)
		}
	} else if l.hasField {
		p.errf(fd.val, "%s: missing equals", uw)
	}
	if l.hasField == (l.agent != "") {
		p.errf(fd.val, "%s: want either field and equals or agent", uw)
	}
	return l
}

// route reads a route node: its picker and its routes, nodes of their own.
func (p *parser) route(n *yaml.Node, what string, node map[string]field, taken map[string]string) *routeDef {
	r := &routeDef{}
	fs := p.fields(n, what, routeFields)
	if a, ok := fs["agent"]; ok {
		if r.agent = p.str(a.val, what, "agent"); r.agent != "" {
			p.agentRef(a.val, what+": agent", r.agent)
		}
	}
	if f, ok := fs["field"]; ok {
		r.field = p.str(f.val, what, "field")
	}
	p.whole(fs, what, "tries", 1, &r.tries)
	if (r.agent == "") == (r.field == "") {
		p.errf(n, "%s: want either agent (a router) or field (whose value names the route)", what)
	}
	if r.tries > 0 && r.agent == "" {
		p.errf(fs["tries"].key, "%s: tries: only a router agent is asked again", what)
	}
	if fd, ok := node["routes"]; !ok || isNull(fd.val) {
		p.errf(n, "%s: missing routes", what)
	} else {
		r.routes = p.nodes(fd.val, strings.TrimSuffix(what, ": route")+": routes", taken)
		for _, o := range r.routes {
			if o.join != nil {
				p.errf(fd.val, "%s: routes: %s: a route is no join", what, o.name)
			}
		}
	}
	return r
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

// lintGraph reports what in w's graph cannot be meant: a node the start
// never reaches, an edge that can never hold (one that repeats an earlier
// edge, or whose when a human node's answer schema never allows) and a
// cycle with no way out, which every run would go round until max_steps.
func (p *parser) lintGraph(w *workflowDef) {
	at := func(line int) *yaml.Node { return &yaml.Node{Line: line} }
	out := map[string][]edgeDef{}
	for _, e := range w.edges {
		out[e.from] = append(out[e.from], e)
	}
	seen := map[string]bool{}
	todo := []string{w.start}
	for len(todo) > 0 {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if !seen[n] {
			seen[n] = true
			for _, e := range out[n] {
				todo = append(todo, e.to)
			}
		}
	}
	for _, n := range w.nodes {
		if !seen[n.name] {
			p.errf(at(n.line), "workflow %s: node %s cannot be reached from the start node %s", w.name, n.name, w.start)
		}
	}
	for i, e := range w.edges {
		for j, prev := range w.edges[:i] {
			if prev.from == e.from && prev.to == e.to && prev.when == e.when && prev.field == e.field && reflect.DeepEqual(prev.equals, e.equals) {
				p.errf(at(e.line), "workflow %s: edge %d repeats edge %d (from %s to %s): it can never add anything", w.name, i+1, j+1, e.from, e.to)
			}
		}
		if from, ok := w.node(e.from); ok && e.when && from.schema != nil {
			if why := neverEquals(from.schema, e.field, e.equals); why != "" {
				p.errf(at(e.line), "workflow %s: edge %d (from %s to %s) can never hold: %s", w.name, i+1, e.from, e.to, why)
			}
		}
	}
	for _, cycle := range closedCycles(w, out) {
		first, _ := w.node(cycle[0])
		p.errf(at(first.line), "workflow %s: the cycle %s has no way out (its nodes' edges hold always and stay in it): every run would go round until max_steps", w.name, strings.Join(append(cycle, cycle[0]), " → "))
	}
}

// neverEquals says why a field of an answer to schema can never equal
// value ("" when it may): the schema's property of that name does not
// allow the value, or the schema allows no such property.
func neverEquals(schema json.RawMessage, field string, value any) string {
	if field == "" || strings.ContainsAny(field, ".*?#|@\\") {
		return "" // not a plain property
	}
	props := gjson.GetBytes(schema, "properties")
	prop := props.Get(field)
	if !prop.Exists() {
		if props.Exists() && gjson.GetBytes(schema, "additionalProperties").Raw == "false" {
			return fmt.Sprintf("the answer schema has no property %s", field)
		}
		return ""
	}
	var sc jsonschema.Schema
	if json.Unmarshal([]byte(prop.Raw), &sc) != nil {
		return ""
	}
	rs, err := sc.Resolve(nil)
	if err != nil {
		return ""
	}
	if err := rs.Validate(value); err != nil {
		v, _ := json.Marshal(value)
		return fmt.Sprintf("the answer schema's %s never is %s (%v)", field, v, err)
	}
	return ""
}

// closedCycles returns the cycles of w's graph no run can leave: strongly
// connected nodes whose edges all hold always and stay among them, each in
// the order of its nodes in the file.
func closedCycles(w *workflowDef, out map[string][]edgeDef) [][]string {
	var cycles [][]string
	done := map[string]bool{}
	for _, n := range w.nodes {
		if done[n.name] {
			continue
		}
		// The nodes that reach n and that n reaches: its component.
		from := reachable(n.name, out)
		var comp []string
		for _, m := range w.nodes {
			if from[m.name] && reachable(m.name, out)[n.name] {
				comp = append(comp, m.name)
			}
		}
		closed := len(comp) > 0 && from[n.name]
		for _, m := range comp {
			done[m] = true
			for _, e := range out[m] {
				closed = closed && !e.when && slices.Contains(comp, e.to)
			}
		}
		if closed {
			cycles = append(cycles, comp)
		}
	}
	return cycles
}

// reachable returns the nodes reachable from from by one edge or more.
func reachable(from string, out map[string][]edgeDef) map[string]bool {
	seen := map[string]bool{}
	todo := []string{from}
	for len(todo) > 0 {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, e := range out[n] {
			if !seen[e.to] {
				seen[e.to] = true
				todo = append(todo, e.to)
			}
		}
	}
	return seen
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
		e := edgeDef{line: c.Line}
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
	w.build(g, func(n nodeDef) workflow.Step[json.RawMessage, json.RawMessage] { return nodeStep(n, byName, swarms) })
	return workflow.New(w.name, w.description, g.Step(), workflow.WithGuardrails(guardrails(w.guardrails)...))
}

// nodeStep makes node n: its agent, swarm, human or route, repeated by its
// loop or for_each, with its retries and timeout.
func nodeStep(n nodeDef, byName map[string]*swarm.Agent, swarms map[string]bool) workflow.Step[json.RawMessage, json.RawMessage] {
	// The step that does the work, under name.
	work := func(name string) workflow.Step[json.RawMessage, json.RawMessage] {
		switch {
		case n.agent != "":
			return node(workflow.Agent[string, json.RawMessage](byName[n.agent]).Named(name), n)
		case n.swarm != "" && swarms[n.swarm]:
			return node(workflow.SwarmID[json.RawMessage, json.RawMessage](n.swarm).Named(name), n)
		case n.swarm != "":
			return node(workflow.SwarmID[string, json.RawMessage](n.swarm).Named(name), n)
		case n.route != nil:
			var routes []workflow.Step[json.RawMessage, json.RawMessage]
			for _, r := range n.route.routes {
				routes = append(routes, nodeStep(r, byName, swarms))
			}
			pick := workflow.PickFunc(func(in json.RawMessage) string { return gjson.GetBytes(in, n.route.field).String() })
			if n.route.agent != "" {
				pick = workflow.PickAgent[json.RawMessage](byName[n.route.agent], n.route.tries)
			}
			return workflow.Route(name, pick, routes...)
		}
		schema := n.schema
		if schema == nil {
			schema = json.RawMessage(`{}`)
		}
		question := n.human
		return node(workflow.HumanSchema(name, n.asks, schema, func(in json.RawMessage) string {
			if txt, err := jsonText(in); err == nil && txt != "" {
				return question + "\n\n" + txt
			}
			return question
		}), n)
	}
	// A repeated node's work is named after its agent or swarm, under the
	// node's name, as in Go.
	target := cmp.Or(n.agent, n.swarm)
	switch {
	case n.loop != nil:
		until := workflow.UntilFunc(func(out json.RawMessage) bool { return workflow.FieldEquals(n.loop.field, n.loop.equals)(out) })
		if n.loop.agent != "" {
			until = workflow.UntilAgent[json.RawMessage](byName[n.loop.agent])
		}
		return workflow.Loop(n.name, n.loop.rounds, until, work(target))
	case n.forEach != nil:
		each := workflow.ForEachField(n.name, n.forEach.field, work(target))
		if n.forEach.limit > 0 {
			each = each.Limit(n.forEach.limit)
		}
		return each
	}
	return work(n.name)
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
			g.EdgeField(e.from, e.to, e.field, e.equals)
		} else {
			g.Edge(e.from, e.to)
		}
	}
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
