package dashboard

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/workflow"
)

// Node states on a workflow run's page.
const (
	nodeNotStarted = "not started"
	nodeRunning    = "running"
	nodeWaiting    = "waiting"
	nodeDone       = "done"
	nodeFailed     = "failed"
	// nodeStopped is a branch a first or quorum join stopped when it had
	// enough.
	nodeStopped = "stopped"
	// nodeSkipped is a node of a graph a completed run never reached (no
	// edge to it held).
	nodeSkipped = "skipped"
)

// wfNode is one node of a workflow run: its place in the workflow's shape
// and what the run's journal says of it.
type wfNode struct {
	workflow.ShapeNode
	Name   string
	Depth  int
	State  string
	Visits int
	// Children are the child runs the node started (swarm nodes).
	Children []string
	// X, Y, W, H are the node's box (or frame) in the drawing.
	X, Y, W, H int
}

// workflowData is the Nodes tab of a workflow run.
type workflowData struct {
	Run           swarm.Status
	Nodes         []*wfNode
	Frames        []wfFrame
	Edges         []wfEdge
	Pills         []wfPill
	Boxes         []*wfNode
	Width, Height int
}

// shapeOf returns the shape of run st's workflow, when its swarm is one.
func (d *Dashboard) shapeOf(st swarm.Status) (workflow.Shape, bool) {
	for _, def := range d.rt.Swarms() {
		if def.ID() == st.Swarm {
			return workflow.Describe(def)
		}
	}
	return workflow.Shape{}, false
}

// workflowNodes derives the state of each node of shape from run st's
// journal: a node's records are those under its key (by step-key prefix,
// rounds, visits and attempts read as the same node).
func (d *Dashboard) workflowNodes(ctx context.Context, st swarm.Status, shape workflow.Shape) ([]*wfNode, error) {
	byKey := map[string]*wfNode{}
	var nodes []*wfNode
	for _, sn := range shape.Nodes {
		n := &wfNode{ShapeNode: sn, State: nodeNotStarted, Name: sn.Key[strings.LastIndexByte(sn.Key, '/')+1:]}
		if p, ok := byKey[sn.Parent]; ok {
			n.Depth = p.Depth + 1
		}
		byKey[sn.Key] = n
		nodes = append(nodes, n)
	}
	history, err := d.rt.History(ctx, st.ID, 0)
	if err != nil {
		return nil, err
	}
	visited := map[string]bool{} // the raw keys that opened a visit
	open := map[string]int{}     // handoffs started and not yet returned, by node
	var last *wfNode
	joined := map[string]bool{} // the parallel steps whose join decided
	for _, ev := range history {
		key, own := shape.Node(ev.Key) // own: the node's record, not one below it
		n, ok := byKey[key]
		if !ok {
			continue
		}
		switch {
		case ev.Type == swarm.EventHandoffStarted:
			// An agent or swarm node's delegation is journaled below its
			// key, and the agent may delegate in turn: the node is done
			// when its outermost handoff returns.
			if open[key] == 0 {
				n.Visits++
			}
			open[key]++
			n.State = nodeRunning
			if ev.Child != "" {
				n.Children = append(n.Children, ev.Child)
			}
		case ev.Type == swarm.EventHandoffReturned:
			if open[key] > 0 {
				open[key]--
			}
			n.State = nodeRunning
			if open[key] == 0 {
				n.State = nodeDone
				if ev.IsError {
					n.State = nodeFailed
				}
			}
		case ev.Type == swarm.EventPaused:
			if own && !visited[ev.Key] {
				visited[ev.Key] = true
				n.Visits++
			}
			n.State = nodeWaiting
		case ev.Type == swarm.EventResumed && n.Kind == "human":
			n.State = nodeDone // a refused answer asks again: paused
		case ev.Kind == "workflow.edges" || ev.Kind == "workflow.join":
			// A graph's decisions after a node: which edges held, which
			// branches its join took. The node's state stands.
		case ev.Type == swarm.EventRecorded && own:
			if !visited[ev.Key] {
				visited[ev.Key] = true
				n.Visits++
			}
			n.State = nodeDone
			if ev.IsError {
				n.State = nodeFailed
			}
		default:
			n.State = nodeRunning
		}
		if ev.Type == swarm.EventRecorded && n.Kind == "parallel" && !own && strings.HasSuffix(ev.Key, "/join") {
			joined[n.Key] = true
		}
		if ev.Type == swarm.EventRecorded && ev.Kind == "workflow.join" && n.Kind != "parallel" {
			stopBranches(n, byKey)
		}
		last = n
	}
	// A first or quorum join stops the branches still running once it has
	// decided (recorded under the parallel step's key and "join").
	for _, n := range nodes {
		for p := byKey[n.Parent]; p != nil && n.State == nodeRunning; p = byKey[p.Parent] {
			if joined[p.Key] {
				n.State = nodeStopped
			}
		}
	}
	// The node that failed a failed run is the last one it touched or, when
	// that one finished, the step holding it (a loop or a graph at its
	// bound, a join, a route with no such route).
	failed := last
	if st.State == swarm.StateFailed && last != nil && last.State == nodeDone {
		failed = byKey[last.Parent]
	}
	switch {
	case st.State == swarm.StateFailed && last != nil && last.State != nodeDone:
		last.State = nodeFailed
	case st.State.Terminal():
		for _, n := range nodes {
			if n.State == nodeRunning {
				n.State = nodeDone
			}
			if p := byKey[n.Parent]; st.State == swarm.StateCompleted && n.State == nodeNotStarted && p != nil && p.Kind == "graph" {
				n.State = nodeSkipped
			}
		}
	}
	// A step that holds others is as busy as its busiest part: waiting,
	// failed, running, then done when all its parts are.
	rank := map[string]int{nodeDone: 1, nodeRunning: 2, nodeFailed: 3, nodeWaiting: 4}
	for i := len(nodes) - 1; i >= 0; i-- {
		p, ok := byKey[nodes[i].Parent]
		if !ok {
			continue
		}
		var started, done, stopped, total int
		state := nodeNotStarted // records of its own (a router, a verdict) count only for waiting or failed
		if p.State == nodeWaiting || p.State == nodeFailed {
			state = p.State
		}
		for _, c := range nodes {
			if c.Parent != p.Key {
				continue
			}
			total++
			if c.State != nodeNotStarted {
				started++
			}
			if c.State == nodeDone {
				done++
			}
			if c.State == nodeStopped {
				stopped++
			}
			if rank[c.State] > rank[state] {
				state = c.State
			}
		}
		if started == 0 {
			continue
		}
		// A route runs one of its routes, a first or quorum join stops the
		// branches it did not take: done when those that started are.
		// A step cut short inside a branch the join stopped (a sequence
		// whose second part was stopped mid-call) is stopped itself, not
		// still running.
		some := p.Kind == "route" || strings.HasPrefix(p.Join, "first") || strings.HasPrefix(p.Join, "quorum")
		// A step on a branch its join did not wait for, cut between its
		// parts (a sequence whose first part was done when the join
		// decided), is stopped too, not running.
		switch {
		case stopped > 0 && !some && p.Kind != "graph" && (state == nodeDone || state == nodeNotStarted):
			state = nodeStopped
		case state == nodeDone && done < total && !some && underJoin(p, byKey, joined):
			state = nodeStopped
		case state == nodeDone && done < total && !some && !st.State.Terminal():
			state = nodeRunning
		}
		p.State = state
	}
	if st.State == swarm.StateFailed && failed != nil {
		failed.State = nodeFailed
	}
	return nodes, nil
}

