package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/strategy"
)

// DefaultMaxSteps bounds a [Graph] made with maxSteps 0.
const DefaultMaxSteps = 100

// Graph is a workflow as a graph of named nodes. It runs its start node
// on its input and then, after each node, takes every edge of the node
// whose condition holds for its output, with that output as the next
// node's input:
//
//   - an edge without a condition (Edge) holds always, unless an edge
//     with a condition was added before it from the same node: then it
//     is an "otherwise" edge and holds only when none of the node's
//     conditional edges does;
//   - when several edges hold, their targets run in parallel, each the
//     first node of a branch: the node is a fork. Its branches must meet
//     at one node, the fork's join, declared with [Graph.Join] (its mode:
//     all of the branches that were started, the first, a quorum) or
//     [Graph.JoinReduce]; the join runs once, on the outputs of the
//     branches it took (a JSON object from the name of each branch's last
//     node to its output, or what the reducer makes of them);
//   - a node none of whose edges holds ends the graph with its output (a
//     branch that ends so before its join fails).
//
// A graph whose meaning would be ambiguous is refused when it is made
// ([Graph.Step]), with a reason that names the nodes: branches of a fork
// that never meet or first meet at several nodes, a node on two branches,
// an edge into a branch or a join from outside its fork, a fork whose
// join is not declared, a join no fork reaches.
//
// Edges may form cycles: a graph runs at most its max steps nodes in all,
// and reaching that bound fails it with a reason that names the bound and
// the node it would have run.
//
// Nodes take and give JSON ([Node] adapts a typed step); the graph's own
// input and output are typed. A node's key is the graph's key and its
// name, with the visit number between them after the first visit
// ("flow/draft", then "flow/2/draft"). Which edges of a node with a
// condition or several edges held is journaled under its key +"/edges",
// and which branches a join took under the fork's key +"/join" (indexes
// into the edges that held): a recovered run takes the same path, and a
// first or quorum join does not start its losers again.
type Graph[In, Out any] struct {
	name, start string
	maxSteps    int
	nodes       map[string]Step[json.RawMessage, json.RawMessage]
	order       []string
	edges       map[string][]edge
	joins       map[string]joinSpec
	err         error
}

// joinSpec is how a graph's join node joins the branches of its fork.
type joinSpec struct {
	join   Join
	reduce Reducer
}

// Reducer combines the outputs of the branches a graph's join took, by the
// name of the last node of each branch, into the join node's input. It is
// plain Go, run again on every replay: it must be pure.
type Reducer func(outs map[string]json.RawMessage) (json.RawMessage, error)

// Reduce makes a [Reducer] of a typed function: each branch's output is
// read as a T, and fn's result is the join node's input.
func Reduce[T, R any](fn func(outs map[string]T) (R, error)) Reducer {
	return func(outs map[string]json.RawMessage) (json.RawMessage, error) {
		in := make(map[string]T, len(outs))
		for name, raw := range outs {
			v, err := decode[T](raw)
			if err != nil {
				return nil, fmt.Errorf("the output of %s: %w", name, err)
			}
			in[name] = v
		}
		r, err := fn(in)
		if err != nil {
			return nil, err
		}
		return encode(r)
	}
}

type edge struct {
	to    string
	when  Cond
	label string
	// field and value are the condition of an edge made by EdgeField:
	// two such edges of one node on one field with different values never
	// hold together.
	field *string
	value any
}

// Cond is an edge's condition on the output of the node it leaves.
type Cond func(out json.RawMessage) bool

// NewGraph starts a graph named name that begins at node start and runs
// at most maxSteps nodes (DefaultMaxSteps when 0).
func NewGraph[In, Out any](name, start string, maxSteps int) *Graph[In, Out] {
	g := &Graph[In, Out]{name: name, start: start, maxSteps: maxSteps, nodes: map[string]Step[json.RawMessage, json.RawMessage]{},
		edges: map[string][]edge{}, joins: map[string]joinSpec{}}
	if g.maxSteps == 0 {
		g.maxSteps = DefaultMaxSteps
	}
	g.err = checkName(name)
	if maxSteps < 0 {
		g.err = errors.Join(g.err, fmt.Errorf("graph %s: max steps must not be negative, got %d", name, maxSteps))
	}
	return g
}

