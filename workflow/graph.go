package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/strategy"
)

// DefaultMaxSteps bounds a [Graph] made with maxSteps 0.
const DefaultMaxSteps = 100

// Graph is a workflow as a graph of named nodes: it runs its start node on
// its input, then follows the first of the node's edges (in the order
// they were added) whose condition holds for the node's output, with that
// output as the next node's input, and so on; a node none of whose edges
// holds ends the graph with its output. Edges may form cycles: a graph
// runs at most its max steps nodes in all, and reaching that bound fails
// it with a reason that names the bound and the node it would have run.
//
// Nodes take and give JSON ([Node] adapts a typed step); the graph's own
// input and output are typed. A node's key is the graph's key and its
// name, with the visit number between them after the first visit
// ("flow/draft", then "flow/2/draft").
type Graph[In, Out any] struct {
	name, start string
	maxSteps    int
	nodes       map[string]Step[json.RawMessage, json.RawMessage]
	order       []string
	edges       map[string][]edge
	err         error
}

type edge struct {
	to    string
	when  Cond
	label string
}

// Cond is an edge's condition on the output of the node it leaves.
type Cond func(out json.RawMessage) bool

// NewGraph starts a graph named name that begins at node start and runs
// at most maxSteps nodes (DefaultMaxSteps when 0).
func NewGraph[In, Out any](name, start string, maxSteps int) *Graph[In, Out] {
	g := &Graph[In, Out]{name: name, start: start, maxSteps: maxSteps, nodes: map[string]Step[json.RawMessage, json.RawMessage]{}, edges: map[string][]edge{}}
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

// Edge adds an edge from node from to node to that is always taken (when
// no edge added before it from the same node was).
func (g *Graph[In, Out]) Edge(from, to string) *Graph[In, Out] { return g.EdgeIf(from, to, nil) }

// EdgeIf adds an edge from node from to node to, taken when when holds
// for from's output (and no edge added before it from the same node was).
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

// Step is the graph as a step of a workflow.
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
	var targets []swarm.Handoff
	for _, n := range g.order {
		targets = append(targets, g.nodes[n].targets...)
	}
	// A snapshot, so that changing g later does not change the step.
	nodes := make(map[string]Step[json.RawMessage, json.RawMessage], len(g.nodes))
	for k, v := range g.nodes {
		nodes[k] = v
	}
	edges := make(map[string][]edge, len(g.edges))
	for k, v := range g.edges {
		edges[k] = append([]edge(nil), v...)
	}
	start, maxSteps := g.start, g.maxSteps
	order := slices.Clone(g.order)
	inner := func(key, parent string) []ShapeNode {
		var out []ShapeNode
		for _, name := range order {
			ns := nodes[name].nodes(key, parent)
			if len(ns) > 0 {
				ns[0].Start = name == start
				conditional := false
				for _, e := range edges[name] {
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
		shape: func(n *ShapeNode) { n.Bound = maxSteps },
		run: func(ctx context.Context, x *exec, key string, in In) (Out, error) {
			var zero Out
			v, err := encode(in)
			if err != nil {
				return zero, &strategy.Failure{Reason: "graph " + key + ": input: " + err.Error()}
			}
			visits := map[string]int{}
			cur := start
			for step := 1; ; step++ {
				if step > maxSteps {
					return zero, &strategy.Failure{Reason: fmt.Sprintf("graph %s: stopped at its bound of %d steps before running node %s again", key, maxSteps, cur)}
				}
				visits[cur]++
				prefix := key
				if visits[cur] > 1 {
					prefix = key + "/" + strconv.Itoa(visits[cur])
				}
				out, err := nodes[cur].exec(ctx, x, prefix, v)
				if err != nil {
					return zero, err
				}
				next := ""
				for _, e := range edges[cur] {
					if e.when == nil || e.when(out) {
						next = e.to
						break
					}
				}
				if next == "" {
					res, err := decode[Out](out)
					if err != nil {
						return zero, &strategy.Failure{Reason: fmt.Sprintf("graph %s: the output of %s is not a valid result: %v", key, cur, err)}
					}
					return res, nil
				}
				cur, v = next, out
			}
		}}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
