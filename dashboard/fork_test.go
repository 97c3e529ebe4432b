package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/dashboard"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// TestForkFormEdits posts the run page's fork form with a tool result
// edited: the fork keeps the step with the edited output (line breaks as
// typed, not as the browser sends them) and marks it edited. Unticked, the
// offered value is not an edit: the step runs again.
func TestForkFormEdits(t *testing.T) {
	charge := swarm.NewTool("charge", "charges", func(context.Context, struct{}) (string, error) { return "charged", nil })
	shop := swarm.Define[string, string]("shop", "", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Sell {{.Input}}.", Tools: []swarm.Tool{charge}}
	})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"shop": {
		scripted.Tools(scripted.CallTool("charge", map[string]any{})),
		scripted.Text("sold"),
	}}, shop)
	ts := serveDashboard(t, rt, dashboard.Options{})
	start(t, rt, "shop", "sale-1")
	ctx := swarmtest.Context(t)
	b := newBrowser(t, ts.URL)
	p := b.get("/ui/runs/sale-1")
	if !strings.Contains(p.body, `id="fork-edit-output"`) {
		t.Fatal("the run page's fork form has no field to edit a step")
	}
	const key = "t1/tool/call_shop_0_0"
	fork := func(form url.Values) swarm.Event {
		t.Helper()
		form.Set("csrf", csrf(t, p))
		form.Set("at", key)
		res := b.do("POST", "/ui/runs/sale-1/fork", form, nil)
		if res.status != http.StatusSeeOther {
			t.Fatalf("fork %v: %d %s", form, res.status, res.body)
		}
		id, _ := url.PathUnescape(strings.TrimPrefix(res.header.Get("Location"), "/ui/runs/"))
		if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
			t.Fatalf("fork: %+v %v", st, err)
		}
		history, err := rt.History(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(history, func(ev swarm.Event) bool { return ev.Key == key })
		if i < 0 {
			t.Fatalf("no %s in the fork", key)
		}
		return history[i]
	}
	if ev := fork(url.Values{"edit": {"on"}, "edit_key": {key}, "edit_output": {"declined\r\ntry another card"}}); !ev.Edited || ev.Output != "declined\ntry another card" {
		t.Errorf("the edited fork's %s: edited %v, output %q", key, ev.Edited, ev.Output)
	}
	if ev := fork(url.Values{"edit_key": {key}, "edit_output": {"charged"}}); ev.Edited || ev.Output != "charged" {
		t.Errorf("the fork without the edit ticked: %s edited %v, output %q", key, ev.Edited, ev.Output)
	}
	form := url.Values{"csrf": {csrf(t, p)}, "at": {"t1/model"}, "edit": {"on"}, "edit_key": {key}, "edit_output": {"x"}}
	if res := b.do("POST", "/ui/runs/sale-1/fork", form, nil); res.status != http.StatusBadRequest || !strings.Contains(res.body, "after the fork point") {
		t.Errorf("an edit after the fork point: %d, want 400 saying why", res.status)
	}
}
