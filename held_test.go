package swarm_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// appendLog is a store that remembers the keys of each append.
type appendLog struct {
	store.Store
	mu      sync.Mutex
	appends [][]string
}

func (s *appendLog) Append(ctx context.Context, l store.Lease, recs []store.Record, u store.Update) (int64, error) {
	keys := make([]string, len(recs))
	for i, r := range recs {
		keys[i] = r.Key
	}
	s.mu.Lock()
	s.appends = append(s.appends, keys)
	s.mu.Unlock()
	return s.Store.Append(ctx, l, recs, u)
}

// An agent's answer is journaled in the append that returns it to the
// agent that handed off, nested handoffs included; an agent's tool round is
// journaled before its tools run.
func TestAgentAnswerJournaledWithReturn(t *testing.T) {
	clerk := &swarm.Agent{Name: "clerk", Instructions: "look up", Tools: []swarm.Tool{lookup}}
	desk := &swarm.Agent{Name: "desk", Instructions: "ask the clerk", Handoffs: []swarm.Handoff{swarm.ToAgent(clerk)}}
	def := swarm.Define[string, string]("front", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(desk)}}
	})
	st := &appendLog{Store: memory.New()}
	rt, _ := newRecorded(t, scripted.Script{
		"front": {scripted.Tools(scripted.CallTool("handoff_to_desk", map[string]any{"request": "find it"})), scripted.Text("found")},
		"desk":  {scripted.Tools(scripted.CallTool("handoff_to_clerk", map[string]any{"request": "look"})), scripted.Text("the clerk found it")},
		"clerk": {scripted.Tools(scripted.CallTool("lookup", map[string]any{"q": "it"})), scripted.Text("here")},
	}, swarm.Config{Store: st})
	res, run, err := def.Run(ctxT(t), rt, "go")
	if c, ok := res.(swarm.Completed[string]); err != nil || !ok || c.Output != "found" {
		t.Fatalf("%#v %v", res, err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	find := func(key string) int {
		for i, keys := range st.appends {
			if slices.Contains(keys, key) {
				return i
			}
		}
		t.Fatalf("%s never journaled: %v", key, st.appends)
		return -1
	}
	evs := swarmtest.Events(t, rt, run.ID())
	var deskCall, clerkCall string
	for _, e := range evs {
		if e.Type == swarm.EventHandoffStarted && e.Target == "desk" {
			deskCall = e.CallID
		}
		if e.Type == swarm.EventHandoffStarted && e.Target == "clerk" {
			clerkCall = e.CallID
		}
	}
	desk1 := "t1/h/" + deskCall + "/"
	clerk1 := desk1 + "t1/h/" + clerkCall + "/"
	for answer, ret := range map[string]string{
		desk1 + "t2/model":  "t1/tool/" + deskCall,
		clerk1 + "t2/model": desk1 + "t1/tool/" + clerkCall,
	} {
		if a, r := find(answer), find(ret); a != r {
			t.Errorf("answer %s in append %d, its return %s in append %d: want one append", answer, a, ret, r)
		}
	}
	// The clerk's tool round is journaled before its tool result.
	if m, r := find(clerk1+"t1/model"), find(clerk1+"t1/tool/"+toolCallID(t, evs, "clerk")); m >= r {
		t.Errorf("clerk's tool round in append %d, its result in append %d", m, r)
	}
}

func toolCallID(t *testing.T, evs []swarm.Event, agent string) string {
	for _, e := range evs {
		if e.Type == swarm.EventToolCall && e.Agent == agent {
			return e.CallID
		}
	}
	t.Fatalf("no tool call of %s", agent)
	return ""
}
