package memory_test

import (
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/memory"
	"github.com/swarmrt/swarm/model/scripted"
	storemem "github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// TestAbsorbedKeepsBank absorbs an agent with memory into a captain: the
// sibling's memory tools write to its bank, named from the values of the
// captain's run.
func TestAbsorbedKeepsBank(t *testing.T) {
	st := storemem.New()
	mem := &memory.Memory{Store: st, Bank: "user:{user}"}
	clerk := absorb.Sibling{Agent: &swarm.Agent{Name: "clerk", Description: "Keeps notes", Instructions: "Note what you are told.", Tools: mem.Tools()},
		Skills: []absorb.Skill{{Name: "note", Description: "remember a fact"}}} // one text skill: the tool is named clerk
	captain := &swarm.Agent{Name: "desk", Instructions: "Route requests."}
	if err := absorb.Into(captain, clerk); err != nil {
		t.Fatal(err)
	}
	script := scripted.Script{
		"desk":  {scripted.Tools(scripted.CallTool("clerk", map[string]any{"request": "the customer likes tea"})), scripted.Text("noted")},
		"clerk": {scripted.Tools(scripted.CallTool(memory.ToolWrite, map[string]any{"key": "drink", "text": "likes tea"})), scripted.Text("ok")},
	}
	def := absorb.Captain(captain)
	rt := newRuntime(t, st, script, "A", def)
	res, _, err := def.Run(swarmtest.Context(t), rt, "remember: tea", swarm.WithValues(map[string]any{"user": "hal"}))
	if err != nil || res.State() != swarm.StateCompleted {
		t.Fatalf("run: %v %v", res, err)
	}
	e, err := mem.Get(t.Context(), "user:hal", "drink")
	if err != nil || e.Text != "likes tea" {
		t.Fatalf("the absorbed agent's bank: %+v, %v", e, err)
	}
}
