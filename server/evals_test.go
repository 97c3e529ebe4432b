package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// evalFixture is a runtime with the eval runner and two finished eval
// runs of one set of three cases, against the echo swarm ("done", a.yaml)
// and the approval swarm (which pauses, b.yaml): the first passes one
// case of three, the second none.
func evalFixture(t *testing.T) (*swarm.Runtime, []string) {
	t.Helper()
	rt, _ := swarmtest.NewRuntime(t, testScript(), testSwarms()...)
	if err := eval.Define(rt, eval.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx := swarmtest.Context(t)
	var ids []string
	for _, c := range []struct{ swarm, config string }{{"echo", "a.yaml"}, {"approval", "b.yaml"}} {
		set := &eval.Set{Name: "support", Swarm: c.swarm, Cases: []eval.Case{
			{ID: "a", Input: "hi", Expect: eval.Expect{Output: &eval.Output{Contains: []string{"done"}}}},
			{ID: "b", Input: "hi", Expect: eval.Expect{Output: &eval.Output{Contains: []string{"nothing like it"}}}},
			{ID: "c", Input: "hi", Expect: eval.Expect{Output: &eval.Output{Regex: "^x"}}},
		}}
		r, err := eval.Run(ctx, rt, set, eval.RunOptions{Config: c.config})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.RunID)
	}
	return rt, ids
}

// TestEvalRoutes: GET /v1/evals lists eval runs with their set,
// configuration and counts (and not other runs); GET /v1/evals/{id} has
// the report; a run that is no eval run is 404 not_an_eval; the compare
// route compares two finished eval runs case by case.
func TestEvalRoutes(t *testing.T) {
	rt, ids := evalFixture(t)
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
	if res.status != http.StatusOK || one.Report == nil || len(one.Report.Cases) != 3 || one.Report.Cases[0].Observed.RunID != ids[1]+".case.a" || one.Eval.Config != "b.yaml" {
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
	rt, ids := evalFixture(t)
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

// TestEvalRouteWhileRunning: while an eval run runs, GET /v1/evals/{id}
// has no report but the cases finished so far, and the list its counts.
func TestEvalRouteWhileRunning(t *testing.T) {
	// The desk answers at once, except to "wait", which it never answers
	// (until the test ends).
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; strings.Contains(last.Content, "wait") {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "done"}}, nil
	})
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(swarm.Define[string, string]("desk", "answers", nil)); err != nil {
		t.Fatal(err)
	}
	if err := eval.Define(rt, eval.Options{}); err != nil {
		t.Fatal(err)
	}
	ts, _ := serveRuntime(t, rt, Options{})
	c := client{t: t, base: ts.URL}
	set := &eval.Set{Name: "half", Swarm: "desk", Parallel: 1, Cases: []eval.Case{
		{ID: "quick", Input: "hi", Expect: eval.Expect{Output: &eval.Output{Contains: []string{"done"}}}},
		{ID: "stuck", Input: "wait", Expect: eval.Expect{Output: &eval.Output{Contains: []string{"done"}}}},
	}}
	ctx := swarmtest.Context(t)
	id, err := eval.Start(ctx, rt, set, eval.RunOptions{Config: "c.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	var one EvalRun
	for deadline := time.Now().Add(swarmtest.Timeout); len(one.Progress) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no case finished: %+v", one)
		}
		c.get("/v1/evals/"+id).decode(t, &one)
	}
	if one.Report != nil || one.Eval.State != swarm.StateRunning || one.Eval.Done != 1 || one.Eval.Total != 2 || one.Eval.Passed != 1 ||
		one.Progress[0].Case != "quick" || !one.Progress[0].Pass || one.Eval.Config != "c.yaml" {
		t.Errorf("a running eval run: %+v", one)
	}
	var list EvalList
	c.get("/v1/evals").decode(t, &list)
	if len(list.Evals) != 1 || list.Evals[0].Done != 1 || list.Evals[0].State != swarm.StateRunning {
		t.Errorf("list %+v", list)
	}
	if res := c.get("/v1/evals/" + id + "/compare/" + id); res.status != http.StatusConflict {
		t.Errorf("comparing a running eval run: %d %s", res.status, res.body)
	}
}
