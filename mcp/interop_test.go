package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/internal/servetest"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// The interop tests run third-party MCP software from npm, installed in
// interop/mcp by `npm ci` (as .ci/run does).
var interopDir, _ = filepath.Abs("../interop/mcp")

// needNodeModules skips the test (loudly) when the npm packages are not
// installed, and fails it in CI, where they must be.
func needNodeModules(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(interopDir, "node_modules", ".bin")); err == nil {
		return
	}
	msg := "interop/mcp/node_modules is missing: run (cd interop/mcp && npm ci)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED, " + msg)
}

// swarmBinary builds the swarm command once.
func swarmBinary(t *testing.T) string { return servetest.Binary(t) }

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// npmBin runs a program of interop/mcp/node_modules/.bin.
func npmBin(t *testing.T, timeout time.Duration, dir, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(interopDir, "node_modules", ".bin", name), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWARM_STORE=memory:", "SWARM_MODEL=", "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), &buildError{err: err, out: errb.String()}
	}
	return out.String(), nil
}

// interopRuntime loads testdata/interop/swarm.yaml into a runtime.
func interopRuntime(t *testing.T, file string) *swarm.Runtime {
	t.Helper()
	f, err := config.Load(filepath.Join("testdata", "interop", file))
	if err != nil {
		t.Fatal(err)
	}
	m, err := scripted.Load(filepath.Join("testdata", "interop", "script.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Register(rt); err != nil {
		rt.Close()
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(); f.Close() })
	return rt
}

// serveHTTP serves rt's MCP handler at /mcp behind the shared auth
// middleware (no tokens: loopback).
func serveHTTP(t *testing.T, rt *swarm.Runtime) string {
	t.Helper()
	authn, err := auth.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(authn.Middleware(mcp.NewHTTPHandler(rt, mcp.Options{})))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

type inspectorTools struct {
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type inspectorCall struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent mcp.Outcome `json:"structuredContent"`
	IsError           bool        `json:"isError"`
}

// inspect runs the MCP Inspector CLI against target (a URL, or the swarm
// command's argv) and decodes its JSON output into v.
func inspect(t *testing.T, v any, target []string, args ...string) {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "interop"))
	out, err := npmBin(t, 90*time.Second, dir, "mcp-inspector", append(append([]string{"--cli"}, target...), args...)...)
	if err != nil {
		t.Fatalf("inspector %v: %v\n%s", args, err, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("inspector %v: output is not JSON: %v\n%s", args, err, out)
	}
}

// serveProcess starts a real `swarm serve` on testdata/interop and returns
// the URL of its /mcp endpoint, behind the server's own middleware.
func serveProcess(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "interop"))
	return servetest.Serve(t, dir, nil).URL + "/mcp"
}

// TestInspector lists and calls swarm tools with the MCP Inspector CLI,
// over stdio (swarm mcp), over streamable HTTP (/mcp) in this process, and
// over HTTP to a real `swarm serve`.
func TestInspector(t *testing.T) {
	needNodeModules(t)
	targets := map[string][]string{
		"stdio": {swarmBinary(t), "mcp"},
		"http":  {serveHTTP(t, interopRuntime(t, "swarm.yaml")), "--transport", "http"},
		"serve": {serveProcess(t), "--transport", "http"},
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			var tools inspectorTools
			inspect(t, &tools, target, "--method", "tools/list")
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if want := []string{"approval", "echo", "resume", "trip"}; !slices.Equal(names, want) {
				t.Fatalf("tools %v, want %v", names, want)
			}
			var res inspectorCall
			inspect(t, &res, target, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "input=the inspector")
			if res.IsError || len(res.Content) == 0 || res.Content[0].Text != "hello from swarm" || res.StructuredContent.State != swarm.StateCompleted {
				t.Fatalf("echo: %+v", res)
			}
			var paused inspectorCall
			inspect(t, &paused, target, "--method", "tools/call", "--tool-name", "approval", "--tool-arg", "input=book")
			if paused.IsError || paused.StructuredContent.State != swarm.StatePaused || paused.StructuredContent.RunID == "" {
				t.Fatalf("approval: %+v", paused)
			}
			if name != "stdio" {
				// The run lives in the server's store: resume it there.
				var done inspectorCall
				inspect(t, &done, target, "--method", "tools/call", "--tool-name", "resume",
					"--tool-arg", "run_id="+paused.StructuredContent.RunID, "message=yes")
				if done.IsError || done.StructuredContent.State != swarm.StateCompleted || string(done.StructuredContent.Result) != `"booked"` {
					t.Fatalf("resume: %+v", done)
				}
			}
		})
	}
}

