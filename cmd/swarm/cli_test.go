package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// result is what one swarm command did.
type result struct {
	stdout, stderr string
	code           int
}

// swarmIn runs the swarm command in dir with extra environment variables
// (later ones win) and stdin, bounded by a minute.
func swarmIn(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := swarmCmd(ctx, dir, args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("swarm %v: %v\n%s", args, err, errb.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("swarm %v did not end within a minute\n%s", args, errb.String())
	}
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

// write creates files in dir (paths relative to it).
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// askFile is a definitions file whose default model is a real provider
// whose key is not set, and whose agent "weather" names a model of its own.
const askFile = `version: 1
model: openai:gpt-4.1-mini
agents:
  weather:
    description: Weather forecasts
    instructions: You forecast the weather.
    model: scripted:weather.yaml
swarms:
  ask:
    description: Answers with the weather's help
    instructions: Answer {{.Input}}.
    handoffs: [weather]
`

const askScript = `ask:
  - tool_calls:
      - {name: handoff_to_weather, arguments: {request: "today"}}
  - text: "take an umbrella"
`

// TestModelFlagOverridesFileModel: --model and SWARM_MODEL replace the
// file's model: for the agents and swarms that name none (the swarm
// answers from the scripted model given on the command line), the agent
// that names its own model keeps it, and the file's model, which is not
// used, is not checked for its API key.
func TestModelFlagOverridesFileModel(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"swarm.yaml":   askFile,
		"ask.yaml":     askScript,
		"weather.yaml": "weather:\n  - text: \"rain from the agent's own model\"\n",
	})
	noKey := []string{"OPENAI_API_KEY=", "ANTHROPIC_API_KEY="}
	for name, c := range map[string]struct {
		env  []string
		args []string
	}{
		"--model":     {noKey, []string{"run", "--model", "scripted:ask.yaml", "ask", "the weather"}},
		"SWARM_MODEL": {append(noKey, "SWARM_MODEL=scripted:ask.yaml"), []string{"run", "ask", "the weather"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := swarmIn(t, dir, c.env, "", c.args...)
			if r.code != 0 || strings.TrimSpace(r.stdout) != `"take an umbrella"` {
				t.Fatalf("exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "weather: rain from the agent's own model") {
				t.Errorf("the agent did not answer from its own model:\n%s", r.stderr)
			}
		})
	}
	// Without an override the file's model is used, and its missing key
	// is a configuration error naming the file, the line and the variable.
	r := swarmIn(t, dir, noKey, "", "run", "ask", "the weather")
	if r.code != 2 || !strings.Contains(r.stderr, "swarm.yaml:2") || !strings.Contains(r.stderr, "OPENAI_API_KEY") {
		t.Errorf("file model without its key: exit %d\n%s", r.code, r.stderr)
	}
}

// TestConfigurationErrorsExitTwo: mistakes in the configuration found when
// models are opened or a run starts are usage errors (exit 2) that name
// the file, not failed runs (exit 1).
func TestConfigurationErrorsExitTwo(t *testing.T) {
	dir := t.TempDir()
	agent := func(model string) string {
		return "version: 1\nmodel: scripted:ask.yaml\nagents:\n  weather:\n    description: w\n    instructions: w\n    model: " + model +
			"\nswarms:\n  ask:\n    description: a\n    instructions: a\n    handoffs: [weather]\n"
	}
	write(t, dir, map[string]string{
		"ask.yaml":       askScript,
		"broken.yaml":    "weather:\n  - txet: oops\n",
		"badscript.yaml": agent("scripted:broken.yaml"),
		"provider.yaml":  agent("martian:gpt"),
		"nokey.yaml":     agent("anthropic:claude-sonnet-4-5"),
		"typed.yaml": "version: 1\nmodel: scripted:ask.yaml\nswarms:\n  typed:\n    description: t\n    instructions: t\n" +
			"    input: {type: object, properties: {n: {type: integer}}, required: [n]}\n",
	})
	env := []string{"OPENAI_API_KEY=", "ANTHROPIC_API_KEY="}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--file", "badscript.yaml", "ask", "x"}, []string{"badscript.yaml:7", "broken.yaml"}},
		{[]string{"run", "--file", "provider.yaml", "ask", "x"}, []string{"provider.yaml:7", "martian"}},
		{[]string{"run", "--file", "nokey.yaml", "ask", "x"}, []string{"nokey.yaml:7", "ANTHROPIC_API_KEY"}},
		{[]string{"run", "--file", "typed.yaml", "typed", `{"m": 1}`}, []string{"typed.yaml", "schema"}},
		{[]string{"run", "--file", "typed.yaml", "--id", "two words", "typed", `{"n": 1}`}, []string{`--id "two words"`}},
	} {
		if len(c.args) == 5 && c.args[3] == "typed" {
			if _, err := os.Stat(filepath.Join(dir, "runs.db")); err == nil {
				t.Error("a configuration error created the store")
			}
		}
		r := swarmIn(t, dir, env, "", c.args...)
		if r.code != 2 {
			t.Errorf("swarm %v: exit %d, want 2\n%s", c.args, r.code, r.stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("swarm %v: the message does not name %q:\n%s", c.args, w, r.stderr)
			}
		}
	}
}

