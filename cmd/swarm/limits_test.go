package main_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// relayFile is a team of idle teammates a, b, c, d under call limits of
// 20 model and 10 tool calls: each passes the mail it gets on to the
// next, and d answers (seven model calls and three tool calls a relay).
const relayFile = `version: 1
model: scripted:script.yaml
limits:
  model_calls: 20
  tool_calls: 10
agents:
  lead: {instructions: "You lead."}
  teammate: {instructions: "You are {{.Name}}."}
teams:
  relay:
    lead: lead
    teammate: teammate
    members:
      a: {role: relay}
      b: {role: relay}
      c: {role: relay}
      d: {role: relay}
`

func relayYAML(relays int) string {
	var b strings.Builder
	for _, hop := range [][2]string{{"a", "b"}, {"b", "c"}, {"c", "d"}} {
		fmt.Fprintf(&b, "%s:\n", hop[0])
		for range relays {
			fmt.Fprintf(&b, "  - tool_calls: [{name: send_message, arguments: {to: %s, content: pass it on}}]\n  - text: passed on\n", hop[1])
		}
	}
	b.WriteString("d:\n")
	for range relays {
		b.WriteString("  - text: got it\n")
	}
	return b.String()
}

// member is a team member as GET /v1/teams/{id} shows it.
type member struct {
	Name, State, Reason string
	RunID               string `json:"run_id"`
	Unread              int
}