// TestServerEverythingToolset runs a swarm whose tools come from
// @modelcontextprotocol/server-everything over stdio.
func TestServerEverythingToolset(t *testing.T) {
	needNodeModules(t)
	rt := interopRuntime(t, "everything.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := rt.Start(ctx, "relay", json.RawMessage(`"ping"`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Wait(ctx, id)
	if err != nil || st.State != swarm.StateCompleted || string(st.Result) != `"relayed"` {
		t.Fatalf("%+v %v", st, err)
	}
	evs, err := rt.History(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, ev := range evs {
		if ev.Type == swarm.EventToolResult {
			if ev.IsError {
				t.Errorf("tool %s failed: %s", ev.Tool, ev.Output)
			}
			got[ev.Tool] = ev.Output
		}
	}
	if !strings.Contains(got["everything__echo"], "ping") || !strings.Contains(got["everything__get-sum"], "42") {
		t.Fatalf("tool results %q", got)
	}
}

// conformancePasses are the server scenarios of @modelcontextprotocol/conformance
// that /mcp passes. The other scenarios call fixtures of the suite's own
// reference server (tools such as test_simple_text, prompts such as
// test_simple_prompt, resources under test://) or resource subscriptions,
// which this server does not offer.
var conformancePasses = []string{
	"completion-complete",
	"dns-rebinding-protection",
	"logging-set-level",
	"ping",
	"prompts-list",
	"resources-list",
	"server-initialize",
	"server-sse-multiple-streams",
	"tools-list",
}

// TestConformance runs the MCP conformance suite in server mode against
// /mcp, mounted in this process and served by a real `swarm serve`, and
// requires the scenarios of conformancePasses to pass.
func TestConformance(t *testing.T) {
	needNodeModules(t)
	t.Run("http", func(t *testing.T) { conformance(t, serveHTTP(t, interopRuntime(t, "swarm.yaml"))) })
	t.Run("serve", func(t *testing.T) { conformance(t, serveProcess(t)) })
}

var resultStamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z?$`)

func conformance(t *testing.T, url string) {
	dir := t.TempDir()
	out, err := npmBin(t, 5*time.Minute, dir, "conformance", "server", "--url", url, "-o", dir)
	// The command fails when any scenario fails; the checks tell which.
	t.Logf("conformance (exit: %v):\n%s", err, out)
	results, _ := filepath.Glob(filepath.Join(dir, "server-*", "checks.json"))
	passed := map[string]bool{}
	for _, path := range results {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		name := strings.TrimPrefix(filepath.Base(filepath.Dir(path)), "server-")
		// The timestamp, such as -2026-11-22T22-12-01-203Z (whose
		// milliseconds may start with 20 too).
		name = resultStamp.ReplaceAllString(name, "")
		ok := len(checks) > 0
		for _, c := range checks {
			if c.Status == "FAILURE" {
				ok = false
				if slices.Contains(conformancePasses, name) {
					t.Errorf("scenario %s: check %s failed: %s", name, c.ID, c.ErrorMessage)
				}
			}
		}
		passed[name] = ok
	}
	if len(passed) == 0 {
		t.Fatalf("no results in %s", dir)
	}
	for _, name := range conformancePasses {
		if !passed[name] {
			t.Errorf("scenario %s did not pass", name)
		}
	}
	for name, ok := range passed {
		if ok && !slices.Contains(conformancePasses, name) {
			t.Logf("scenario %s passes now: add it to conformancePasses", name)
		}
	}
}

// TestSwarmMCPStdio drives the swarm mcp command over real stdio with the
// SDK's client.
func TestSwarmMCPStdio(t *testing.T) {
	before := runtime.NumGoroutine()
	cmd := exec.Command(swarmBinary(t), "mcp")
	cmd.Dir = filepath.Join("testdata", "interop")
	cmd.Env = append(os.Environ(), "SWARM_STORE=memory:", "SWARM_MODEL=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, out := call(t, cs, "approval", map[string]any{"input": "book"})
	if res.IsError || out.State != swarm.StatePaused {
		t.Fatalf("approval: %q %+v", text(res), out)
	}
	res, out = call(t, cs, "resume", map[string]any{"run_id": out.RunID, "message": "yes"})
	if res.IsError || out.State != swarm.StateCompleted || text(res) != "booked" {
		t.Fatalf("resume: %q %+v", text(res), out)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "swarm://runs/" + out.RunID + "/result"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, `"state":"completed"`) {
		t.Fatalf("resource: %v %v", rr, err)
	}
	p, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "trip", Arguments: map[string]string{"input": `{"where": "Rome"}`}})
	if err != nil || p.Messages[0].Content.(*sdk.TextContent).Text != "Plan a trip to Rome." {
		t.Fatalf("prompt: %v %v", p, err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v (stderr: %s)", err, stderr.String())
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("swarm mcp did not exit cleanly: %v; stderr: %s", cmd.ProcessState, stderr.String())
	}
	if strings.Contains(stderr.String(), "level=ERROR") {
		t.Errorf("stderr: %s", stderr.String())
	}
	checkGoroutines(t, before)
}
