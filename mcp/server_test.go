package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
)

type tripIn struct {
	People int    `json:"people"`
	Where  string `json:"where"`
}

type plan struct {
	Plan string `json:"plan"`
}

var testScript = scripted.Script{
	"echo": {scripted.Text("hello back")},
	"trip": {scripted.Tools(scripted.CallTool("complete", map[string]any{"result": map[string]any{"plan": "hike"}}))},
	"approval": {
		scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "approve?", "context": "hut for 2"})),
		scripted.Text(`{"plan": "hut booked"}`),
	},
	"doomed": {scripted.Tools(scripted.CallTool("fail", map[string]any{"reason": "no huts left"}))},
}

func testDefs() []swarm.Definition {
	return []swarm.Definition{
		swarm.Define[string, string]("echo", "Echoes the input", func(string) swarm.Spec {
			return swarm.Spec{Instructions: "Echo {{.Input}} back."}
		}),
		swarm.Define[tripIn, plan]("trip", "Plans a trip", func(in tripIn) swarm.Spec {
			return swarm.Spec{Instructions: "Plan a trip for {{.Input.people}} people."}
		}),
		swarm.Define[string, plan]("approval", "Needs approval", nil),
		swarm.Define[string, string]("doomed", "Always fails", nil),
	}
}

// connect serves rt over in-memory transports and returns a client session.
func connect(t *testing.T, rt *swarm.Runtime, copts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	srv, err := mcp.NewServer(rt, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := sdk.NewInMemoryTransports()
	ctx := swarmtest.Context(t)
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, mcp.Outcome) {
	t.Helper()
	ctx, cancel := context.WithTimeout(swarmtest.Context(t), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var out mcp.Outcome
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("structured content %s: %v", b, err)
		}
	}
	return res, out
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestListTools(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, testScript, testDefs()...)
	cs := connect(t, rt, nil)
	res, err := cs.ListTools(swarmtest.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]string{}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		b, _ := json.Marshal(tool.InputSchema)
		schemas[tool.Name] = string(b)
		if tool.OutputSchema == nil {
			t.Errorf("tool %s has no output schema", tool.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"approval", "doomed", "echo", "resume", "trip"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	if !strings.Contains(schemas["echo"], `"input":{"type":"string"}`) {
		t.Errorf("text swarm schema %s: want an input string property", schemas["echo"])
	}
	if !strings.Contains(schemas["trip"], `"people"`) || strings.Contains(schemas["trip"], `"input"`) {
		t.Errorf("object swarm schema %s: want its own properties", schemas["trip"])
	}
}

func TestCallToCompletion(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, testScript, testDefs()...)
	cs := connect(t, rt, nil)

	res, out := call(t, cs, "echo", map[string]any{"input": "hi"})
	if res.IsError || text(res) != "hello back" || out.State != swarm.StateCompleted || string(out.Result) != `"hello back"` {
		t.Fatalf("echo: error=%v text=%q outcome=%+v", res.IsError, text(res), out)
	}
	swarmtest.AssertState(t, rt, out.RunID, swarm.StateCompleted)

	res, out = call(t, cs, "trip", map[string]any{"people": 2, "where": "alps"})
	if res.IsError || string(out.Result) != `{"plan":"hike"}` {
		t.Fatalf("trip: error=%v text=%q outcome=%+v", res.IsError, text(res), out)
	}

	res, out = call(t, cs, "doomed", map[string]any{"input": "x"})
	if !res.IsError || out.State != swarm.StateFailed || !strings.Contains(text(res), "no huts left") {
		t.Fatalf("doomed: error=%v text=%q outcome=%+v", res.IsError, text(res), out)
	}
}

func TestBadArguments(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, testScript, testDefs()...)
	cs := connect(t, rt, nil)
	for _, c := range []struct {
		tool string
		args any
		want string
	}{
		{"trip", map[string]any{"people": "two"}, "invalid input"},
		{"echo", map[string]any{}, `missing the property "input"`},
		{"echo", map[string]any{"input": 3}, "invalid input"},
		{"echo", map[string]any{"input": "x", "bogus": 1}, `unknown field "bogus"`},
		{"resume", map[string]any{"run_id": "nope", "message": "x"}, "no run"},
	} {
		res, _ := call(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%s %v: error=%v %q, want an error with %q", c.tool, c.args, res.IsError, text(res), c.want)
		}
	}
	runs, err := rt.List(swarmtest.Context(t), store.Filter{})
	if err != nil || len(runs) != 0 {
		t.Errorf("bad arguments created runs: %v %v", runs, err)
	}
	ctx := swarmtest.Context(t)
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "nope", Arguments: map[string]any{}}); err == nil {
		t.Error("unknown tool: no error")
	}
}

