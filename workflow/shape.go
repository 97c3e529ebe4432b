package workflow

import (
	"strconv"
	"strings"
	"sync"

	"github.com/swarmrt/swarm"
)

// Shape is the structure of a workflow, for a reader that draws it (the
// dashboard): every node and composite step, in the order they are
// composed, with the edges of its graphs.
type Shape struct {
	// ID is the workflow's definition ID.
	ID string
	// Nodes are the workflow's steps, each before the steps inside it.
	Nodes []ShapeNode
}

// ShapeNode is one step of a workflow's [Shape].
type ShapeNode struct {
	// Key is the step's key without round, visit, index or attempt
	// numbers ("polish/edit" stands for "polish/2/edit" and
	// "polish/edit~2"): see [Shape.Node].
	Key string
	// Kind is "agent", "swarm", "func", "human", "conversation" (the nodes that do work),
	// or "parallel", "foreach", "loop", "route", "graph" (the steps that
	// hold others).
	Kind string
	// Parent is the key of the step that holds this one ("" at the top).
	Parent string
	// Next are the keys of the nodes a graph's edges lead to from this
	// one, in the order the edges were added.
	Next []string
	// Labels are the conditions of the edges in Next, one per edge: ""
	// for an edge always taken, "otherwise" for one always taken after
	// conditional ones, the label given to [Graph.EdgeLabeled] (or the
	// field and value of [FieldEquals]'s condition, in swarm.yaml), or
	// "if" for a condition with no label.
	Labels []string
	// Branch is, for a step directly inside a parallel step or a route,
	// the index of the branch or route it belongs to (the steps of one
	// branch, a sequence, share it and run in their order).
	Branch int
	// Start marks a graph's start node.
	Start bool
	// Fork marks a graph's node two of whose edges may hold together:
	// their targets run in parallel, up to the join (the node of the
	// graph whose Join is set that they meet at).
	Fork bool
	// Bound is a loop's rounds or a graph's max steps.
	Bound int
	// Join is how a parallel step joins its branches ("all", "all,
	// tolerating failures", "first", "quorum 2"); "all" for a for-each.
	Join string
	// Limit is how many branches of a parallel step, a for-each or a
	// graph's fork run at once (0: swarm.Config.MaxParallel).
	Limit int
	// Agent names a loop's evaluator agent or a route's router agent (""
	// when a Go function decides).
	Agent string
}

// Node returns the key of the shape's node that a journal step key
// belongs to: the deepest node whose key, read without numbers, begins
// it; own says the step key is the node's own (a visit, round or attempt
// of it) rather than a step inside it. It is "" for a key outside every
// node (the runtime's own).
func (s Shape) Node(stepKey string) (key string, own bool) {
	norm := normalKey(stepKey)
	for _, n := range s.Nodes {
		if (norm == n.Key || strings.HasPrefix(norm, n.Key+"/")) && len(n.Key) > len(key) {
			key = n.Key
		}
	}
	return key, key != "" && norm == key
}

// normalKey drops the round, visit and index segments and the retry
// attempts of a step key.
func normalKey(key string) string {
	segs := strings.Split(key, "/")
	out := segs[:0]
	for _, s := range segs {
		if _, err := strconv.Atoi(s); err == nil {
			continue
		}
		if i := strings.LastIndexByte(s, '~'); i > 0 {
			if _, err := strconv.Atoi(s[i+1:]); err == nil {
				s = s[:i]
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, "/")
}

// shapes holds the shape of every workflow made by New, by its definition.
var shapes sync.Map // swarm.Definition -> Shape

// Describe returns the shape of def when def is a workflow made by [New]
// or [Define] in this process.
func Describe(def swarm.Definition) (Shape, bool) {
	if def == nil {
		return Shape{}, false
	}
	v, ok := shapes.Load(def)
	if !ok {
		return Shape{}, false
	}
	return v.(Shape), true
}

// nodes returns the shape of s below prefix: its own node (unless it is a
// sequence) and those inside it.
func (s Step[In, Out]) nodes(prefix, parent string) []ShapeNode {
	if s.flat {
		if s.inner == nil {
			return nil
		}
		return s.inner(prefix, parent)
	}
	key := join(prefix, s.name)
	out := []ShapeNode{{Key: key, Kind: s.kind, Parent: parent}}
	if s.shape != nil {
		s.shape(&out[0])
	}
	if s.inner != nil {
		out = append(out, s.inner(key, key)...)
	}
	return out
}

// branchShapes returns the shape of steps below key, each the branch of its
// index.
func branchShapes[In, Out any](steps []Step[In, Out], key, parent string) []ShapeNode {
	var out []ShapeNode
	for i, b := range steps {
		ns := b.nodes(key, parent)
		for j := range ns {
			if ns[j].Parent == parent {
				ns[j].Branch = i
			}
		}
		out = append(out, ns...)
	}
	return out
}

// label is how an edge's condition reads: "" always, "otherwise" always
// after conditional edges, or the condition's label ("if" when it has
// none).
func label(e edge, conditional bool) string {
	switch {
	case e.when == nil && conditional:
		return "otherwise"
	case e.when == nil:
		return ""
	case e.label != "":
		return e.label
	}
	return "if"
}

// String is how a join reads on a drawing.
func (j Join) String() string {
	switch j.Mode {
	case First:
		return "first"
	case Quorum:
		return "quorum " + strconv.Itoa(j.N)
	}
	if j.Tolerate {
		return "all, tolerating failures"
	}
	return "all"
}