// underJoin reports whether n is inside a parallel step whose first or
// quorum join has decided.
func underJoin(n *wfNode, byKey map[string]*wfNode, joined map[string]bool) bool {
	for a := byKey[n.Parent]; a != nil; a = byKey[a.Parent] {
		if joined[a.Key] {
			return true
		}
	}
	return false
}

// stopBranches marks stopped the nodes still running on the branches of
// fork, a graph's node whose join has just decided (a first or quorum
// join stops the branches it did not take): those its edges reach.
func stopBranches(fork *wfNode, byKey map[string]*wfNode) {
	seen := map[string]bool{}
	todo := slices.Clone(fork.Next)
	for len(todo) > 0 {
		k := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		n := byKey[k]
		if n == nil || seen[k] {
			continue
		}
		seen[k] = true
		if n.State == nodeRunning {
			n.State = nodeStopped
		}
		todo = append(todo, n.Next...)
	}
}

// nodesFragment renders the Nodes tab of a workflow run alone, for the
// run page to refresh it as the run goes on.
func (d *Dashboard) nodesFragment(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, err := d.authorizedRun(ctx, r.PathValue("id"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data, ok, err := d.workflow(ctx, st)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if !ok {
		d.error(w, r, http.StatusNotFound, "Run "+st.ID+" is not a workflow this server defines.")
		return
	}
	d.renderFragment(w, r, "nodes", data)
}

// workflow returns the Nodes tab of run st, false when st is not a run of
// a workflow.
func (d *Dashboard) workflow(ctx context.Context, st swarm.Status) (*workflowData, bool, error) {
	shape, ok := d.shapeOf(st)
	if !ok {
		return nil, false, nil
	}
	nodes, err := d.workflowNodes(ctx, st, shape)
	if err != nil {
		return nil, false, err
	}
	data := &workflowData{Run: st, Nodes: nodes}
	data.layout()
	return data, true, nil
}