// TestWrongDirectory: in a directory without swarm.yaml nothing creates a
// store; the messages name the store looked at; a run that is not there is
// a usage error without internal wrapping.
func TestWrongDirectory(t *testing.T) {
	dir := t.TempDir()
	env := []string{"SWARM_STORE="} // the default store, .swarm/runs.db
	r := swarmIn(t, dir, env, "", "run", "trip", "x")
	if r.code != 2 || !strings.Contains(r.stderr, "swarm.yaml") {
		t.Errorf("run without definitions: exit %d\n%s", r.code, r.stderr)
	}
	r = swarmIn(t, dir, env, "", "ls")
	if r.code != 0 || !strings.Contains(r.stderr, "sqlite:.swarm/runs.db") {
		t.Errorf("ls: exit %d\n%s", r.code, r.stderr)
	}
	r = swarmIn(t, dir, env, "", "status", "nope")
	if r.code != 2 || !strings.Contains(r.stderr, `no run "nope" in store sqlite:.swarm/runs.db`) || strings.Contains(r.stderr, "get run") {
		t.Errorf("status of an unknown run: exit %d\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"events", "nope"}, {"stop", "nope", "x"}} {
		if r := swarmIn(t, dir, env, "", args...); r.code != 2 || !strings.Contains(r.stderr, `no run "nope"`) {
			t.Errorf("swarm %v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".swarm")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a store was created in the wrong directory: %v", err)
	}
}

// TestRunNamesTheSwarms: swarm run without a swarm, or with an unknown one,
// lists the swarms of the file.
func TestRunNamesTheSwarms(t *testing.T) {
	dir := workdir(t)
	for _, args := range [][]string{{"run"}, {"run", "nope", "x"}} {
		r := swarmIn(t, dir, nil, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "trip") || !strings.Contains(r.stderr, "approval") || !strings.Contains(r.stderr, "swarm.yaml") {
			t.Errorf("swarm %v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := swarmIn(t, t.TempDir(), nil, "", args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "swarm ") || !strings.Contains(r.stdout, "go1.") {
			t.Errorf("swarm %v: exit %d, %q %s", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestProgress: the run id, the model's text answers (each once) and a
// rejected answer are shown on stderr; -q shows nothing but errors; no
// spinner is drawn when stderr is not a terminal.
func TestProgress(t *testing.T) {
	dir := workdir(t)
	write(t, dir, map[string]string{
		"strict.yaml": "version: 1\nmodel: scripted:strict-script.yaml\nswarms:\n  strict:\n    description: s\n    instructions: s\n" +
			"    result_schema: {type: object, properties: {answer: {type: string}}, required: [answer]}\n",
		"strict-script.yaml": "strict:\n  - text: \"a > b, I think\"\n  - text: '{\"answer\": \"a > b\"}'\n",
	})
	r := swarmIn(t, dir, nil, "", "run", "--id", "p1", "trip", "two people")
	if r.code != 0 || !strings.Contains(r.stderr, "run p1\n") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "\n  weather: Sunny, 22C\n"); n != 1 {
		t.Errorf("the weather's answer shown %d times:\n%s", n, r.stderr)
	}
	if strings.Contains(r.stderr, "exists already") {
		t.Errorf("a new run said it exists already:\n%s", r.stderr)
	}
	// Starting the id again attaches to the run, and says so.
	if r := swarmIn(t, dir, nil, "", "run", "--id", "p1", "trip", "three people"); r.code != 0 || !strings.Contains(r.stderr, "run p1 exists already") {
		t.Errorf("second start of p1: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "\r") {
		t.Errorf("a spinner was drawn on a pipe:\n%q", r.stderr)
	}
	r = swarmIn(t, dir, nil, "", "run", "--file", "strict.yaml", "strict", "x")
	if r.code != 0 || strings.TrimSpace(r.stdout) != `{"answer":"a > b"}` {
		t.Fatalf("strict: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"strict: a > b, I think", "not a valid result", `strict: {"answer": "a > b"}`} {
		if strings.Count(r.stderr, want) != 1 {
			t.Errorf("progress shows %q %d times, want once:\n%s", want, strings.Count(r.stderr, want), r.stderr)
		}
	}
	r = swarmIn(t, dir, nil, "", "run", "-q", "trip", "x")
	if r.code != 0 || r.stderr != "" {
		t.Errorf("run -q: exit %d, stderr %q", r.code, r.stderr)
	}
	r = swarmIn(t, dir, nil, "", "run", "-q", "--id", "p2", "approval", "x")
	if r.code != 3 || r.stderr != "" {
		t.Errorf("run -q of a pausing swarm: exit %d, stderr %q", r.code, r.stderr)
	}
	r = swarmIn(t, dir, nil, "", "stop", "p2", "no")
	if r.code != 0 {
		t.Fatalf("stop: exit %d\n%s", r.code, r.stderr)
	}
}

// TestJSONIsNotHTMLEscaped: status and events print ">" as it is.
func TestJSONIsNotHTMLEscaped(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"swarm.yaml":  "version: 1\nmodel: scripted:script.yaml\nswarms:\n  echo:\n    description: e\n    instructions: e\n",
		"script.yaml": "echo:\n  - text: \"x -> y & <z>\"\n",
	})
	r := swarmIn(t, dir, nil, "", "run", "--id", "e1", "echo", "a > b")
	if r.code != 0 || strings.TrimSpace(r.stdout) != `"x -> y & <z>"` {
		t.Fatalf("exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"status", "e1"}, {"events", "e1"}, {"ls", "--json"}} {
		r := swarmIn(t, dir, nil, "", args...)
		if r.code != 0 || strings.Contains(r.stdout, `\u00`) {
			t.Errorf("swarm %v: exit %d, HTML escapes in %s", args, r.code, r.stdout)
		}
	}
	if r := swarmIn(t, dir, nil, "", "status", "e1"); !strings.Contains(r.stdout, `"result":"x -> y & <z>"`) {
		t.Errorf("status: %s", r.stdout)
	}
}

// slowDir is a directory whose swarm "slow" waits 3s for its model.
func slowDir(t *testing.T) string {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"swarm.yaml":  "version: 1\nmodel: scripted:script.yaml\nswarms:\n  slow:\n    description: s\n    instructions: s\n",
		"script.yaml": "slow:\n  - text: done\n    delay: 3s\n",
	})
	return dir
}

// signalWhenStarted runs swarm with args in dir, sends sig once its
// progress shows the run started, and returns its exit code and stderr.
func signalWhenStarted(t *testing.T, dir string, sig os.Signal, args ...string) (int, string) {
	t.Helper()
	code, _, stderr := signalOn(t, dir, sig, "started slow", false, args...)
	return code, stderr
}

// signalOn runs swarm with args in dir, sends sig once a line of its
// stderr (of its stdout if onStdout) contains trigger, and returns its exit
// code, stdout and stderr.
func signalOn(t *testing.T, dir string, sig os.Signal, trigger string, onStdout bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := swarmCmd(ctx, dir, args...)
	var watched, other strings.Builder
	var pipe io.ReadCloser
	var err error
	if onStdout {
		pipe, err = cmd.StdoutPipe()
		cmd.Stderr = &other
	} else {
		pipe, err = cmd.StderrPipe()
		cmd.Stdout = &other
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		watched.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), trigger) {
			_ = cmd.Process.Signal(sig)
			break
		}
	}
	rest, _ := io.ReadAll(pipe)
	watched.Write(rest)
	_ = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("swarm %v did not end within a minute\n%s%s", args, watched.String(), other.String())
	}
	if onStdout {
		return cmd.ProcessState.ExitCode(), watched.String(), other.String()
	}
	return cmd.ProcessState.ExitCode(), other.String(), watched.String()
}

// TestInterruptedRunExitsWithItsCode: Ctrl-C on swarm run exits 130 and
// says how the run continues; swarm recover then finishes it.
func TestInterruptedRunExitsWithItsCode(t *testing.T) {
	dir := slowDir(t)
	code, stderr := signalWhenStarted(t, dir, os.Interrupt, "run", "--id", "s1", "slow", "x")
	if code != 130 || !strings.Contains(stderr, "swarm recover") {
		t.Fatalf("exit %d, want 130\n%s", code, stderr)
	}
	r := swarmIn(t, dir, nil, "", "recover")
	if r.code != 0 || !strings.Contains(r.stdout, `"completed"`) {
		t.Errorf("recover: exit %d %s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestRecoverSaysWhatItWaitsFor: swarm recover names the runs whose
// leases it waits for, and until when.
func TestRecoverSaysWhatItWaitsFor(t *testing.T) {
	dir := slowDir(t)
	signalWhenStarted(t, dir, syscall.SIGKILL, "run", "--lease", "2s", "--id", "k1", "slow", "x")
	r := swarmIn(t, dir, nil, "", "recover", "--lease", "2s")
	if r.code != 0 || !strings.Contains(r.stdout, `"completed"`) {
		t.Fatalf("recover: exit %d %s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "waiting for 1 run(s)") || !strings.Contains(r.stderr, "expires at") || !strings.Contains(r.stderr, "k1") {
		t.Errorf("recover did not say what it waits for:\n%s", r.stderr)
	}
}

// TestChatByID: swarm chat --id ID continues a session without naming its
// conversation, as the README documents.
func TestChatByID(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"swarm.yaml": "version: 1\nmodel: scripted:script.yaml\nagents:\n  receptionist:\n    description: r\n    instructions: r\n" +
			"conversations:\n  desk:\n    queen: receptionist\n",
		"script.yaml": "receptionist:\n  - text: hello there\n  - text: welcome back\n",
	})
	r := swarmIn(t, dir, nil, "hi\n/quit\n", "chat", "desk", "--id", "c1")
	if r.code != 0 || !strings.Contains(r.stdout, "receptionist: hello there") || !strings.Contains(r.stderr, "swarm chat --id c1") {
		t.Fatalf("chat: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	r = swarmIn(t, dir, nil, "again\n", "chat", "--id", "c1")
	if r.code != 0 || !strings.Contains(r.stdout, "receptionist: welcome back") {
		t.Fatalf("chat --id: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "chat", "--id", "nope"); r.code != 2 || !strings.Contains(r.stderr, `no run "nope"`) {
		t.Errorf("chat --id of an unknown session: exit %d\n%s", r.code, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "chat"); r.code != 2 || !strings.Contains(r.stderr, "desk") {
		t.Errorf("chat without a conversation: exit %d\n%s", r.code, r.stderr)
	}
}

// TestServeListsEndpointsAndDocumentsThem: swarm serve names its swarms,
// conversations, teams and endpoints at start (a network node that shares
// nothing says so, without an empty list), every mounted front end (A2A,
// MCP) is in /openapi.json, and its JSON is not HTML-escaped.
func TestServeListsEndpointsAndDocumentsThem(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"swarm.yaml": "version: 1\nmodel: scripted:script.yaml\nnetwork: {id: n1}\nagents:\n  receptionist: {description: r, instructions: r}\n" +
			"conversations:\n  desk: {queen: receptionist}\nteams:\n  crew: {lead: receptionist}\n" +
			"swarms:\n  trip:\n    description: Turns a -> b & <c>\n    instructions: t\n" +
			"  approval:\n    description: a\n    instructions: a\n",
		"script.yaml": "trip:\n  - text: \"x -> y\"\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := serve(t, ctx, dir, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		text := s.Log()
		if strings.Contains(text, "MCP") || time.Now().After(deadline) {
			for _, want := range []string{"swarms of swarm.yaml: trip, approval\n", "conversations of swarm.yaml: desk\n", "teams of swarm.yaml: crew\n",
				"network node n1 at ", "sharing no capabilities\n", s.URL + "/v1/swarms", s.URL + "/a2a/{swarm}", s.URL + "/mcp", "/openapi.json"} {
				if !strings.Contains(text, want) {
					t.Errorf("serve's start does not show %q:\n%s", want, text)
				}
			}
			if strings.Contains(text, ": \n") {
				t.Errorf("serve's start shows an empty list:\n%s", text)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, err := http.Get(s.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/a2a/{swarm}", "/a2a/{swarm}/.well-known/agent-card.json", "/.well-known/agent-card.json", "/mcp", "/v1/registry/search"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("/openapi.json does not document %s", p)
		}
	}
	for _, p := range []string{"/.well-known/agent-card.json", "/a2a/trip/.well-known/agent-card.json"} {
		res, err := http.Get(s.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusNotFound && p != "/.well-known/agent-card.json" {
			t.Errorf("GET %s: %d, though documented", p, res.StatusCode)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/swarms/trip", nil)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !bytes.Contains(body, []byte("Turns a -> b & <c>")) {
		t.Errorf("HTML escapes in a server response: %s", body)
	}
}
