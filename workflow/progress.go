package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/strategy"
)

// nodesKey is the key of the record of a workflow run's nodes, the first
// of its journal: a key no node has (a node's name has no '.'), and
// EventNodes its type.
const nodesKey = "workflow.nodes"

// EventNodes is the type of the first event of a workflow run after its
// start: the nodes of the workflow that do work, which [RunProgress]
// reads.
const EventNodes swarm.EventType = "workflow_nodes"

// workKinds are the kinds of the nodes that do work, which progress counts.
var workKinds = []string{"agent", "swarm", "func", "human", "conversation"}

// progressNode is a node as the record of a run's nodes holds it.
type progressNode struct {
	Key  string `json:"key"`
	Kind string `json:"kind"`
}

// recordNodes journals the nodes of shape that do work, so that a reader of
// the journal alone (swarm ls, swarm status) can tell how far the run has
// come.
func recordNodes(ctx context.Context, d *strategy.Driver, shape []ShapeNode) error {
	_, err := d.RecordEvent(ctx, nodesKey, func(context.Context) (swarm.Event, error) {
		var ns []progressNode
		for _, n := range shape {
			if slices.Contains(workKinds, n.Kind) {
				ns = append(ns, progressNode{Key: n.Key, Kind: n.Kind})
			}
		}
		raw, err := json.Marshal(ns)
		return swarm.Event{Type: EventNodes, Progress: raw}, err
	})
	return err
}

// Progress is how far a run of a workflow has come, in nodes that do work
// (agents, swarms, functions, humans, conversations) rather than turns.
type Progress struct {
	// Done counts the nodes that finished at least once (a loop's node
	// counts once, whatever its rounds), Total all of them.
	Done  int `json:"done"`
	Total int `json:"total"`
	// At is the key of the node the run worked on last ("" before any).
	At string `json:"at,omitempty"`
}

// String is how progress reads in a list: "3/7 nodes".
func (p Progress) String() string { return fmt.Sprintf("%d/%d nodes", p.Done, p.Total) }

// ProgressOf reads the progress of run id of rt when it is a workflow's
// (false otherwise, or when its journal cannot be read): a look at its
// first records, and at the whole journal only for a workflow.
func ProgressOf(ctx context.Context, rt *swarm.Runtime, id string) (Progress, bool) {
	recs, err := rt.Store().Read(ctx, id, 0, 2)
	if err != nil || !slices.ContainsFunc(recs, func(r store.Record) bool { return r.Type == string(EventNodes) }) {
		return Progress{}, false
	}
	evs, err := rt.History(ctx, id, 0)
	if err != nil {
		return Progress{}, false
	}
	return RunProgress(evs)
}

// RunProgress reads a workflow run's progress from its journal; false
// when the journal is not a workflow's (it has no record of the
// workflow's nodes, a workflow_nodes event, the first after its start).
func RunProgress(events []swarm.Event) (Progress, bool) {
	var ns []progressNode
	i := slices.IndexFunc(events, func(ev swarm.Event) bool { return ev.Type == EventNodes && ev.Key == nodesKey })
	if i < 0 || json.Unmarshal(events[i].Progress, &ns) != nil {
		return Progress{}, false
	}
	shape := Shape{Nodes: make([]ShapeNode, len(ns))}
	kind := map[string]string{}
	for j, n := range ns {
		shape.Nodes[j] = ShapeNode{Key: n.Key, Kind: n.Kind}
		kind[n.Key] = n.Kind
	}
	p := Progress{Total: len(ns)}
	done := map[string]bool{}
	open := map[string]int{} // handoffs started and not yet returned, by node
	for _, ev := range events[i+1:] {
		key, own := shape.Node(ev.Key)
		if key == "" {
			continue
		}
		p.At = key
		finished := false
		switch {
		case ev.Type == swarm.EventHandoffStarted:
			open[key]++
		case ev.Type == swarm.EventHandoffReturned:
			open[key] = max(open[key]-1, 0)
			finished = open[key] == 0 && !ev.IsError
		case ev.Type == swarm.EventResumed:
			finished = kind[key] == "human"
		case ev.Type == swarm.EventRecorded && own:
			finished = !ev.IsError && kind[key] != "human"
		}
		if finished && !done[key] {
			done[key] = true
			p.Done++
		}
	}
	return p, true
}
