package dashboard_test

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

func TestTeamPages(t *testing.T) {
	ts, rt := serve(t, false)
	// No member calls a model: alice has no prompt and nobody talks to
	// the lead.
	crew := team.DefineTeam("crew", "A lead and a coder", team.TeamSpec{
		Lead:    &swarm.Agent{Name: "lead"},
		Members: []team.Teammate{{Name: "alice", Role: "coder"}},
	})
	ctx := swarmtest.Context(t)
	tr, err := crew.Start(ctx, rt, "", swarm.WithID("crew-1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Send(ctx, "lead", "a <b>bold</b> note"); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.AddTask(ctx, "Write the parser", "in Go"); err != nil {
		t.Fatal(err)
	}
	admin := newBrowser(t, ts.URL)
	admin.login(adminSecret)
	p := admin.get("/ui/teams")
	if p.status != 200 || !strings.Contains(p.body, `href="/ui/teams/crew-1"`) {
		t.Fatalf("teams page: %d %s", p.status, p.body)
	}
	p = admin.get("/ui/teams/crew-1")
	for _, want := range []string{"alice", "coder", "idle", "Write the parser", "a &lt;b&gt;bold&lt;/b&gt; note", "No protocol requests."} {
		if !strings.Contains(p.body, want) {
			t.Errorf("team page lacks %q", want)
		}
	}
	if p.status != 200 {
		t.Errorf("team page: %d", p.status)
	}
	// A token limited to another swarm sees neither the team nor its page.
	echoer := newBrowser(t, ts.URL)
	echoer.login(echoSecret)
	if p := echoer.get("/ui/teams"); strings.Contains(p.body, "crew-1") {
		t.Errorf("a token limited to echo lists the team")
	}
	if p := echoer.get("/ui/teams/crew-1"); p.status != 403 {
		t.Errorf("a token limited to echo: team page %d, want 403", p.status)
	}
	// A run that is not a team's, and no run at all.
	start(t, rt, "echo", "echo-1")
	if p := admin.get("/ui/teams/echo-1"); p.status != 404 {
		t.Errorf("a run that is not a team's: %d, want 404", p.status)
	}
	if p := admin.get("/ui/teams/nope"); p.status != 404 {
		t.Errorf("no run: %d, want 404", p.status)
	}
}

// TestTeamActions posts the team page's forms as a browser does: mail a
// member and every member, add a task, shut a teammate down; each needs
// the CSRF token and a token that may use the team's swarm, and bad input
// gets a clear status.
func TestTeamActions(t *testing.T) {
	ts, rt := serve(t, false)
	crew := team.DefineTeam("crew", "A lead and a coder", team.TeamSpec{
		Lead:    &swarm.Agent{Name: "lead"},
		Members: []team.Teammate{{Name: "alice", Role: "coder"}},
	})
	ctx := swarmtest.Context(t)
	tr, err := crew.Start(ctx, rt, "", swarm.WithID("crew-2"))
	if err != nil {
		t.Fatal(err)
	}
	admin := newBrowser(t, ts.URL)
	admin.login(adminSecret)
	team := admin.get("/ui/teams/crew-2")
	tok := csrf(t, team)
	post := func(b *browser, path string, form url.Values) page {
		t.Helper()
		return b.do("POST", path, form, nil)
	}
	form := func(kv ...string) url.Values {
		v := url.Values{"csrf": {tok}}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	if p := post(admin, "/ui/teams/crew-2/mail", url.Values{"to": {"alice"}, "content": {"hi"}}); p.status != http.StatusForbidden {
		t.Errorf("mail without the CSRF token: %d, want 403", p.status)
	}
	// Mail goes to the lead, which waits for the user's message and so
	// reads its mail later: nothing calls a model here.
	if p := post(admin, "/ui/teams/crew-2/mail", form("to", "lead", "content", "Use Go.")); p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/teams/crew-2" {
		t.Errorf("mail: %d %s, want 303 to the team page", p.status, p.header.Get("Location"))
	}
	if p := post(admin, "/ui/teams/crew-2/mail", form("to", "lead", "content", "From its page.", "back", "crew-2")); p.header.Get("Location") != "/ui/runs/crew-2" {
		t.Errorf("mail from a member's page goes back to %q", p.header.Get("Location"))
	}
	mails, err := tr.Inbox(ctx, "lead")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range mails {
		got = append(got, m.From+": "+m.Content)
	}
	if want := []string{"user: Use Go.", "user: From its page."}; !slices.Equal(got, want) {
		t.Errorf("the lead's mail %q, want %q", got, want)
	}
	for _, c := range []struct {
		form url.Values
		want int
	}{
		{form("to", "alice", "content", "  "), http.StatusBadRequest},
		{form("to", "bob", "content", "hi"), http.StatusNotFound},
	} {
		if p := post(admin, "/ui/teams/crew-2/mail", c.form); p.status != c.want {
			t.Errorf("mail %v: %d, want %d", c.form, p.status, c.want)
		}
	}
	// The page's live part alone, with the history.
	p := admin.get("/ui/teams/crew-2?fragment=live")
	if p.status != http.StatusOK || strings.Contains(p.body, "<html") || strings.Count(p.body, "Use Go.") != 1 || !strings.Contains(p.body, `<tr data-member="alice">`) {
		t.Errorf("the team page's live part: %d %s", p.status, p.body)
	}

	if p := post(admin, "/ui/teams/crew-2/tasks", form("subject", "Write the parser", "description", "in Go")); p.status != http.StatusSeeOther {
		t.Errorf("add task: %d %s", p.status, p.body)
	}
	if p := post(admin, "/ui/teams/crew-2/tasks", form("subject", "Test it", "blocked_by", "#1")); p.status != http.StatusSeeOther {
		t.Errorf("add a blocked task: %d %s", p.status, p.body)
	}
	for _, bad := range []url.Values{form("subject", ""), form("subject", "x", "blocked_by", "one"), form("subject", "x", "blocked_by", "9")} {
		if p := post(admin, "/ui/teams/crew-2/tasks", bad); p.status != http.StatusBadRequest && p.status != http.StatusNotFound {
			t.Errorf("add task %v: %d, want 400 or 404", bad, p.status)
		}
	}
	tasks, err := tr.Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[1].Subject != "Test it" || !slices.Equal(tasks[1].BlockedBy, []int64{1}) {
		t.Errorf("tasks %+v", tasks)
	}

	// A token limited to another swarm may do none of it.
	echoer := newBrowser(t, ts.URL)
	echoer.login(echoSecret)
	etok := csrf(t, echoer.get("/ui/swarms"))
	for _, path := range []string{"/ui/teams/crew-2/mail", "/ui/teams/crew-2/tasks", "/ui/teams/crew-2/shutdown"} {
		if p := post(echoer, path, url.Values{"csrf": {etok}, "to": {"alice"}, "content": {"x"}, "subject": {"x"}, "member": {"alice"}}); p.status != http.StatusForbidden {
			t.Errorf("%s with a token limited to echo: %d, want 403", path, p.status)
		}
	}

	// Shut down: only a teammate, with the reason given.
	if p := post(admin, "/ui/teams/crew-2/shutdown", form("member", "lead")); p.status != http.StatusNotFound {
		t.Errorf("shut down the lead: %d, want 404", p.status)
	}
	if p := post(admin, "/ui/teams/crew-2/shutdown", form("member", "alice", "reason", "not needed")); p.status != http.StatusSeeOther {
		t.Errorf("shut down alice: %d %s", p.status, p.body)
	}
	st, err := rt.Status(ctx, "crew-2~alice")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != swarm.StateStopped || st.Reason != "not needed" {
		t.Errorf("alice after her shutdown: %s %q", st.State, st.Reason)
	}
	if p := post(admin, "/ui/teams/crew-2/shutdown", form("member", "alice")); p.status != http.StatusConflict {
		t.Errorf("shut down alice again: %d, want 409", p.status)
	}
	if p := admin.get("/ui/teams/crew-2"); strings.Contains(p.body, `<option value="alice">`) {
		t.Errorf("an ended teammate is offered as a recipient")
	}
}

// TestDeleteRun deletes a finished run from its page; a running one is
// refused.
func TestDeleteRun(t *testing.T) {
	ts, rt := serve(t, false)
	start(t, rt, "echo", "echo-del")
	start(t, rt, "slow", "slow-del")
	b := newBrowser(t, ts.URL)
	b.login(adminSecret)
	p := b.get("/ui/runs/echo-del")
	if !strings.Contains(p.body, `action="/ui/runs/echo-del/delete"`) {
		t.Fatalf("a finished run's page offers no delete")
	}
	tok := csrf(t, p)
	if p := b.get("/ui/runs/slow-del"); strings.Contains(p.body, "/delete") {
		t.Errorf("a running run's page offers delete")
	}
	if p := b.do("POST", "/ui/runs/slow-del/delete", url.Values{"csrf": {tok}}, nil); p.status != http.StatusConflict {
		t.Errorf("delete a running run: %d, want 409", p.status)
	}
	if p := b.do("POST", "/ui/runs/echo-del/delete", url.Values{}, nil); p.status != http.StatusForbidden {
		t.Errorf("delete without the CSRF token: %d, want 403", p.status)
	}
	if p := b.do("POST", "/ui/runs/echo-del/delete", url.Values{"csrf": {tok}}, nil); p.status != http.StatusSeeOther {
		t.Errorf("delete: %d %s", p.status, p.body)
	}
	if _, err := rt.Status(swarmtest.Context(t), "echo-del"); !errors.Is(err, swarm.ErrNotFound) {
		t.Errorf("after delete: %v, want ErrNotFound", err)
	}
}