// Node adapts a typed step to a graph node, which takes and gives JSON: a
// string input is read from a JSON string, or is the JSON's text when it
// is not one.
func Node[In, Out any](s Step[In, Out]) Step[json.RawMessage, json.RawMessage] {
	err := s.err
	names := s.keyed()
	if len(names) != 1 && err == nil {
		err = errors.New("a sequence needs a name (Named) to be a graph node")
	}
	name := ""
	if len(names) > 0 {
		name = names[0]
	}
	return Step[json.RawMessage, json.RawMessage]{name: name, kind: s.kind, flat: true, err: err, targets: s.targets,
		describe: func() []string { return []string{name} }, inner: s.nodes,
		run: func(ctx context.Context, x *exec, prefix string, raw json.RawMessage) (json.RawMessage, error) {
			in, err := decode[In](raw)
			if err != nil {
				return nil, &strategy.Failure{Reason: fmt.Sprintf("step %s: input: %v", join(prefix, name), err)}
			}
			out, err := s.exec(ctx, x, prefix, in)
			if err != nil {
				return nil, err
			}
			return encode(out)
		}}
}

// Add adds nodes to g; their names must differ.
func (g *Graph[In, Out]) Add(nodes ...Step[json.RawMessage, json.RawMessage]) *Graph[In, Out] {
	for _, n := range nodes {
		g.err = errors.Join(g.err, n.err)
		name := n.name
		if _, dup := g.nodes[name]; dup {
			g.err = errors.Join(g.err, fmt.Errorf("graph %s has two nodes named %q", g.name, name))
			continue
		}
		g.nodes[name] = n
		g.order = append(g.order, name)
	}
	return g
}

// Edge adds an edge from node from to node to that always holds, or,
// after an edge with a condition from the same node, holds when none of
// from's conditional edges does (an "otherwise" edge).
func (g *Graph[In, Out]) Edge(from, to string) *Graph[In, Out] { return g.EdgeIf(from, to, nil) }

// EdgeIf adds an edge from node from to node to that holds when when
// holds for from's output.
func (g *Graph[In, Out]) EdgeIf(from, to string, when Cond) *Graph[In, Out] {
	return g.EdgeLabeled(from, to, "", when)
}

// EdgeLabeled is [Graph.EdgeIf] with a label that says what the
// condition is ("approved", "score < 7"), for the graph's drawing (see
// [ShapeNode].Labels).
func (g *Graph[In, Out]) EdgeLabeled(from, to, label string, when Cond) *Graph[In, Out] {
	g.edges[from] = append(g.edges[from], edge{to: to, when: when, label: label})
	return g
}

// EdgeField adds an edge from node from to node to that holds when the
// value at path of from's output equals value, as [FieldEquals] says,
// labeled "path = value". Two such edges of one node on the same path with
// different values never hold together, so they are a choice, not a fork:
// a node may route on a field's value to several nodes without a join.
func (g *Graph[In, Out]) EdgeField(from, to, path string, value any) *Graph[In, Out] {
	v, err := json.Marshal(value)
	if err != nil {
		v = []byte("?")
	}
	g.EdgeLabeled(from, to, strings.TrimSpace(path+" = "+string(v)), FieldEquals(path, value))
	es := g.edges[from]
	es[len(es)-1].field, es[len(es)-1].value = &path, value
	return g
}

// Join declares node a join: the node where the branches of a fork meet,
// which runs once on the outputs of the branches j takes (a JSON object
// from the name of each branch's last node to its output). j.Mode All
// waits for every branch the fork started (j.Tolerate leaves failed ones
// out), First takes the first branch to arrive and Quorum the first j.N,
// stopping the others; j.Limit bounds how many branches run at once.
func (g *Graph[In, Out]) Join(node string, j Join) *Graph[In, Out] { return g.JoinReduce(node, j, nil) }

// JoinReduce is [Graph.Join] with reduce making the join node's input of
// the outputs of the branches it took (see [Reduce]).
func (g *Graph[In, Out]) JoinReduce(node string, j Join, reduce Reducer) *Graph[In, Out] {
	if _, dup := g.joins[node]; dup {
		g.err = errors.Join(g.err, fmt.Errorf("graph %s: node %s is declared a join twice", g.name, node))
	}
	if j.Mode != All && j.Mode != First && j.Mode != Quorum {
		g.err = errors.Join(g.err, fmt.Errorf("graph %s: join %s: unknown join mode %d", g.name, node, j.Mode))
	}
	if j.Mode == Quorum && j.N < 1 || j.Limit < 0 {
		g.err = errors.Join(g.err, fmt.Errorf("graph %s: join %s: a quorum must be at least 1 and a limit not negative (got %d and %d)", g.name, node, j.N, j.Limit))
	}
	g.joins[node] = joinSpec{join: j, reduce: reduce}
	return g
}