func TestPauseAndResume(t *testing.T) {
	rt, m := swarmtest.NewRuntime(t, testScript, testDefs()...)
	cs := connect(t, rt, nil)

	res, out := call(t, cs, "approval", map[string]any{"input": "book it"})
	if res.IsError || out.State != swarm.StatePaused || out.Reason != "approve?" || out.Context != "hut for 2" {
		t.Fatalf("approval: error=%v text=%q outcome=%+v", res.IsError, text(res), out)
	}
	if !strings.Contains(text(res), out.RunID) || !strings.Contains(text(res), "resume") {
		t.Errorf("paused text %q does not say how to resume", text(res))
	}

	res, out2 := call(t, cs, "resume", map[string]any{"run_id": out.RunID, "message": "yes"})
	if res.IsError || out2.State != swarm.StateCompleted || string(out2.Result) != `{"plan":"hut booked"}` {
		t.Fatalf("resume: error=%v text=%q outcome=%+v", res.IsError, text(res), out2)
	}
	// The completed run no longer shows the pause's reason, in the
	// outcome nor in its result resource.
	if out2.Reason != "" || out2.Context != "" || strings.Contains(text(res), "approve?") {
		t.Errorf("completed run still shows its pause: text %q, outcome %+v", text(res), out2)
	}
	rr, err := cs.ReadResource(swarmtest.Context(t), &sdk.ReadResourceParams{URI: "swarm://runs/" + out.RunID + "/result"})
	if err != nil || strings.Contains(rr.Contents[0].Text, "approve?") {
		t.Errorf("result resource of the completed run: %v %v", rr, err)
	}
	if left := m.Unconsumed(out.RunID)["approval"]; left != 0 {
		t.Errorf("approval script: %d steps left", left)
	}
	swarmtest.AssertJournal(t, rt, out.RunID)

	// Resuming a finished run is refused and changes nothing.
	res, out3 := call(t, cs, "resume", map[string]any{"run_id": out.RunID, "message": "again"})
	if !res.IsError || out3.State != swarm.StateCompleted || !strings.Contains(text(res), "not paused") {
		t.Fatalf("second resume: error=%v text=%q outcome=%+v", res.IsError, text(res), out3)
	}
}

func TestResultResource(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, testScript, testDefs()...)
	cs := connect(t, rt, nil)
	ctx := swarmtest.Context(t)
	_, out := call(t, cs, "trip", map[string]any{"people": 2, "where": "x"})

	tmpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpls.ResourceTemplates) != 1 || tmpls.ResourceTemplates[0].URITemplate != mcp.ResultURITemplate {
		t.Fatalf("templates %+v %v", tmpls, err)
	}
	uri := "swarm://runs/" + out.RunID + "/result"
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	var st swarm.Status
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &st); err != nil {
		t.Fatal(err)
	}
	if st.ID != out.RunID || st.State != swarm.StateCompleted || string(st.Result) != `{"plan":"hike"}` || rr.Contents[0].MIMEType != "application/json" {
		t.Fatalf("resource %s: %s", uri, rr.Contents[0].Text)
	}
	for _, bad := range []string{"swarm://runs/nope/result", "swarm://runs//result", "swarm://runs/a/b/result"} {
		if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: bad}); err == nil {
			t.Errorf("read %s: no error", bad)
		}
	}
}

