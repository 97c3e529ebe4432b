package swarm_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// Verdict is a result whose schema says more than its Go type: every
// result below decodes into it, but only the last one conforms.
type Verdict struct {
	Decision string `json:"decision"`
	Code     string `json:"code"`
}

const verdictSchema = `{"type":"object","properties":{
	"decision":{"type":"string","enum":["approve","reject"]},
	"code":{"type":"string","pattern":"^[A-Z]{2}-[0-9]+$"}},
	"required":["decision","code"]}`

// schemaBreakers fit Verdict but break verdictSchema: a missing required
// field, a value outside the enum, a pattern violation.
var schemaBreakers = []string{
	`{"code":"AB-1"}`,
	`{"decision":"maybe","code":"AB-1"}`,
	`{"decision":"approve","code":"ab1"}`,
}

const goodVerdict = `{"decision":"reject","code":"CD-22"}`

// verdictRun runs a verdict swarm with MaxTurns turns on script and returns
// its result, its events and the requests the model got.
func verdictRun(t *testing.T, maxTurns int, steps ...scripted.Step) (swarm.Result[Verdict], []swarm.Event, []*model.Request) {
	t.Helper()
	for _, b := range schemaBreakers {
		var v Verdict
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Fatalf("%s does not fit the Go type: %v", b, err)
		}
	}
	var mu sync.Mutex
	var reqs []*model.Request
	rt, _ := watchedRuntime(t, swarm.Config{}, scripted.Script{"verdict": steps}, func(req *model.Request) {
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
	})
	s := swarm.Define[string, Verdict]("verdict", "Decides", func(string) swarm.Spec { return swarm.Spec{MaxTurns: maxTurns} }).
		WithResultSchema(json.RawMessage(verdictSchema))
	ctx := swarmtest.Context(t)
	res, run, err := s.Run(ctx, rt, "decide")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return res, swarmtest.Events(t, rt, run.ID()), reqs
}

func TestCompleteWithResultBreakingSchemaIsAnErrorResult(t *testing.T) {
	var steps []scripted.Step
	for _, b := range schemaBreakers {
		steps = append(steps, scripted.Tools(scripted.CallTool("complete", map[string]any{"result": json.RawMessage(b)})))
	}
	steps = append(steps, scripted.Tools(scripted.CallTool("complete", map[string]any{"result": json.RawMessage(goodVerdict)})))
	res, evs, reqs := verdictRun(t, 0, steps...)
	c, ok := res.(swarm.Completed[Verdict])
	if !ok || c.Output != (Verdict{Decision: "reject", Code: "CD-22"}) {
		t.Fatalf("result %#v, want completed with %s", res, goodVerdict)
	}
	var errs []string
	for _, e := range evs {
		if e.Type == swarm.EventToolResult && e.Tool == "complete" {
			if !e.IsError {
				t.Errorf("complete(%s) was not an error result", e.Output)
			}
			errs = append(errs, e.Output)
		}
	}
	if len(errs) != len(schemaBreakers) {
		t.Fatalf("%d error results for complete, want %d: %q", len(errs), len(schemaBreakers), errs)
	}
	for i, e := range errs {
		if !strings.Contains(e, "result schema") {
			t.Errorf("complete(%s) error %q does not name the result schema", schemaBreakers[i], e)
		}
	}
	// The model saw each error and got another turn.
	if len(reqs) != len(schemaBreakers)+1 {
		t.Fatalf("%d model calls, want %d", len(reqs), len(schemaBreakers)+1)
	}
	for i := 1; i < len(reqs); i++ {
		last := reqs[i].Messages[len(reqs[i].Messages)-1]
		if last.Role != model.RoleTool || !last.IsError || !strings.Contains(last.Content, "result schema") {
			t.Errorf("model call %d: last message %+v, want the schema error of complete(%s)", i, last, schemaBreakers[i-1])
		}
	}
}

func TestTextResultBreakingSchemaGetsAnotherTurn(t *testing.T) {
	var steps []scripted.Step
	for _, b := range schemaBreakers {
		steps = append(steps, scripted.Text(b))
	}
	res, _, reqs := verdictRun(t, 0, append(steps, scripted.Text(goodVerdict))...)
	if c, ok := res.(swarm.Completed[Verdict]); !ok || c.Output != (Verdict{Decision: "reject", Code: "CD-22"}) {
		t.Fatalf("result %#v, want completed with %s", res, goodVerdict)
	}
	if len(reqs) != len(schemaBreakers)+1 {
		t.Fatalf("%d model calls, want %d", len(reqs), len(schemaBreakers)+1)
	}
	for i := 1; i < len(reqs); i++ {
		last := reqs[i].Messages[len(reqs[i].Messages)-1]
		if last.Role != model.RoleUser || !strings.Contains(last.Content, "not a valid result") || !strings.Contains(last.Content, "result schema") {
			t.Errorf("model call %d: last message %+v, want the schema error of %s", i, last, schemaBreakers[i-1])
		}
	}
}

func TestRunNeverCompletesWithResultBreakingSchema(t *testing.T) {
	// Only schema breakers, as text and through complete: the run ends
	// at its max turns, never completed with one of them.
	var steps []scripted.Step
	for _, b := range schemaBreakers {
		steps = append(steps, scripted.Text(b), scripted.Tools(scripted.CallTool("complete", map[string]any{"result": json.RawMessage(b)})))
	}
	res, evs, _ := verdictRun(t, len(steps), steps...)
	if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, "max turns") {
		t.Fatalf("result %#v, want failed at max turns", res)
	}
	for _, e := range evs {
		if e.Type == swarm.EventCompleted {
			t.Errorf("run completed with %s", e.Result)
		}
	}
}

func TestDerivedSchemaRequiresFields(t *testing.T) {
	// Activity's schema is derived from the Go type: activity is required
	// (no omitempty), so {"day": ...} decodes but does not conform.
	rt, m := newRuntime(t, scripted.Script{
		"planner": {
			scripted.Text(`{"day":"Sunday"}`),
			scripted.Tools(scripted.CallTool("complete", map[string]any{"result": map[string]any{"day": "Sunday"}})),
			scripted.Text(`{"activity":"rowing","day":"Sunday"}`),
		},
	}, nil)
	res, run, err := planner().Run(swarmtest.Context(t), rt, "x")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[Activity]); !ok || c.Output != (Activity{Activity: "rowing", Day: "Sunday"}) {
		t.Fatalf("result %#v, want rowing on Sunday", res)
	}
	swarmtest.AssertScriptConsumed(t, m, run.ID())
}
