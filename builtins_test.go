package swarm_test

import (
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
)

// The built-in tools go out only where they are needed: complete not to a
// swarm whose text answer completes, none with Spec.NoBuiltins.
func TestBuiltinsOffered(t *testing.T) {
	type verdict struct {
		OK bool `json:"ok"`
	}
	spec := func(off bool) func(string) swarm.Spec {
		return func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{lookup}, NoBuiltins: off} }
	}
	text := swarm.Define[string, string]("text", "", spec(false))
	typed := swarm.Define[string, verdict]("typed", "", spec(false))
	bare := swarm.Define[string, verdict]("bare", "", spec(true))
	rt, rec := newRecorded(t, scripted.Script{
		// A text swarm still honours complete (a journal may hold one).
		"text":  {scripted.Tools(scripted.CallTool("complete", map[string]any{"result": "done"}))},
		"typed": {scripted.Text(`{"ok": true}`)},
		// Without built-ins, pause is an unknown tool; a JSON answer completes.
		"bare": {scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "?"})), scripted.Text(`{"ok": true}`)},
	}, swarm.Config{})
	ctx := ctxT(t)
	res, _, err := text.Run(ctx, rt, "x")
	if c, ok := res.(swarm.Completed[string]); err != nil || !ok || c.Output != "done" {
		t.Fatalf("text: %#v %v", res, err)
	}
	if got := toolNames(rec.last("text")); got != "lookup,pause,fail" {
		t.Errorf("text swarm offered %s, want lookup,pause,fail", got)
	}
	res, _, err = typed.Run(ctx, rt, "x")
	if c, ok := res.(swarm.Completed[verdict]); err != nil || !ok || !c.Output.OK {
		t.Fatalf("typed: %#v %v", res, err)
	}
	if got := toolNames(rec.last("typed")); got != "lookup,complete,pause,fail" {
		t.Errorf("typed swarm offered %s, want lookup,complete,pause,fail", got)
	}
	res, run, err := bare.Run(ctx, rt, "x")
	if c, ok := res.(swarm.Completed[verdict]); err != nil || !ok || !c.Output.OK {
		t.Fatalf("bare: %#v %v", res, err)
	}
	if got := toolNames(rec.last("bare")); got != "lookup" {
		t.Errorf("swarm without built-ins offered %s, want lookup", got)
	}
	evs, err := rt.History(ctx, run.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	refused := false
	for _, e := range evs {
		if e.Type == swarm.EventToolResult && e.Tool == "pause" {
			refused = e.IsError && strings.Contains(e.Output, "unknown tool")
		}
		if e.Type == swarm.EventPaused {
			t.Errorf("a swarm without built-ins paused: %+v", e)
		}
	}
	if !refused {
		t.Errorf("pause without built-ins was not refused as an unknown tool: %+v", evs)
	}
}