// When is a condition on a node's output read as a T: it holds when
// holds(out) does (never when the output is not a T).
func When[T any](holds func(T) bool) Cond {
	return func(out json.RawMessage) bool {
		v, err := decode[T](out)
		return err == nil && holds(v)
	}
}

// FieldEquals holds when the value at path in the output equals value
// (compared as JSON). path is a GJSON path ("verdict", "review.score",
// "items.0"); an empty path is the whole output.
func FieldEquals(path string, value any) Cond {
	want, err := json.Marshal(value)
	var w any
	if err == nil {
		err = json.Unmarshal(want, &w)
	}
	return func(out json.RawMessage) bool {
		if err != nil {
			return false
		}
		var got any
		if path == "" {
			if json.Unmarshal(out, &got) != nil {
				return false
			}
		} else {
			r := gjson.GetBytes(out, path)
			if !r.Exists() || json.Unmarshal([]byte(r.Raw), &got) != nil {
				return false
			}
		}
		return reflect.DeepEqual(got, w)
	}
}

// Step is the graph as a step of a workflow. A mistake in the graph (an
// unknown node, an ambiguous fork or join: see [Graph]) is the step's
// error, which [New] returns.
func (g *Graph[In, Out]) Step() Step[In, Out] {
	err := g.err
	if _, ok := g.nodes[g.start]; !ok {
		err = errors.Join(err, fmt.Errorf("graph %s: no start node %q", g.name, g.start))
	}
	for _, from := range sortedKeys(g.edges) {
		if _, ok := g.nodes[from]; !ok {
			err = errors.Join(err, fmt.Errorf("graph %s: an edge leaves the unknown node %q", g.name, from))
		}
		for _, e := range g.edges[from] {
			if _, ok := g.nodes[e.to]; !ok {
				err = errors.Join(err, fmt.Errorf("graph %s: the edge from %s goes to the unknown node %q", g.name, from, e.to))
			}
		}
	}
	for _, j := range sortedKeys(g.joins) {
		if _, ok := g.nodes[j]; !ok {
			err = errors.Join(err, fmt.Errorf("graph %s: the join %q is no node", g.name, j))
		}
	}
	var targets []swarm.Handoff
	for _, n := range g.order {
		targets = append(targets, g.nodes[n].targets...)
	}
	// A snapshot, so that changing g later does not change the step.
	r := &graphRun{name: g.name, start: g.start, maxSteps: g.maxSteps, nodes: maps.Clone(g.nodes), joins: maps.Clone(g.joins),
		edges: make(map[string][]edge, len(g.edges))}
	for k, v := range g.edges {
		r.edges[k] = slices.Clone(v)
	}
	if err == nil {
		r.forks, err = r.analyse(slices.Clone(g.order))
	}
	order := slices.Clone(g.order)
	inner := func(key, parent string) []ShapeNode {
		var out []ShapeNode
		for _, name := range order {
			ns := r.nodes[name].nodes(key, parent)
			if len(ns) > 0 {
				ns[0].Start = name == r.start
				if j, ok := r.joins[name]; ok {
					ns[0].Join, ns[0].Limit = j.join.String(), j.join.Limit
				}
				_, ns[0].Fork = r.forks[name]
				conditional := false
				for _, e := range r.edges[name] {
					ns[0].Next = append(ns[0].Next, join(key, e.to))
					ns[0].Labels = append(ns[0].Labels, label(e, conditional))
					conditional = conditional || e.when != nil
				}
			}
			out = append(out, ns...)
		}
		return out
	}
	return Step[In, Out]{name: g.name, kind: "graph", err: err, targets: targets, inner: inner,
		shape: func(n *ShapeNode) { n.Bound = r.maxSteps },
		run: func(ctx context.Context, x *exec, key string, in In) (Out, error) {
			var zero Out
			v, err := encode(in)
			if err != nil {
				return zero, &strategy.Failure{Reason: "graph " + key + ": input: " + err.Error()}
			}
			d := &graphDrive{graphRun: r, x: x, key: key, visits: map[string]int{}}
			last, out, _, err := d.walk(ctx, r.start, v, "")
			if err != nil {
				return zero, err
			}
			res, err := decode[Out](out)
			if err != nil {
				return zero, &strategy.Failure{Reason: fmt.Sprintf("graph %s: the output of %s is not a valid result: %v", key, last, err)}
			}
			return res, nil
		}}
}

