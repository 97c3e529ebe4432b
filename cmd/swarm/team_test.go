package main_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// teamFiles is an autonomous team whose teammate alice answers mail and
// completes the task she claims, on the scripted model.
var teamFiles = map[string]string{
	"swarm.yaml": `version: 1
model: scripted:script.yaml
agents:
  lead: {instructions: "You lead."}
  teammate: {instructions: "You are {{.Name}}."}
teams:
  crew:
    lead: lead
    teammate: teammate
    autonomous: true
    members:
      alice: {role: coder}
`,
	"script.yaml": `alice:
  - text: "Read the mail."
  - tool_calls:
      - {name: complete_task, arguments: {task_id: 1, result: "parser written"}}
  - text: "Wrote the parser."
`,
}

// TestTeamMailAndTaskCommands: swarm team mail and swarm team task post to
// a team without a prompt, each in a process of its own, and drive the
// team until it settles; a mail retried with its id is delivered once.
func TestTeamMailAndTaskCommands(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, teamFiles)
	if r := swarmIn(t, dir, nil, "/quit\n", "team", "crew", "--id", "t1"); r.code != 0 {
		t.Fatalf("swarm team: exit %d\n%s", r.code, r.stderr)
	}
	for range 2 {
		r := swarmIn(t, dir, nil, "", "team", "mail", "t1", "--to", "alice", "--id", "m1", "The spec is in docs/.")
		var m struct{ ID, From, Content string }
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &m) != nil || m.ID != "m1" || m.From != "user" || m.Content != "The spec is in docs/." {
			t.Fatalf("swarm team mail: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "team t1 settled: lead idle, alice idle") {
			t.Errorf("swarm team mail: stderr %q, want the settled team", r.stderr)
		}
	}
	r := swarmIn(t, dir, nil, "", "team", "task", "t1", "Write the parser", "--description", "in Go")
	if r.code != 0 || !strings.Contains(r.stdout, `"subject":"Write the parser"`) {
		t.Fatalf("swarm team task: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	r = swarmIn(t, dir, nil, "/tasks\n/quit\n", "team", "--id", "t1")
	if !strings.Contains(r.stdout, "#1 completed   alice      Write the parser") {
		t.Errorf("the board after swarm team task: %q", r.stdout)
	}
	// alice consumed the mail once: one inbox event, one mail.
	var inbox int
	for _, rec := range readJournal(t, dir, "t1~alice") {
		if rec.Type == "inbox" {
			inbox += strings.Count(string(rec.Data), `"id":"m1"`)
		}
	}
	if inbox != 1 {
		t.Errorf("alice consumed mail m1 %d times, want once", inbox)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"team", "mail", "t1", "hi"}, "--to"},
		{[]string{"team", "mail", "t1", "--to", "mallory", "hi"}, "no such team member"},
		{[]string{"team", "mail", "ghost", "--to", "alice", "hi"}, `no run "ghost"`},
		{[]string{"team", "mail", "t1", "--to", "alice", "--id", "m1", "other text"}, "other content"},
		{[]string{"team", "task", "t1", " "}, "a task needs a subject"},
	} {
		if r := swarmIn(t, dir, nil, "", tc.args...); r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("swarm %v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