func TestPrompts(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, testScript, testDefs()...)
	cs := connect(t, rt, nil)
	ctx := swarmtest.Context(t)
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(list.Prompts) != 4 {
		t.Fatalf("prompts %+v %v", list, err)
	}
	get := func(name string, args map[string]string) (string, error) {
		res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: args})
		if err != nil {
			return "", err
		}
		return res.Messages[0].Content.(*sdk.TextContent).Text, nil
	}
	if got, err := get("echo", map[string]string{"input": "the moon"}); err != nil || got != "Echo the moon back." {
		t.Errorf("echo prompt %q %v", got, err)
	}
	if got, err := get("echo", nil); err != nil || got != "Echo  back." {
		t.Errorf("echo prompt without input %q %v", got, err)
	}
	if got, err := get("trip", map[string]string{"input": `{"people": 3, "where": "x"}`}); err != nil || got != "Plan a trip for 3 people." {
		t.Errorf("trip prompt %q %v", got, err)
	}
	// No instructions: the description stands in.
	if got, err := get("approval", nil); err != nil || got != "Needs approval" {
		t.Errorf("approval prompt %q %v", got, err)
	}
	if _, err := get("trip", map[string]string{"input": "not json"}); err == nil {
		t.Error("trip prompt with bad input: no error")
	}
	if _, err := get("nope", nil); err == nil {
		t.Error("unknown prompt: no error")
	}
}

func TestProgressNotifications(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, testScript, testDefs()...)
	var n atomic.Int32
	cs := connect(t, rt, &sdk.ClientOptions{ProgressNotificationHandler: func(ctx context.Context, req *sdk.ProgressNotificationClientRequest) {
		if req.Params.ProgressToken == "tok" {
			n.Add(1)
		}
	}})
	params := &sdk.CallToolParams{Name: "trip", Arguments: map[string]any{"people": 1, "where": "x"}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(swarmtest.Context(t), params)
	if err != nil || res.IsError {
		t.Fatalf("%v %v", res, err)
	}
	// The run journals at least its start, the model response, the tool
	// call and its end; notifications may trail the response a little.
	deadline := time.Now().Add(10 * time.Second)
	for n.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n.Load() < 2 {
		t.Errorf("got %d progress notifications, want at least 2", n.Load())
	}
}

func TestResumeToolNameClash(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{}, swarm.Define[string, string]("resume", "", nil))
	if _, err := mcp.NewServer(rt, mcp.Options{}); err == nil {
		t.Fatal("a swarm named resume: no error")
	}
	if _, err := mcp.NewServer(nil, mcp.Options{}); err == nil {
		t.Fatal("nil runtime: no error")
	}
}

// bearer adds a bearer token to requests.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func httpClient(t *testing.T, url, token string) (*sdk.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = bearer{token: token, next: http.DefaultTransport}
	}
	ctx, cancel := context.WithTimeout(swarmtest.Context(t), 10*time.Second)
	defer cancel()
	return sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
}