// graphRun is a graph as its step runs it: its nodes, edges and joins, and
// the join of each fork.
type graphRun struct {
	name, start string
	maxSteps    int
	nodes       map[string]Step[json.RawMessage, json.RawMessage]
	edges       map[string][]edge
	joins       map[string]joinSpec
	forks       map[string]string // fork -> its join
}

// kinds sorts the targets of node's edges: those that hold always, those
// with a condition and the "otherwise" ones, each once.
func (r *graphRun) kinds(node string) (always, cond, otherwise []string) {
	seenCond := false
	for _, e := range r.edges[node] {
		switch {
		case e.when != nil:
			seenCond = true
			cond = appendNew(cond, e.to)
		case seenCond:
			otherwise = appendNew(otherwise, e.to)
		default:
			always = appendNew(always, e.to)
		}
	}
	return always, cond, otherwise
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// isFork says whether two of node's edges to different nodes may hold
// together: any two but an "otherwise" edge with a conditional one, and
// two EdgeField edges on one path with different values.
func (r *graphRun) isFork(node string) bool {
	es := r.edges[node]
	otherwise := make([]bool, len(es))
	seenCond := false
	for i, e := range es {
		otherwise[i] = e.when == nil && seenCond
		seenCond = seenCond || e.when != nil
	}
	for i, a := range es {
		for j := i + 1; j < len(es); j++ {
			b := es[j]
			switch {
			case a.to == b.to:
			case otherwise[i] && b.when != nil, otherwise[j] && a.when != nil:
			case a.field != nil && b.field != nil && *a.field == *b.field && !reflect.DeepEqual(a.value, b.value):
			default:
				return true
			}
		}
	}
	return false
}

// held returns the targets of node's edges that hold for out, in the order
// of the edges, each once.
func (r *graphRun) held(node string, out json.RawMessage) []string {
	var held []string
	anyCond := false
	for _, e := range r.edges[node] {
		if e.when != nil && e.when(out) {
			anyCond = true
		}
	}
	seenCond := false
	for _, e := range r.edges[node] {
		var ok bool
		switch {
		case e.when != nil:
			seenCond, ok = true, e.when(out)
		case seenCond:
			ok = !anyCond
		default:
			ok = true
		}
		if ok {
			held = appendNew(held, e.to)
		}
	}
	return held
}

// analyse finds every fork of the graph (a node two of whose edges to
// different nodes may hold together) and its join, and refuses a graph
// whose forks and joins are ambiguous, naming the nodes.
func (r *graphRun) analyse(order []string) (map[string]string, error) {
	preds := map[string][]string{}
	seen := map[[2]string]bool{}
	for _, from := range order {
		for _, e := range r.edges[from] {
			if !seen[[2]string{from, e.to}] {
				seen[[2]string{from, e.to}] = true
				preds[e.to] = append(preds[e.to], from)
			}
		}
	}
	forks := map[string]string{}
	joinedBy := map[string]string{}
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("graph %s: "+format, append([]any{r.name}, args...)...))
	}
	for _, f := range order {
		always, cond, otherwise := r.kinds(f)
		if !r.isFork(f) {
			continue
		}
		targets := appendAll(appendAll(always, cond), otherwise)
		names := strings.Join(targets, ", ")
		if slices.Contains(targets, f) {
			fail("the fork at %s (to %s) has an edge back to %s", f, names, f)
			continue
		}
		// The nodes every branch reaches (not through the fork).
		var common map[string]bool
		for _, t := range targets {
			reach := r.reach(t, f, "")
			if common == nil {
				common = reach
				continue
			}
			for n := range common {
				if !reach[n] {
					delete(common, n)
				}
			}
		}
		// Where each branch first reaches them.
		var j string
		ambiguous := false
		for _, t := range targets {
			entries := r.entries(t, f, common)
			switch {
			case len(entries) == 0:
				fail("the branches of the fork at %s (%s) never meet: give them a node where they join (Graph.Join)", f, names)
				ambiguous = true
			case len(entries) > 1:
				fail("the branches of the fork at %s (%s) first meet at more than one node (%s): give them one join", f, names, strings.Join(entries, ", "))
				ambiguous = true
			case j == "":
				j = entries[0]
			case j != entries[0]:
				fail("the branches of the fork at %s (%s) first meet at more than one node (%s, %s): give them one join", f, names, j, entries[0])
				ambiguous = true
			}
			if ambiguous {
				break
			}
		}
		if ambiguous {
			continue
		}
		// Every node between the fork and its join is on one branch, and
		// is entered only from the fork or its own branch.
		owner := map[string]string{}
		ok := true
		for _, t := range targets {
			if t == j {
				continue
			}
			region := r.reach(t, f, j)
			for _, n := range sortedKeys(region) {
				if o, dup := owner[n]; dup {
					fail("node %s is on two branches of the fork at %s (from %s and from %s) before their join %s", n, f, o, t, j)
					ok = false
					continue
				}
				owner[n] = t
				if len(r.edges[n]) == 0 {
					fail("the branch from %s of the fork at %s ends at %s, which has no edges, before its join %s", t, f, n, j)
					ok = false
				}
				for _, e := range r.edges[n] {
					if e.to == f {
						fail("the branch from %s of the fork at %s goes back to %s (from %s) before its join %s", t, f, f, n, j)
						ok = false
					}
				}
			}
		}
		for n, t := range owner {
			for _, p := range preds[n] {
				if p != f && owner[p] != t {
					fail("node %s, on the branch from %s of the fork at %s, also has an edge from %s, outside that branch", n, t, f, p)
					ok = false
				}
			}
		}
		for _, p := range preds[j] {
			if _, in := owner[p]; p != f && !in {
				fail("the join %s of the fork at %s also has an edge from %s, outside the fork", j, f, p)
				ok = false
			}
		}
		switch spec, declared := r.joins[j]; {
		case !ok:
		case j == r.start:
			fail("the branches of the fork at %s (%s) meet at the start node %s", f, names, j)
		case joinedBy[j] != "":
			fail("the forks at %s and %s both join at %s: give each a join node of its own", joinedBy[j], f, j)
		case !declared:
			fail("the branches of the fork at %s (%s) meet at %s: declare how %s joins them (Graph.Join)", f, names, j, j)
		case spec.join.Mode == Quorum && spec.join.N > len(targets):
			fail("the join %s wants %d branches, but the fork at %s has %d", j, spec.join.N, f, len(targets))
		default:
			joinedBy[j] = f
			forks[f] = j
		}
	}
	for _, j := range sortedKeys(r.joins) {
		if joinedBy[j] == "" && len(errs) == 0 {
			fail("node %s is declared a join, but no fork's branches meet there", j)
		}
	}
	return forks, errors.Join(errs...)
}

