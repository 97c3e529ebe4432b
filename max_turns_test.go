package swarm_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// perAgentCallsRuntime is a runtime whose scripted model counts the calls it
// gets per agent.
func perAgentCallsRuntime(t *testing.T, script scripted.Script) (*swarm.Runtime, func(agent string) int) {
	t.Helper()
	var mu sync.Mutex
	calls := map[string]int{}
	rt, _ := watchedRuntime(t, swarm.Config{}, script, func(req *model.Request) {
		mu.Lock()
		calls[req.Agent]++
		mu.Unlock()
	})
	return rt, func(agent string) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[agent]
	}
}

func TestAnswerOnTheLastAllowedTurnCompletes(t *testing.T) {
	const maxTurns = 3
	s := swarm.Define[string, Activity]("loop", "", func(string) swarm.Spec { return swarm.Spec{MaxTurns: maxTurns} })
	rt, calls := perAgentCallsRuntime(t, scripted.Script{"loop": {
		scripted.Text("no"), scripted.Text("still no"), scripted.Text(`{"activity":"chess"}`), scripted.Text(`{"activity":"never"}`),
	}})
	res, _, err := s.Run(swarmtest.Context(t), rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[Activity]); !ok || c.Output.Activity != "chess" {
		t.Fatalf("answer on turn %d of %d: result %#v, want completed with chess", maxTurns, maxTurns, res)
	}
	if n := calls("loop"); n != maxTurns {
		t.Errorf("%d model calls, want %d", n, maxTurns)
	}
}

func TestMaxTurnsMakesExactlyMaxTurnsModelCalls(t *testing.T) {
	const maxTurns = 3
	s := swarm.Define[string, Activity]("loop", "", func(string) swarm.Spec { return swarm.Spec{MaxTurns: maxTurns} })
	var steps []scripted.Step
	for range maxTurns + 2 {
		steps = append(steps, scripted.Text("no"))
	}
	rt, calls := perAgentCallsRuntime(t, scripted.Script{"loop": steps})
	res, _, err := s.Run(swarmtest.Context(t), rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, "max turns (3)") {
		t.Fatalf("result %#v, want failed at max turns (3)", res)
	}
	if n := calls("loop"); n != maxTurns {
		t.Errorf("%d model calls before failing, want exactly %d", n, maxTurns)
	}
}

func TestAgentMaxTurnsIsExact(t *testing.T) {
	const maxTurns = 2
	note := swarm.NewTool("note", "Notes", func(context.Context, struct{}) (string, error) { return "noted", nil })
	// "patient" answers on its last allowed turn; "stubborn" never answers.
	patient := &swarm.Agent{Name: "patient", Description: "answers late", MaxTurns: maxTurns, Tools: []swarm.Tool{note}}
	stubborn := &swarm.Agent{Name: "stubborn", Description: "never answers", MaxTurns: maxTurns, Tools: []swarm.Tool{note}}
	s := swarm.Define[string, string]("boss", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(patient), swarm.ToAgent(stubborn)}}
	})
	noteCall := scripted.Tools(scripted.CallTool("note", nil))
	rt, calls := perAgentCallsRuntime(t, scripted.Script{
		"boss":     {scripted.Tools(scripted.CallTool("handoff_to_patient", map[string]any{"request": "a"})), scripted.Tools(scripted.CallTool("handoff_to_stubborn", map[string]any{"request": "b"})), scripted.Text("done")},
		"patient":  {noteCall, scripted.Text("here you are"), scripted.Text("too late")},
		"stubborn": {noteCall, noteCall, noteCall, noteCall},
	})
	res, run, err := s.Run(swarmtest.Context(t), rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Completed[string]); !ok {
		t.Fatalf("result %#v", res)
	}
	var outs []swarm.Event
	for _, e := range swarmtest.Events(t, rt, run.ID()) {
		if e.Type == swarm.EventHandoffReturned {
			outs = append(outs, e)
		}
	}
	if len(outs) != 2 {
		t.Fatalf("%d handoffs returned, want 2", len(outs))
	}
	if outs[0].IsError || outs[0].Output != "here you are" {
		t.Errorf("patient answered on its last turn: got %q (error %v)", outs[0].Output, outs[0].IsError)
	}
	if !outs[1].IsError || !strings.Contains(outs[1].Output, "max turns (2)") {
		t.Errorf("stubborn: got %q (error %v), want an error naming max turns (2)", outs[1].Output, outs[1].IsError)
	}
	if n := calls("patient"); n != maxTurns {
		t.Errorf("patient: %d model calls, want %d", n, maxTurns)
	}
	if n := calls("stubborn"); n != maxTurns {
		t.Errorf("stubborn: %d model calls before failing, want exactly %d", n, maxTurns)
	}
}
