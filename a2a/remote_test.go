package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
)

// toolResult returns the outcome of run id's call of tool.
func toolResult(t *testing.T, rt *swarm.Runtime, id, tool string) swarm.Event {
	t.Helper()
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventToolResult && ev.Tool == tool {
			return ev
		}
	}
	t.Fatalf("run %s has no result of %s", id, tool)
	return swarm.Event{}
}

func TestRemote(t *testing.T) {
	a, err := auth.New([]auth.Token{{Name: "caller", Secret: "remote-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	remote := newEnv(t, a2a.Options{Auth: a}, nil) // another runtime, serving echo, approver, failer...
	dead := httptest.NewServer(nil)
	dead.Close()

	tool := func(target, token string) swarm.Tool {
		opts := []a2a.RemoteOption{a2a.WithRemoteDescription("Ask the helper")}
		if token != "" {
			opts = append(opts, a2a.WithToken(token))
		}
		url := remote.srv.URL + "/a2a/" + target
		if target == "dead" {
			url = dead.URL + "/a2a/echo"
		}
		if target == "echo" {
			url += "/.well-known/agent-card.json" // the card's own URL works too
		}
		tl, err := a2a.Remote("helper", url, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	call := scripted.Tools(scripted.CallTool("delegate_to_helper", map[string]any{"request": "say hello"}))
	bosses := map[string]swarm.Tool{
		"boss_ok":     tool("echo", "remote-secret"),
		"boss_fail":   tool("failer", "remote-secret"),
		"boss_pause":  tool("approver", "remote-secret"),
		"boss_noauth": tool("echo", ""),
		"boss_dead":   tool("dead", ""),
	}
	script := scripted.Script{}
	var ds []swarm.Definition
	for id, tl := range bosses {
		script[id] = []scripted.Step{call, scripted.Text("boss done")}
		ds = append(ds, swarm.Define[string, string](id, "delegates", func(string) swarm.Spec {
			return swarm.Spec{Instructions: "Delegate.", Tools: []swarm.Tool{tl}}
		}))
	}
	rt, _ := swarmtest.NewRuntime(t, script, ds...)
	ctx := swarmtest.Context(t)
	for id, want := range map[string]struct {
		isError bool
		output  []string
	}{
		"boss_ok":     {false, []string{"hello back"}},
		"boss_fail":   {true, []string{"task", "failed", "no luck"}},
		"boss_pause":  {true, []string{"needs input", "approve?", "costs $5"}},
		"boss_noauth": {true, []string{"401"}},
		"boss_dead":   {true, []string{"agent card"}},
	} {
		runID, err := rt.Start(ctx, id, []byte(`"go"`))
		if err != nil {
			t.Fatal(err)
		}
		st, err := rt.Wait(ctx, runID)
		if err != nil || st.State != swarm.StateCompleted {
			t.Fatalf("%s: %+v, %v", id, st, err)
		}
		ev := toolResult(t, rt, runID, "delegate_to_helper")
		if ev.IsError != want.isError {
			t.Errorf("%s: is_error %v, output %q", id, ev.IsError, ev.Output)
		}
		for _, w := range want.output {
			if !strings.Contains(ev.Output, w) {
				t.Errorf("%s: output %q lacks %q", id, ev.Output, w)
			}
		}
		if strings.Contains(ev.Output, "remote-secret") {
			t.Errorf("%s: the token leaked into the output: %q", id, ev.Output)
		}
	}

	// The remote task's message id is the step's idempotency key, so a
	// repeated attempt finds the same task.
	runs, err := remote.rt.List(ctx, swarmFilter("echo"))
	if err != nil || len(runs) != 1 {
		t.Fatalf("remote echo runs = %v, %v", runs, err)
	}
	start := swarmtest.Events(t, remote.rt, runs[0].ID)[0]
	if key, _ := start.Values[a2a.ValueMessageID].(string); !strings.Contains(key, "/t1/tool/") {
		t.Errorf("remote message id = %q, want an idempotency key", key)
	}
}

func TestRemoteOptions(t *testing.T) {
	for _, tc := range []struct{ name, url string }{
		{"", "http://x"},
		{"bad name", "http://x"},
		{strings.Repeat("n", 60), "http://x"},
		{"ok", "ftp://x"},
		{"ok", "://"},
		{"ok", "http://"},
	} {
		if _, err := a2a.Remote(tc.name, tc.url); err == nil {
			t.Errorf("Remote(%q, %q): want an error", tc.name, tc.url)
		}
	}
	tl, err := a2a.Remote("ok", "http://127.0.0.1:1")
	if err != nil || tl.Name() != "delegate_to_ok" || !strings.Contains(string(tl.Schema()), `"request"`) {
		t.Fatalf("Remote = %v, %v", tl, err)
	}
	if _, err := tl.Call(swarmtest.Context(t), []byte(`{"request":""}`)); err == nil {
		t.Error("empty request: want an error")
	}
	if _, err := tl.Call(swarmtest.Context(t), []byte(`{"request":5}`)); err == nil {
		t.Error("bad arguments: want an error")
	}
}

func swarmFilter(id string) store.Filter { return store.Filter{Swarm: id} }

// TestRemotePolls checks that a remote task still working when
// SendMessage returns is followed until it ends.
func TestRemotePolls(t *testing.T) {
	slowish := scripted.Script{"later": {{Text: "finally", Delay: 50 * time.Millisecond}}}
	remoteRT, _ := swarmtest.NewRuntime(t, slowish, swarm.Define[string, string]("later", "Answers later", nil))
	h, err := a2a.NewHandler(remoteRT, a2a.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A server that does not block: every SendMessage returns at once.
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var req map[string]any
			if json.Unmarshal(body, &req) == nil && req["method"] == "SendMessage" {
				req["params"].(map[string]any)["configuration"] = map[string]any{"returnImmediately": true}
				body, _ = json.Marshal(req)
			}
			if req["method"] == "GetTask" {
				gets.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	tl, err := a2a.Remote("later", srv.URL+"/a2a/later", a2a.WithPollInterval(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tl.Call(swarmtest.Context(t), json.RawMessage(`{"request":"when?"}`))
	if err != nil || out != "finally" || gets.Load() == 0 {
		t.Fatalf("Call = %q, %v after %d polls", out, err, gets.Load())
	}
	// Canceling the caller's context ends the wait.
	ctx, cancel := context.WithTimeout(swarmtest.Context(t), 10*time.Millisecond)
	defer cancel()
	slowTool, _ := a2a.Remote("later", srv.URL+"/a2a/later", a2a.WithPollInterval(time.Hour))
	if _, err := slowTool.Call(ctx, json.RawMessage(`{"request":"again"}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("canceled call: %v", err)
	}
}