func appendAll(s []string, vs []string) []string {
	s = slices.Clone(s)
	for _, v := range vs {
		s = appendNew(s, v)
	}
	return s
}

// reach is the set of nodes reachable from from (itself included) without
// passing through skip or stop.
func (r *graphRun) reach(from, skip, stop string) map[string]bool {
	seen := map[string]bool{}
	todo := []string{from}
	for len(todo) > 0 {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[n] || n == skip || n == stop {
			continue
		}
		seen[n] = true
		for _, e := range r.edges[n] {
			todo = append(todo, e.to)
		}
	}
	return seen
}

// entries are the nodes of common that from reaches first (without
// passing through skip or another node of common), sorted.
func (r *graphRun) entries(from, skip string, common map[string]bool) []string {
	seen := map[string]bool{}
	var out []string
	todo := []string{from}
	for len(todo) > 0 {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[n] || n == skip {
			continue
		}
		seen[n] = true
		if common[n] {
			out = append(out, n)
			continue
		}
		for _, e := range r.edges[n] {
			todo = append(todo, e.to)
		}
	}
	slices.Sort(out)
	return out
}

// graphDrive is one drive of a graph step.
type graphDrive struct {
	*graphRun
	x      *exec
	key    string
	mu     sync.Mutex
	steps  int
	visits map[string]int
}

// visit counts a run of node and returns the prefix of its key.
func (d *graphDrive) visit(node string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.steps++
	if d.steps > d.maxSteps {
		return "", &strategy.Failure{Reason: fmt.Sprintf("graph %s: stopped at its bound of %d steps before running node %s again", d.key, d.maxSteps, node)}
	}
	d.visits[node]++
	if v := d.visits[node]; v > 1 {
		return d.key + "/" + strconv.Itoa(v), nil
	}
	return d.key, nil
}

