package dashboard

import (
	"fmt"
	"testing"

	"github.com/swarmrt/swarm/workflow"
)

// chainGraph is a graph of n nodes, each with an edge to the next and,
// every tenth, a conditional edge back to the first: the shape of a long
// workflow with cycles.
func chainGraph(n int) []*wfNode {
	nodes := []*wfNode{{ShapeNode: workflow.ShapeNode{Key: "g", Kind: "graph", Bound: 1000}, Name: "g", State: nodeRunning}}
	for i := range n {
		sn := workflow.ShapeNode{Key: fmt.Sprintf("g/n%d", i), Kind: "agent", Parent: "g", Start: i == 0}
		if i+1 < n {
			sn.Next, sn.Labels = append(sn.Next, fmt.Sprintf("g/n%d", i+1)), append(sn.Labels, "")
		}
		if i%10 == 9 {
			sn.Next, sn.Labels = append(sn.Next, "g/n0"), append(sn.Labels, "again")
		}
		nodes = append(nodes, &wfNode{ShapeNode: sn, Name: fmt.Sprintf("n%d", i), State: nodeDone})
	}
	return nodes
}

// A graph's nodes go in one layer each along a chain, the edges back to
// its start up lanes of their own.
func TestLayoutChain(t *testing.T) {
	w := &workflowData{Nodes: chainGraph(30)}
	w.layout()
	if len(w.Boxes) != 30 || len(w.Frames) != 1 {
		t.Fatalf("%d boxes, %d frames, want 30 and 1", len(w.Boxes), len(w.Frames))
	}
	for i := 1; i < len(w.Boxes); i++ {
		if w.Boxes[i].Y <= w.Boxes[i-1].Y {
			t.Errorf("box %s at y %d is not below %s at %d", w.Boxes[i].Key, w.Boxes[i].Y, w.Boxes[i-1].Key, w.Boxes[i-1].Y)
		}
	}
	lanes := map[string]bool{}
	for _, e := range w.Edges {
		if e.Class == "wf-cycle" {
			lanes[fmt.Sprint(e.LX)] = true
			if e.To != "g/n0" || e.Label != "again" {
				t.Errorf("cycle edge %+v, want back to g/n0, labelled", e)
			}
		}
	}
	if len(lanes) != 3 {
		t.Errorf("%d lanes for 3 edges back up, want one each", len(lanes))
	}
}

// BenchmarkLayout lays out a graph of 100 nodes with 10 cycles, as a run
// page's Nodes tab does on every refresh.
func BenchmarkLayout(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		w := &workflowData{Nodes: chainGraph(100)}
		w.layout()
	}
}
