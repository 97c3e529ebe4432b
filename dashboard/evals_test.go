package dashboard_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/dashboard"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// evalRuntime is a runtime with a support desk under test (a swarm that
// refunds with a tool, or answers without it in its second version),
// the eval runner, and two finished eval runs of one set, one per
// version; it returns their ids.
func evalRuntime(t *testing.T) (*swarm.Runtime, string, string) {
	t.Helper()
	refund := swarm.NewTool("refund", "Refunds an order", func(ctx context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		return "refunded " + in.Order, nil
	})
	desk := swarm.Define[string, string]("desk", "answers customers", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{refund}} })
	desk2 := swarm.Define[string, string]("desk2", "answers customers, v2", nil)
	judge := &swarm.Agent{Name: "judge", Description: "grades answers", Instructions: "Grade the answer."}
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{
		"desk":  {scripted.Tools(scripted.CallTool("refund", map[string]any{"order": "1234"})), scripted.Text("Refunded order 1234 <b>now</b>.")},
		"desk2": {scripted.Text("Please wait.")},
		"judge": {scripted.Text(`{"score": 0.9, "label": "kind", "explanation": "Says what was done."}`), scripted.Text(`{"score": 0.9, "label": "kind", "explanation": "Says what was done."}`),
			scripted.Text(`{"score": 0.9, "label": "kind", "explanation": "Says what was done."}`), scripted.Text(`{"score": 0.9, "label": "kind", "explanation": "Says what was done."}`)},
	}, desk, desk2)
	if err := rt.RegisterAgent(judge); err != nil {
		t.Fatal(err)
	}
	if err := eval.Define(rt, eval.Options{}); err != nil {
		t.Fatal(err)
	}
	set := func(swarmID string) *eval.Set {
		return &eval.Set{Name: "support", Swarm: swarmID, Judge: "judge", Cases: []eval.Case{
			{ID: "refund", Input: "charged twice for 1234", Expect: eval.Expect{
				Trajectory: &eval.Trajectory{Calls: []eval.Call{{Name: "refund", Args: map[string]any{"order": "1234"}}}},
				Output:     &eval.Output{Contains: []string{"Refunded"}},
			}},
			{ID: "tone", Input: "charged twice!", Expect: eval.Expect{Rubrics: []eval.Rubric{{Name: "kind", Criteria: "kind and clear"}}}},
		}}
	}
	ctx := swarmtest.Context(t)
	a, err := eval.Run(ctx, rt, set("desk"), eval.RunOptions{Config: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := eval.Run(ctx, rt, set("desk2"), eval.RunOptions{Config: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	return rt, a.RunID, b.RunID
}

// TestEvalPages: the evals page lists the eval runs with their set,
// configuration and counts; an eval run's page has every case with its
// scores, labels and explanations and a link to its run; two eval runs
// side by side diff the outputs and the trajectories; output is escaped.
func TestEvalPages(t *testing.T) {
	rt, a, b := evalRuntime(t)
	ts := serveDashboard(t, rt, dashboard.Options{})
	br := newBrowser(t, ts.URL)

	p := br.get("/ui/evals")
	if p.status != http.StatusOK {
		t.Fatalf("evals: %d %s", p.status, p.body)
	}
	for _, want := range []string{`href="/ui/evals/` + url.PathEscape(a) + `"`, `href="/ui/evals/` + url.PathEscape(b) + `"`, ">v1<", ">v2<", "support", `action="/ui/evals/compare"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("evals page lacks %q", want)
		}
	}

	p = br.get("/ui/evals/" + url.PathEscape(a))
	if p.status != http.StatusOK {
		t.Fatalf("eval: %d %s", p.status, p.body)
	}
	for _, want := range []string{`data-case="refund"`, `data-case="tone"`, `href="/ui/runs/` + url.PathEscape(a+".case.refund") + `"`,
		"Says what was done.", ">kind<", "Refunded order 1234 &lt;b&gt;now&lt;/b&gt;.", `name="other">`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("eval page lacks %q", want)
		}
	}
	if strings.Contains(p.body, "<b>now</b>") {
		t.Error("a case's output is not escaped")
	}

	p = br.get("/ui/evals/compare?base=" + url.QueryEscape(a) + "&other=" + url.QueryEscape(b))
	if p.status != http.StatusOK {
		t.Fatalf("compare: %d %s", p.status, p.body)
	}
	body := html.UnescapeString(p.body)
	for _, want := range []string{`<span class="d-del">- desk → refund({"order":"1234"})</span>`, `<span class="d-del">- Refunded order 1234 <b>now</b>.</span>`,
		`<span class="d-add">+ Please wait.</span>`, "pass rate"} {
		if !strings.Contains(body, want) {
			t.Errorf("compare page lacks %q:\n%s", want, p.body)
		}
	}

	for path, status := range map[string]int{
		"/ui/evals/nope":                   http.StatusNotFound,
		"/ui/evals/" + a + ".case.refund":  http.StatusNotFound, // a run, not an eval run
		"/ui/evals/compare?base=" + a:      http.StatusBadRequest,
		"/ui/evals/compare?base=x&other=y": http.StatusNotFound,
	} {
		if p := br.get(path); p.status != status {
			t.Errorf("%s: %d, want %d", path, p.status, status)
		}
	}
}

// TestEvalPagesNeedTheEvalSwarm: a token that may not use the eval swarm
// is refused the evals pages; one that may use it but not the swarm under
// test does not see that swarm's eval runs.
func TestEvalPagesNeedTheEvalSwarm(t *testing.T) {
	rt, a, _ := evalRuntime(t)
	authn, err := auth.New([]auth.Token{
		{Name: "desk", Secret: "desk-secret-0", Swarms: []string{"desk"}},
		{Name: "evals", Secret: "evals-secret-0", Swarms: []string{eval.SwarmID, "desk2"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveDashboard(t, rt, dashboard.Options{Auth: authn})
	br := newBrowser(t, ts.URL)
	br.login("desk-secret-0")
	if p := br.get("/ui/evals"); p.status != http.StatusForbidden {
		t.Errorf("evals without the eval swarm: %d", p.status)
	}
	br = newBrowser(t, ts.URL)
	br.login("evals-secret-0")
	p := br.get("/ui/evals")
	if p.status != http.StatusOK || strings.Contains(p.body, a) || !strings.Contains(p.body, ">v2<") {
		t.Errorf("evals with the eval swarm but not desk: %d, shows %s: %t", p.status, a, strings.Contains(p.body, a))
	}
	if p := br.get("/ui/evals/" + url.PathEscape(a)); p.status != http.StatusForbidden {
		t.Errorf("eval run of desk: %d", p.status)
	}
}
