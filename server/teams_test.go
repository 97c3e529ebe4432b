package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

func TestTeamRoutes(t *testing.T) {
	team := team.DefineTeam("crew", "A lead and a coder", team.TeamSpec{
		Lead:    &swarm.Agent{Name: "lead"},
		Members: []team.Teammate{{Name: "alice", Role: "coder", Prompt: "Wait for work."}},
	})
	script := scripted.Script{"alice": {scripted.Text("Ready."), scripted.Text("Got it."), scripted.Text("Noted.")}}
	rt, _ := swarmtest.NewRuntime(t, script, testSwarms()...)
	ctx := swarmtest.Context(t)
	tr, err := team.Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New([]auth.Token{
		{Name: "crew", Secret: "s-crew", Swarms: []string{"crew"}},
		{Name: "echo-only", Secret: "s-echo", Swarms: []string{"echo"}},
		{Name: "admin", Secret: "s-admin", Swarms: []string{"*"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := serveRuntime(t, rt, Options{Auth: a})
	c := client{t: t, base: ts.URL, token: "s-crew"}
	admin := client{t: t, base: ts.URL, token: "s-admin"}
	base := "/v1/teams/" + tr.ID()
	echo, err := rt.Start(ctx, "echo", []byte(`"x"`))
	if err != nil {
		t.Fatal(err)
	}

	var roster Roster
	res := c.get(base)
	if res.status != 200 {
		t.Fatalf("GET roster: %d %s", res.status, res.body)
	}
	res.decode(t, &roster)
	if len(roster.Members) != 2 || roster.Members[0].Name != "lead" || roster.Members[1].Name != "alice" || roster.Members[1].Role != "coder" {
		t.Errorf("roster = %+v", roster)
	}
	if res := c.post(base+"/mail", `{"to": "alice", "content": "please review"}`); res.status != 201 || !strings.Contains(string(res.body), `"from":"user"`) {
		t.Errorf("POST mail: %d %s", res.status, res.body)
	}
	if res := c.post(base+"/mail", `{"to": "*", "content": "phase 1 complete"}`); res.status != 201 || !strings.Contains(string(res.body), `"alice"`) {
		t.Errorf("POST broadcast: %d %s", res.status, res.body)
	}
	if res := c.post(base+"/tasks", `{"subject": "Write the parser"}`); res.status != 201 || !strings.Contains(string(res.body), `"id":1`) {
		t.Errorf("POST task: %d %s", res.status, res.body)
	}
	if res := c.get(base + "/tasks"); res.status != 200 || !strings.Contains(string(res.body), "Write the parser") {
		t.Errorf("GET tasks: %d %s", res.status, res.body)
	}
	if res := c.get(base + "/requests"); res.status != 200 || string(res.body) != "{\"requests\":[]}\n" {
		t.Errorf("GET requests: %d %q", res.status, res.body)
	}
	if res := c.get(base + "/mail"); res.status != 200 || !strings.Contains(string(res.body), "phase 1 complete") {
		t.Errorf("GET the lead's mail: %d %s", res.status, res.body)
	}

	// Bad input and other tokens' teams.
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown member", "POST", base + "/mail", `{"to": "mallory", "content": "hi"}`, 404, "unknown_member"},
		{"mail without content", "POST", base + "/mail", `{"to": "alice"}`, 400, "bad_request"},
		{"oversize mail", "POST", base + "/mail", `{"to": "alice", "content": "` + strings.Repeat("x", 70_000) + `"}`, 413, "too_large"},
		{"task without subject", "POST", base + "/tasks", `{"subject": " "}`, 400, "invalid_input"},
		{"task blocked by a missing task", "POST", base + "/tasks", `{"subject": "x", "blocked_by": [9]}`, 400, "invalid_input"},
		{"inbox of an unknown member", "GET", base + "/mail?member=ghost", "", 404, "unknown_member"},
		{"unknown team", "GET", "/v1/teams/run_nope", "", 404, "not_found"},
		{"a run that is not a team's", "GET", "/v1/teams/" + echo + "/tasks", "", 404, "not_a_team"},
	} {
		res := admin.do(tc.method, tc.path, "application/json", tc.body)
		if res.status != tc.status || res.errorCode() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, res.status, res.body, tc.status, tc.code)
		}
	}
	other := client{t: t, base: ts.URL, token: "s-echo"}
	if res := other.get(base); res.status != 403 {
		t.Errorf("another swarm's token: %d %s", res.status, res.body)
	}
}

// TestTeamMailRetriedWithIDDeliversOnce: a mail posted twice with the same
// id (a client retrying a post cut off by a crash) is delivered once; the
// same id with other content is a conflict.
func TestTeamMailRetriedWithIDDeliversOnce(t *testing.T) {
	team := team.DefineTeam("crew", "A lead and a coder", team.TeamSpec{
		Lead:    &swarm.Agent{Name: "lead"},
		Members: []team.Teammate{{Name: "alice", Role: "coder"}},
	})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{}, testSwarms()...)
	ctx := swarmtest.Context(t)
	tr, err := team.Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := serveRuntime(t, rt, Options{})
	c := client{t: t, base: ts.URL}
	base := "/v1/teams/" + tr.ID()
	for _, to := range []string{"lead", "*"} {
		id := "m-" + strings.Trim(to, "*") + "1"
		body := `{"id": "` + id + `", "to": "` + to + `", "content": "deploy at noon"}`
		for i := range 2 {
			if res := c.post(base+"/mail", body); res.status != 201 {
				t.Fatalf("POST mail to %s, try %d: %d %s", to, i+1, res.status, res.body)
			}
		}
		if res := c.post(base+"/mail", `{"id": "`+id+`", "to": "`+to+`", "content": "deploy at one"}`); res.status != 409 || res.errorCode() != "conflict" {
			t.Errorf("the id of a mail to %s with other content: %d %s, want 409 conflict", to, res.status, res.body)
		}
	}
	for _, tc := range []struct{ member, ids string }{{"lead", "m-lead1 m-1"}, {"alice", "m-1"}} {
		mails, err := tr.Inbox(ctx, tc.member)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range mails {
			ids = append(ids, m.ID)
		}
		if strings.Join(ids, " ") != tc.ids {
			t.Errorf("%s's inbox holds mails %q, want %q once each", tc.member, ids, tc.ids)
		}
	}
	if res := c.post(base+"/mail", `{"id": "a b", "to": "lead", "content": "x"}`); res.status != 400 || res.errorCode() != "invalid_input" {
		t.Errorf("a mail id with a space: %d %s, want 400 invalid_input", res.status, res.body)
	}
}

// TestNoRequestIsNotFound: a protocol request that does not exist is 404
// unknown_request, not a missing run.
func TestNoRequestIsNotFound(t *testing.T) {
	err := fmt.Errorf("no pending plan approval request %q addressed to lead: %w", "req-nope", team.ErrNoRequest)
	if status, code := classify(err); status != 404 || code != "unknown_request" {
		t.Errorf("classify(%v) = %d %s, want 404 unknown_request", err, status, code)
	}
}
