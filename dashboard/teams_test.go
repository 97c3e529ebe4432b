package dashboard_test

import (
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