// roster polls GET /v1/teams/{id} until ok holds of its members, and
// returns them.
func roster(t *testing.T, ctx context.Context, base, id string, ok func([]member) bool) []member {
	t.Helper()
	var r struct{ Members []member }
	for {
		if code := httpJSON(t, "GET", base+"/v1/teams/"+id, "", &r); code == 200 && ok(r.Members) {
			return r.Members
		}
		select {
		case <-ctx.Done():
			t.Fatalf("team %s: %+v", id, r.Members)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// settled: every member is idle with its mail read (or one has ended,
// which the caller reports).
func settled(ms []member) bool {
	for _, m := range ms {
		if m.State == "failed" || m.State == "stopped" {
			return true
		}
		if m.State != "idle" || m.Unread > 0 {
			return false
		}
	}
	return len(ms) > 0
}

// TestServeTeamRelayOutlivesTheCallLimits: a team is one run tree for its
// whole life, so with limits over that life a healthy team relaying mail
// ended failed, its mail unread, once it had relayed enough. Through
// `swarm serve`, killed with SIGKILL twice and started again: twelve user
// mails, each relayed through four teammates (84 model calls and 36 tool
// calls in all) under limits of 20 and 10, which count per user mail.
func TestServeTeamRelayOutlivesTheCallLimits(t *testing.T) {
	const relays = 12
	dir := t.TempDir()
	write(t, dir, map[string]string{"swarm.yaml": relayFile, "script.yaml": relayYAML(relays)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := serve(t, ctx, dir, nil, "--lease", "1s")
	if code := httpJSON(t, "POST", s.URL+"/v1/swarms/relay/runs", `{"id": "t1"}`, nil); code != 201 {
		t.Fatalf("start the team: %d", code)
	}
	roster(t, ctx, s.URL, "t1", func(ms []member) bool { return len(ms) == 5 }) // its members are spawned
	for i := range relays {
		body := fmt.Sprintf(`{"to": "a", "content": "relay %d", "id": "m%d"}`, i, i)
		if code := httpJSON(t, "POST", s.URL+"/v1/teams/t1/mail", body, nil); code != 201 {
			t.Fatalf("mail %d: %d", i, code)
		}
		if i == 4 || i == 8 {
			// Killed with the relay under way: the next process takes
			// the team over once the lease has expired.
			if err := s.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-s.Exited
			s = serve(t, ctx, dir, nil, "--lease", "1s")
		}
		for _, m := range roster(t, ctx, s.URL, "t1", settled) {
			if m.State != "idle" && m.State != "working" {
				t.Fatalf("after relay %d: %s %s: %s", i, m.Name, m.State, m.Reason)
			}
		}
	}
	var got int
	for _, rec := range readJournal(t, dir, "t1~d") {
		if rec.Type == "inbox" {
			got += strings.Count(string(rec.Data), `"from":"c"`)
		}
	}
	if got != relays {
		t.Errorf("d consumed %d mails, want %d", got, relays)
	}
	var st struct {
		Limits struct {
			ToolCalls    int64 `json:"tool_calls"`
			MaxToolCalls int64 `json:"max_tool_calls"`
			PerWork      bool  `json:"per_work"`
		}
	}
	if code := httpJSON(t, "GET", s.URL+"/v1/runs/t1", "", &st); code != 200 || !st.Limits.PerWork || st.Limits.MaxToolCalls != 10 || st.Limits.ToolCalls > 10 {
		t.Errorf("GET /v1/runs/t1: %d, limits %+v: want per piece of work, 10 tool calls at most", code, st.Limits)
	}
}

// capFile is a team whose member a echoes (a command tool) under a limit
// of 3 tool calls.
const capFile = `version: 1
model: scripted:script.yaml
limits:
  tool_calls: 3
tools:
  echo:
    description: Echoes
    command: ["echo", "echoed"]
agents:
  lead: {instructions: "You lead."}
  echoer: {instructions: "You echo.", tools: [echo]}
teams:
  capped:
    lead: lead
    members:
      a: {role: echoer, agent: echoer}
`

const capScript = `a:
  - tool_calls: [{name: echo, arguments: {}}]
  - tool_calls: [{name: echo, arguments: {}}]
  - tool_calls: [{name: echo, arguments: {}}]
  - tool_calls: [{name: echo, arguments: {}}]
  - tool_calls: [{name: echo, arguments: {}}]
  - text: echoed five times
`

// TestServeTeamCapPausesKeepsMailAndResumes: a member that reaches its
// tree's call cap pauses, with a reason naming the cap, where the old
// limits failed it and lost its mail. Mail sent to it meanwhile waits
// unread; GET /v1/runs/{id} shows the tree at its cap, and `swarm status`
// says so; POST /v1/runs/{id}/resume gives the tree as many calls again,
// and the member finishes, reading the mail.
func TestServeTeamCapPausesKeepsMailAndResumes(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"swarm.yaml": capFile, "script.yaml": capScript})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := serve(t, ctx, dir, nil)
	if code := httpJSON(t, "POST", s.URL+"/v1/swarms/capped/runs", `{"id": "t2"}`, nil); code != 201 {
		t.Fatalf("start the team: %d", code)
	}
	roster(t, ctx, s.URL, "t2", func(ms []member) bool { return len(ms) == 2 })
	if code := httpJSON(t, "POST", s.URL+"/v1/teams/t2/mail", `{"to": "a", "content": "echo five times"}`, nil); code != 201 {
		t.Fatalf("mail: %d", code)
	}
	ms := roster(t, ctx, s.URL, "t2", func(ms []member) bool {
		return len(ms) == 2 && (ms[1].State == "failed" || strings.Contains(ms[1].Reason, "tool calls 3 of 3"))
	})
	if !strings.HasPrefix(ms[1].Reason, "call cap reached: tool calls 3 of 3") {
		t.Fatalf("a: %s %q, want paused at the cap", ms[1].State, ms[1].Reason)
	}
	if code := httpJSON(t, "POST", s.URL+"/v1/teams/t2/mail", `{"to": "a", "content": "and this", "id": "later"}`, nil); code != 201 {
		t.Fatalf("mail while paused: %d", code)
	}
	var st struct {
		State, Reason string
		Limits        struct {
			ToolCalls    int64 `json:"tool_calls"`
			MaxToolCalls int64 `json:"max_tool_calls"`
			PerWork      bool  `json:"per_work"`
		}
	}
	if code := httpJSON(t, "GET", s.URL+"/v1/runs/t2~a", "", &st); code != 200 || st.State != "paused" || st.Limits.ToolCalls != 3 || st.Limits.MaxToolCalls != 3 || !st.Limits.PerWork {
		t.Fatalf("GET /v1/runs/t2~a: %d %+v, want paused with 3 of 3 tool calls", code, st)
	}
	r := swarmIn(t, dir, nil, "", "status", "t2~a")
	if r.code != 0 || !strings.Contains(r.stderr, "3 of 3 tool calls (0 left)") || !strings.Contains(r.stdout, `"limits":`) {
		t.Errorf("swarm status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var inbox struct{ Mails []struct{ ID string } }
	if code := httpJSON(t, "GET", s.URL+"/v1/teams/t2/mail?member=a", "", &inbox); code != 200 || len(inbox.Mails) != 1 || inbox.Mails[0].ID != "later" {
		t.Fatalf("a's inbox while paused: %d %+v", code, inbox)
	}
	if code := httpJSON(t, "POST", s.URL+"/v1/runs/t2~a/resume", `{"message": "go on"}`, nil); code != 202 {
		t.Fatalf("resume: %d", code)
	}
	ms = roster(t, ctx, s.URL, "t2", settled)
	if ms[1].State != "idle" {
		t.Fatalf("a after the resume: %s %s", ms[1].State, ms[1].Reason)
	}
	var echoes, later int
	for _, rec := range readJournal(t, dir, "t2~a") {
		switch rec.Type {
		case "tool_result":
			echoes++
		case "inbox":
			later += strings.Count(string(rec.Data), `"id":"later"`)
		}
	}
	if echoes != 5 || later != 1 {
		t.Errorf("a ran echo %d times (want 5) and read the later mail %d times (want 1)", echoes, later)
	}
}

// TestServeTeamRunawayStopsAtTheCap: a team lead that hands off to an
// agent handing off to itself is a runaway that no user feeds: it stops at
// the call limit, 30 model calls, with the team paused (not failed) and a
// reason naming the cap.
func TestServeTeamRunawayStopsAtTheCap(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"swarm.yaml": `version: 1
model: scripted:script.yaml
limits:
  model_calls: 30
agents:
  lead: {instructions: "You lead.", handoffs: [writer]}
  writer: {description: Writes, instructions: Write., handoffs: [writer]}
teams:
  loop:
    lead: lead
`,
		"script.yaml": "lead:\n  - tool_calls: [{name: handoff_to_writer, arguments: {request: go}}]\n" + strings.TrimPrefix(loopScript(100), "loop:\n  - tool_calls: [{name: handoff_to_writer, arguments: {request: again}}]\n"),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := serve(t, ctx, dir, nil)
	if code := httpJSON(t, "POST", s.URL+"/v1/swarms/loop/runs", `{"id": "t3", "input": "write"}`, nil); code != 201 {
		t.Fatalf("start the team: %d", code)
	}
	var st struct{ State, Reason string }
	for st.State == "" || st.State == "running" {
		if code := httpJSON(t, "GET", s.URL+"/v1/runs/t3?wait=10s", "", &st); code >= 300 {
			t.Fatalf("GET /v1/runs/t3: %d", code)
		}
	}
	if st.State != "paused" || !strings.HasPrefix(st.Reason, "call cap reached: model calls 30 of 30") {
		t.Fatalf("team %s %q, want paused at the cap", st.State, st.Reason)
	}
	if n := strings.Count(swarmIn(t, dir, nil, "", "events", "t3").stdout, `"type":"model_response"`); n != 30 {
		t.Errorf("%d model responses, want the limit, 30", n)
	}
}