func TestHTTPAuth(t *testing.T) {
	before := runtime.NumGoroutine()
	rt, _ := swarmtest.NewRuntime(t, testScript, testDefs()...)
	authn, err := auth.New([]auth.Token{
		{Name: "echoer", Secret: "s-echo", Swarms: []string{"echo"}},
		{Name: "admin", Secret: "s-admin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(authn.Middleware(mcp.NewHTTPHandler(rt, mcp.Options{})))
	ctx := swarmtest.Context(t)

	// No token, a wrong token: 401.
	for _, tok := range []string{"", "wrong"} {
		if cs, err := httpClient(t, ts.URL, tok); err == nil {
			cs.Close()
			t.Errorf("token %q: connected", tok)
		}
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401", tok, resp.StatusCode)
		}
	}

	// A token allowed one swarm sees and runs that one only.
	cs, err := httpClient(t, ts.URL, "s-echo")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"echo", "resume"}) {
		t.Errorf("echoer sees tools %v", names)
	}
	res, out := call(t, cs, "echo", map[string]any{"input": "hi"})
	if res.IsError || out.State != swarm.StateCompleted {
		t.Errorf("echoer calls echo: %v %q", res.IsError, text(res))
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "trip", Arguments: map[string]any{"people": 1, "where": "x"}}); err == nil {
		t.Error("echoer calls trip: no error")
	}
	if _, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "trip"}); err == nil {
		t.Error("echoer gets the trip prompt: no error")
	}

	// The admin's trip run is invisible to the echoer, through the resource
	// and the resume tool, which the handlers refuse.
	admin, err := httpClient(t, ts.URL, "s-admin")
	if err != nil {
		t.Fatal(err)
	}
	_, tripOut := call(t, admin, "approval", map[string]any{"input": "x"})
	if tripOut.State != swarm.StatePaused {
		t.Fatalf("admin approval: %+v", tripOut)
	}
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "swarm://runs/" + tripOut.RunID + "/result"}); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("echoer reads the admin's run: %v", err)
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "resume", Arguments: map[string]any{"run_id": tripOut.RunID, "message": "yes"}}); err == nil {
		t.Error("echoer resumes the admin's run: no error")
	}
	swarmtest.AssertState(t, rt, tripOut.RunID, swarm.StatePaused)

	// A raw tools/call of a forbidden swarm is answered 403.
	req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"trip","arguments":{}}}`))
	req.Header.Set("Authorization", "Bearer s-echo")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		ID    int `json:"id"`
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || body.ID != 7 || body.Error.Code != mcp.CodeForbidden {
		t.Errorf("forbidden call: status %d body %+v", resp.StatusCode, body)
	}

	cs.Close()
	admin.Close()
	ts.Close()
	rt.Close()
	checkGoroutines(t, before)
}

// checkGoroutines fails the test if goroutines started during it are still
// running after a grace period.
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		http.DefaultClient.CloseIdleConnections()
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines before, %d after:\n%s", before, n, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCompletion(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, testScript, testDefs()...)
	cs := connect(t, rt, nil)
	_, out := call(t, cs, "echo", map[string]any{"input": "x"})
	ctx := swarmtest.Context(t)
	res, err := cs.Complete(ctx, &sdk.CompleteParams{
		Ref:      &sdk.CompleteReference{Type: "ref/resource", URI: mcp.ResultURITemplate},
		Argument: sdk.CompleteParamsArgument{Name: "id", Value: out.RunID[:6]},
	})
	if err != nil || !slices.Equal(res.Completion.Values, []string{out.RunID}) {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = cs.Complete(ctx, &sdk.CompleteParams{
		Ref:      &sdk.CompleteReference{Type: "ref/prompt", Name: "echo"},
		Argument: sdk.CompleteParamsArgument{Name: "input", Value: "a"},
	})
	if err != nil || len(res.Completion.Values) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestResumeAtPause: the paused outcome names its pause, and a resume that
// names a pause the run no longer waits at is refused and applies nothing.
func TestResumeAtPause(t *testing.T) {
	ask := func(reason string) scripted.Step {
		return scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": reason}))
	}
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"twice": {ask("first?"), ask("second?"), scripted.Text("done")}},
		swarm.Define[string, string]("twice", "Asks twice", nil))
	cs := connect(t, rt, nil)
	_, first := call(t, cs, "twice", map[string]any{"input": "go"})
	if first.State != swarm.StatePaused || first.Pause == 0 {
		t.Fatalf("first pause: %+v", first)
	}
	res, second := call(t, cs, "resume", map[string]any{"run_id": first.RunID, "message": "yes", "pause": first.Pause})
	if res.IsError || second.State != swarm.StatePaused || second.Reason != "second?" || second.Pause <= first.Pause {
		t.Fatalf("answer to the first pause: error=%v text=%q outcome=%+v", res.IsError, text(res), second)
	}
	res, _ = call(t, cs, "resume", map[string]any{"run_id": first.RunID, "message": "late", "pause": first.Pause})
	if !res.IsError || !strings.Contains(text(res), "no longer waits") {
		t.Fatalf("late answer: error=%v text=%q", res.IsError, text(res))
	}
	st, err := rt.Status(context.Background(), first.RunID)
	if err != nil || st.State != swarm.StatePaused || st.Pause != second.Pause {
		t.Fatalf("after the late answer: %+v %v", st, err)
	}
	res, done := call(t, cs, "resume", map[string]any{"run_id": first.RunID, "message": "yes", "pause": second.Pause})
	if res.IsError || done.State != swarm.StateCompleted {
		t.Fatalf("answer to the second pause: error=%v text=%q outcome=%+v", res.IsError, text(res), done)
	}
}
