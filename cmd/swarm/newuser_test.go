package main_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// newUserFile has a swarm, a conversation and a team on a scripted model:
// what a new user tries first.
const newUserFile = `version: 1
model: scripted:script.yaml
tools:
  book:
    description: Books an item
    command: ["cat"]
agents:
  clerk: {instructions: You answer at the desk.}
  lead: {instructions: You lead a team.}
  mate: {instructions: "You are {{.Name}}."}
swarms:
  trip:
    instructions: Plan a trip for {{.Input}}.
    tools: [book]
conversations:
  desk: {queen: clerk}
teams:
  crew: {lead: lead, teammate: mate}
`

// newUserScript runs out for trip at its second call.
const newUserScript = `trip:
  - tool_calls:
      - {name: book, arguments: {item: "hut"}}
clerk:
  - text: "Hello"
  - text: "Goodbye"
lead:
  - text: "On it"
  - text: "Done"
`

func newUserDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, map[string]string{"swarm.yaml": newUserFile, "script.yaml": newUserScript})
	return dir
}

// TestTextOfSeveralWords: an input or message of several words that the
// shell split gets a usage error showing the command with it quoted, not
// cobra's "accepts at most 2 arg(s)".
func TestTextOfSeveralWords(t *testing.T) {
	dir := newUserDir(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "trip", "two", "people"}, `swarm run trip "two people"`},
		{[]string{"resume", "run_1", "yes,", "book", "it"}, `swarm resume run_1 "yes, book it"`},
		{[]string{"stop", "run_1", "too", "slow"}, `swarm stop run_1 "too slow"`},
	} {
		r := swarmIn(t, dir, nil, "", c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, "in quotes") || !strings.Contains(r.stderr, c.want) {
			t.Errorf("swarm %s: exit %d, stderr %q; want exit 2 and %s", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
}

// TestPipedChatAndTeamHaveNoPrompt: with stdin not a terminal, swarm chat
// and swarm team read their lines without printing "you> " for each.
func TestPipedChatAndTeamHaveNoPrompt(t *testing.T) {
	dir := newUserDir(t)
	for _, args := range [][]string{{"chat", "desk"}, {"team", "crew"}} {
		r := swarmIn(t, dir, nil, "Hello\nThanks\n", args...)
		if r.code != 0 || strings.Contains(r.stderr, "you>") {
			t.Errorf("swarm %s with piped lines: exit %d, stderr %q; want no prompt", strings.Join(args, " "), r.code, r.stderr)
		}
		if r.stdout == "" {
			t.Errorf("swarm %s printed no answer", strings.Join(args, " "))
		}
	}
}

// TestScriptExhaustedNamesTheScript: a scripted model that runs out names
// its script file (not the agent, as if it were the file) and counts calls
// from 1.
func TestScriptExhaustedNamesTheScript(t *testing.T) {
	dir := newUserDir(t)
	r := swarmIn(t, dir, nil, "", "run", "trip", "two people")
	// (The path is the one the definitions file resolves: absolute.)
	for _, want := range []string{"/script.yaml: other: ", `agent "trip" call 2: script exhausted: ` + dir + `/script.yaml has 1 step for this agent`} {
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr %q; want exit 1 and %q", r.code, r.stderr, want)
		}
	}
}

// TestServeBannerURLs: every address the serve banner prints (those
// without a {placeholder}) answers, with one swarm and with several: the
// well-known A2A card is printed only when it is there, for a single
// swarm.
func TestServeBannerURLs(t *testing.T) {
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+[^\s,()]*`)
	for _, c := range []struct {
		name, file string
		card       bool
	}{
		{"several", newUserFile, false},
		{"one", "version: 1\nmodel: scripted:script.yaml\nswarms:\n  trip: {instructions: Plan.}\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string]string{"swarm.yaml": c.file, "script.yaml": newUserScript})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s := serve(t, ctx, dir, nil)
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(s.Log(), "Dashboard") && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			banner := s.Log()
			if got := strings.Contains(banner, "/.well-known/agent-card.json ("); got != c.card {
				t.Errorf("the banner lists the well-known card: %v, want %v\n%s", got, c.card, banner)
			}
			for _, u := range url.FindAllString(banner, -1) {
				if strings.Contains(u, "{") {
					continue
				}
				res, err := http.Get(u)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode == http.StatusNotFound {
					t.Errorf("the banner prints %s, which is 404\n%s", u, banner)
				}
			}
		})
	}
}

// TestForkMarksReusedSteps: swarm fork's progress says what it reuses,
// and marks the lines of the origin's steps it did not run again.
func TestForkMarksReusedSteps(t *testing.T) {
	dir := workdir(t)
	if _, code := run(t, dir, "run", "--id", "f1", "trip", "two people"); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	r := swarmIn(t, dir, nil, "", "fork", "--id", "f2", "f1", "t3/model")
	if r.code != 0 {
		t.Fatalf("fork: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "a fork of run f1 at t3/model, reusing ") {
		t.Errorf("the fork does not say what it reuses:\n%s", r.stderr)
	}
	var reused, ran []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "  reused · ") {
			reused = append(reused, l)
		} else if strings.HasPrefix(l, "  trip") {
			ran = append(ran, l)
		}
	}
	if len(reused) == 0 || !strings.Contains(strings.Join(reused, "\n"), "trip → book") || !strings.Contains(strings.Join(ran, "\n"), `trip → book({"item":"dinner"})`) ||
		strings.Contains(strings.Join(reused, "\n"), "dinner") {
		t.Errorf("reused lines %q, lines run %q", reused, ran)
	}
}