// walk runs the graph from node cur on v until it reaches stop (which it
// does not run: reached) or a node none of whose edges holds. It returns
// the last node it ran (or "" when none) and its output.
func (d *graphDrive) walk(ctx context.Context, cur string, v json.RawMessage, stop string) (last string, out json.RawMessage, reached bool, err error) {
	for {
		if cur == stop {
			return last, v, true, nil
		}
		prefix, err := d.visit(cur)
		if err != nil {
			return "", nil, false, err
		}
		out, err := d.nodes[cur].exec(ctx, d.x, prefix, v)
		if err != nil {
			return "", nil, false, err
		}
		nkey := join(prefix, cur)
		held, err := d.decide(ctx, nkey, cur, out)
		if err != nil {
			return "", nil, false, err
		}
		if len(held) == 0 {
			return cur, out, false, nil
		}
		if j, ok := d.forks[cur]; ok {
			in, err := d.fork(ctx, nkey, cur, held, out, j)
			if err != nil {
				return "", nil, false, err
			}
			last, cur, v = "", j, in
			continue
		}
		last, cur, v = cur, held[0], out
	}
}

// decide returns the targets of node's edges that hold for out, journaled
// under key+"/edges" when there was a choice (a condition, or a fork).
func (d *graphDrive) decide(ctx context.Context, key, node string, out json.RawMessage) ([]string, error) {
	es := d.edges[node]
	_, fork := d.forks[node]
	if !fork && (len(es) == 0 || len(es) == 1 && es[0].when == nil) {
		return d.held(node, out), nil
	}
	raw, err := d.x.d.Record(ctx, key+"/edges", "workflow.edges", func(context.Context) (json.RawMessage, error) {
		return json.Marshal(d.held(node, out))
	})
	if err != nil {
		return nil, err
	}
	var held []string
	if err := json.Unmarshal(raw, &held); err != nil {
		return nil, fmt.Errorf("graph %s: recorded edges of %s: %w", d.key, key, err)
	}
	for _, t := range held {
		if _, ok := d.nodes[t]; !ok {
			return nil, fmt.Errorf("%w: graph %s: recorded edge of %s to the unknown node %q", swarm.ErrInvalid, d.key, key, t)
		}
	}
	return held, nil
}

// arrival is what a branch of a fork brings its join: the name of its
// last node and that node's output.
type arrival struct {
	node string
	out  json.RawMessage
}

// fork runs a branch from each of held, the targets of fork's edges that
// held for out, until it reaches the fork's join j, joins them as j says,
// and returns j's input.
func (d *graphDrive) fork(ctx context.Context, key, fork string, held []string, out json.RawMessage, j string) (json.RawMessage, error) {
	spec := d.joins[j]
	b := branchSet[arrival]{names: held, limit: spec.join.Limit,
		run: func(ctx context.Context, i int) (arrival, error) {
			last, v, reached, err := d.walk(ctx, held[i], out, j)
			if err != nil {
				return arrival{}, err
			}
			if !reached {
				return arrival{}, &strategy.Failure{Reason: fmt.Sprintf("graph %s: the branch from %s of the fork at %s ended at %s (no edge held) before its join %s", d.key, held[i], fork, last, j)}
			}
			if last == "" {
				last = fork
			}
			return arrival{node: last, out: v}, nil
		}}
	var (
		arrived []arrival
		err     error
	)
	need := len(held)
	switch spec.join.Mode {
	case First:
		need = 1
	case Quorum:
		need = spec.join.N
	}
	jkey := key + "/join"
	switch {
	case need > len(held):
		return nil, &strategy.Failure{Reason: fmt.Sprintf("graph %s: the join %s wants %d branches, but %d edges of %s held", d.key, j, need, len(held), fork)}
	case spec.join.Mode == All:
		var took []int
		arrived, took, err = all(ctx, d.x, key, b, spec.join.Tolerate)
		if err == nil {
			_, err = d.x.d.Record(ctx, jkey, "workflow.join", func(context.Context) (json.RawMessage, error) { return json.Marshal(took) })
		}
	default:
		arrived, _, err = race(ctx, d.x, key, jkey, b, need)
	}
	if err != nil {
		return nil, err
	}
	outs := make(map[string]json.RawMessage, len(arrived))
	for _, a := range arrived {
		outs[a.node] = a.out
	}
	if spec.reduce == nil {
		return json.Marshal(outs)
	}
	in, err := spec.reduce(outs)
	if err != nil {
		return nil, &strategy.Failure{Reason: fmt.Sprintf("graph %s: join %s: %v", d.key, j, err)}
	}
	return in, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
