package server

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// evalFixture is a runtime whose eval swarm answers with fixed reports:
// the routes read eval runs from the store as any eval runner leaves
// them (input: the set and options; result: the report).
func evalFixture(t *testing.T, reports ...eval.Report) (*swarm.Runtime, []string) {
	t.Helper()
	byRun := map[string]string{}
	for _, r := range reports {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		byRun[r.RunID] = string(b)
	}
	// The eval swarm's model answers each eval run with its report; the
	// other swarms answer from the test script.
	sm := scripted.New(testScript())
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if req.Agent == eval.SwarmID {
			return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: byRun[req.RunID]}}, nil
		}
		return sm.Generate(ctx, req)
	})
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	evalSwarm := swarm.Define[eval.Input, eval.Report](eval.SwarmID, "the eval runner", nil)
	if err := rt.Register(append(testSwarms(), evalSwarm)...); err != nil {
		t.Fatal(err)
	}
	ctx := swarmtest.Context(t)
	var ids []string
	for i, r := range reports {
		in, _ := json.Marshal(eval.Input{Set: &eval.Set{Name: r.Set, Swarm: r.Swarm, Cases: make([]eval.Case, len(r.Cases))}, Config: r.Config})
		id, err := rt.Start(ctx, eval.SwarmID, in, swarm.WithID(r.RunID))
		if err != nil {
			t.Fatal(err)
		}
		if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
			t.Fatalf("fixture eval run %d: %v %+v", i, err, st)
		}
		ids = append(ids, id)
	}
	return rt, ids
}

func fixtureReport(id, config string, pass ...bool) eval.Report {
	r := eval.Report{Set: "support", Swarm: "echo", Config: config, RunID: id, Threshold: 1}
	for i, p := range pass {
		c := eval.CaseResult{Case: string(rune('a' + i)), Pass: p, Observed: eval.Observed{RunID: id + "~" + string(rune('a'+i)), Output: "out"},
			Scores: []eval.Score{{Name: "output", Value: map[bool]float64{true: 1, false: 0}[p], Threshold: 1, Pass: p}}}
		r.Cases = append(r.Cases, c)
		if p {
			r.Passed++
		} else {
			r.Failed++
		}
	}
	r.PassRate = float64(r.Passed) / float64(len(r.Cases))
	r.Pass = r.Passed == len(r.Cases)
	return r
}

// TestEvalRoutes: GET /v1/evals lists eval runs with their set,
// configuration and counts (and not other runs); GET /v1/evals/{id} has
// the report; a run that is no eval run is 404 not_an_eval; the compare
// route compares two finished eval runs case by case.
func TestEvalRoutes(t *testing.T) {
	rt, ids := evalFixture(t, fixtureReport("ev-a", "a.yaml", true, false, false), fixtureReport("ev-b", "b.yaml", true, true, false))
	ts, _ := serveRuntime(t, rt, Options{})
	c := client{t: t, base: ts.URL}
	c.start("echo", `{"input": "hi"}`)

	var list EvalList
	res := c.get("/v1/evals")
	res.decode(t, &list)
	if res.status != http.StatusOK || len(list.Evals) != 2 {
		t.Fatalf("GET /v1/evals: %d %s", res.status, res.body)
	}
	byID := map[string]eval.RunInfo{}
	for _, e := range list.Evals {
		byID[e.ID] = e
	}
	if a := byID[ids[0]]; a.Set != "support" || a.Config != "a.yaml" || a.State != swarm.StateCompleted || a.Passed != 1 || a.Failed != 2 || a.Total != 3 || a.PassRate != 1.0/3 {
		t.Errorf("eval a listed as %+v", a)
	}

	var one EvalRun
	res = c.get("/v1/evals/" + ids[1])
	res.decode(t, &one)
	if res.status != http.StatusOK || one.Report == nil || len(one.Report.Cases) != 3 || one.Report.Cases[0].Observed.RunID != "ev-b~a" || one.Eval.Config != "b.yaml" {
		t.Fatalf("GET /v1/evals/%s: %d %s", ids[1], res.status, res.body)
	}

	runs, err := rt.List(swarmtest.Context(t), store.Filter{Swarm: "echo"})
	if err != nil || len(runs) == 0 {
		t.Fatal(err)
	}
	if res := c.get("/v1/evals/" + runs[0].ID); res.status != http.StatusNotFound || res.errorCode() != "not_an_eval" {
		t.Errorf("a run of echo as an eval: %d %s", res.status, res.body)
	}
	if res := c.get("/v1/evals/nope"); res.status != http.StatusNotFound {
		t.Errorf("unknown eval run: %d %s", res.status, res.body)
	}

	var cmp eval.Comparison
	res = c.get("/v1/evals/" + ids[0] + "/compare/" + ids[1])
	res.decode(t, &cmp)
	if res.status != http.StatusOK || cmp.BaseRun != ids[0] || cmp.OtherRun != ids[1] {
		t.Fatalf("compare: %d %s", res.status, res.body)
	}
	if res := c.get("/v1/evals?limit=0"); res.status != http.StatusBadRequest {
		t.Errorf("limit=0: %d", res.status)
	}
}

// TestEvalRoutesNeedTheEvalSwarm: a token that may not use the eval swarm
// gets 403 from the eval routes; one allowed eval but not the swarm under
// test does not see its eval runs.
func TestEvalRoutesNeedTheEvalSwarm(t *testing.T) {
	rt, ids := evalFixture(t, fixtureReport("ev-a", "a.yaml", true))
	a, err := auth.New([]auth.Token{
		{Name: "echo-only", Secret: "s1", Swarms: []string{"echo"}},
		{Name: "eval-only", Secret: "s2", Swarms: []string{eval.SwarmID}},
		{Name: "both", Secret: "s3", Swarms: []string{eval.SwarmID, "echo"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := serveRuntime(t, rt, Options{Auth: a})
	for _, tc := range []struct {
		token      string
		list, read int
		listed     int
	}{
		{"s1", http.StatusForbidden, http.StatusForbidden, 0},
		{"s2", http.StatusOK, http.StatusForbidden, 0},
		{"s3", http.StatusOK, http.StatusOK, 1},
	} {
		c := client{t: t, base: ts.URL, token: tc.token}
		res := c.get("/v1/evals")
		var list EvalList
		if res.status == http.StatusOK {
			res.decode(t, &list)
		}
		if res.status != tc.list || len(list.Evals) != tc.listed {
			t.Errorf("token %s: list %d with %d evals, want %d with %d", tc.token, res.status, len(list.Evals), tc.list, tc.listed)
		}
		if res := c.get("/v1/evals/" + ids[0]); res.status != tc.read {
			t.Errorf("token %s: read %d, want %d", tc.token, res.status, tc.read)
		}
	}
}
