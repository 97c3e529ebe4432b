package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// teamDir copies examples/team (the team and its script) to a temporary
// directory, and returns the arguments that use it with a SQLite store.
func teamDir(t *testing.T) func(...string) []string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"swarm.yaml", "script.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "team", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return func(rest ...string) []string {
		return append([]string{"--file", filepath.Join(dir, "swarm.yaml"), "--store", "sqlite:" + filepath.Join(dir, "runs.db")}, rest...)
	}
}

func TestTeamAtThePrompt(t *testing.T) {
	args := teamDir(t)
	var out, errb bytes.Buffer
	in := "Spawn alice (coder) and bob (tester). Have alice send bob a message.\n/send mallory hi\n/bogus\n/quit\n"
	if code := Main(args("team", "crew", "--id", "t1"), strings.NewReader(in), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "lead: alice (coder) and bob (tester) are on the team; alice is telling bob the parser is ready.\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	for _, want := range []string{"team t1 led by lead", "/send: no such team member: the team has no member named mallory", "unknown command /bogus"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q, want %q in it", errb.String(), want)
		}
	}

	// Another process continues the team: the teammates it spawned are on
	// the roster, and bob's report waits in the lead's inbox or has
	// reached the lead's model.
	out.Reset()
	errb.Reset()
	in = "/team\n/tasks\n/requests\nCheck the lead inbox for any messages\n"
	if code := Main(args("team", "--id", "t1"), strings.NewReader(in), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := out.String()
	for _, want := range []string{"alice        coder", "bob          tester", "the task board is empty", "no protocol requests", "lead: bob says: the parser passes all 12 tests.\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("stdout %q, want %q in it", got, want)
		}
	}
	// /close ends the team and every teammate.
	if code := Main(args("team", "--id", "t1"), strings.NewReader("/close\n"), &out, &errb); code != 0 {
		t.Fatalf("close: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := Main(args("team", "--id", "t1"), strings.NewReader("hello\n"), &out, &errb); code != ExitFailed || !strings.Contains(errb.String(), "is stopped") {
		t.Errorf("team after /close: exit %d: %s", code, errb.String())
	}
}

func TestTeamBadInput(t *testing.T) {
	args := teamDir(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args("team", "nope"), `unknown swarm "nope"`},
		{args("team"), "the teams of"},
		{args("team", "--id", "ghost"), `no run "ghost"`},
	} {
		var out, errb bytes.Buffer
		if code := Main(tc.args, strings.NewReader(""), &out, &errb); code != ExitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args[4:], code, errb.String())
		}
	}
}
