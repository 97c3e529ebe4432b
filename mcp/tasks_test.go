package mcp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/internal/servetest"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/postgres"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
	"github.com/swarmrt/swarm/swarmtest"
)

// modern is a client of the 2026-07-28 revision and the Tasks extension,
// written from their text: plain JSON-RPC over HTTP, each request carrying
// its version and capabilities in _meta and the routing headers.
type modern struct {
	t     testing.TB
	url   string
	token string
	// tasks declares the Tasks extension in every request.
	tasks bool
	id    int
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

type rpcReply struct {
	status int
	header http.Header
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// call sends method with params; name is the Mcp-Name header (the tool's
// name or the task id).
func (c *modern) call(method, name string, params map[string]any) rpcReply {
	c.t.Helper()
	return c.send(method, name, params, nil)
}

func (c *modern) send(method, name string, params map[string]any, edit func(*http.Request)) rpcReply {
	c.t.Helper()
	c.id++
	caps := map[string]any{}
	if c.tasks {
		caps["extensions"] = map[string]any{mcp.TasksExtension: map[string]any{}}
	}
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	req, _ := http.NewRequest("POST", c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	raw := readReply(c.t, resp)
	r := rpcReply{status: resp.StatusCode, header: resp.Header}
	if err := json.Unmarshal(raw, &r); err != nil && resp.StatusCode < 400 {
		c.t.Fatalf("%s: status %d, reply %q: %v", method, resp.StatusCode, raw, err)
	}
	return r
}

// readReply returns the JSON-RPC response of a reply in JSON or in an
// event stream (whose last data line is the response).
func readReply(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return b.Bytes()
	}
	var last []byte
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"id"`) {
			last = []byte(data)
		}
	}
	return last
}

// task is what a tools/call or tasks/* answer holds of a task.
type task struct {
	ResultType     string `json:"resultType"`
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage"`
	CreatedAt      string `json:"createdAt"`
	PollIntervalMs int    `json:"pollIntervalMs"`
	InputRequests  map[string]struct {
		Method string `json:"method"`
		Params struct {
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
		} `json:"params"`
	} `json:"inputRequests"`
	Result *struct {
		IsError           bool        `json:"isError"`
		StructuredContent mcp.Outcome `json:"structuredContent"`
		Content           []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Meta map[string]json.RawMessage `json:"_meta"`
}

func (c *modern) task(r rpcReply) task {
	c.t.Helper()
	if r.Error != nil {
		c.t.Fatalf("error %d %s", r.Error.Code, r.Error.Message)
	}
	var tk task
	if err := json.Unmarshal(r.Result, &tk); err != nil {
		c.t.Fatalf("result %s: %v", r.Result, err)
	}
	return tk
}

// get polls tasks/get until the task's status is want.
func (c *modern) get(id, want string) task {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tk := c.task(c.call("tasks/get", id, map[string]any{"taskId": id}))
		if tk.ResultType != "complete" || tk.TaskID != id {
			c.t.Fatalf("tasks/get: %+v", tk)
		}
		if tk.Status == want {
			return tk
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s is %s, want %s", id, tk.Status, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var tasksScript = scripted.Script{
	"echo": {scripted.Text("hello back")},
	"approval": {
		scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "approve?", "context": "hut for 2"})),
		scripted.Text(`{"plan": "hut booked"}`),
	},
	"doomed": {scripted.Tools(scripted.CallTool("fail", map[string]any{"reason": "no huts left"}))},
	"slow":   {{Text: "too late", Delay: time.Hour}},
}

func tasksDefs() []swarm.Definition {
	return append(testDefs(), swarm.Define[string, string]("slow", "Takes its time", nil))
}

// TestTasks drives the Tasks extension over the stateless revision: a run
// that pauses is a task in input_required, answered by tasks/update; a run
// that goes on is a working task that tasks/cancel stops; a run that ends
// within the wait is a plain result; a failed run is a completed task with
// an error result.
func TestTasks(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, tasksScript, tasksDefs()...)
	quick := httptest.NewServer(mcp.NewHTTPHandler(rt, mcp.Options{TaskWait: 50 * time.Millisecond}))
	defer quick.Close()
	c := &modern{t: t, url: quick.URL, tasks: true}

	// server/discover declares the extension.
	r := c.call("server/discover", "", nil)
	if r.Error != nil || !strings.Contains(string(r.Result), `"`+mcp.TasksExtension+`":{}`) || !strings.Contains(string(r.Result), `"2026-07-28"`) {
		t.Fatalf("server/discover: %s %+v", r.Result, r.Error)
	}

	// A pause: the call answers with a task waiting for input.
	tk := c.task(c.call("tools/call", "approval", map[string]any{"name": "approval", "arguments": map[string]any{"input": "book"}}))
	if tk.ResultType != "task" || tk.Status != "input_required" || tk.StatusMessage != "approve?" || tk.PollIntervalMs <= 0 || tk.CreatedAt == "" {
		t.Fatalf("tools/call approval: %+v", tk)
	}
	id := tk.TaskID
	swarmtest.AssertState(t, rt, id, swarm.StatePaused)
	var key string
	for k, ir := range tk.InputRequests {
		key = k
		if ir.Method != "elicitation/create" || !strings.Contains(ir.Params.Message, "hut for 2") || !strings.Contains(string(ir.Params.RequestedSchema), `"message"`) {
			t.Fatalf("input request %s: %+v", k, ir)
		}
	}
	if len(tk.InputRequests) != 1 || !strings.HasPrefix(key, "pause-") {
		t.Fatalf("input requests: %+v", tk.InputRequests)
	}
	got := c.get(id, "input_required")
	if _, ok := got.InputRequests[key]; !ok || got.Meta["io.modelcontextprotocol/serverInfo"] == nil {
		t.Fatalf("tasks/get: %+v", got)
	}

	// An answer to another key is ignored; the answer to the pause resumes
	// the run.
	for _, k := range []string{"pause-999999", key} {
		r := c.call("tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{k: map[string]any{"action": "accept", "content": map[string]any{"message": "yes"}}}})
		if r.Error != nil || string(r.Result) != `{"resultType":"complete"}` {
			t.Fatalf("tasks/update %s: %s %+v", k, r.Result, r.Error)
		}
		if k != key {
			swarmtest.AssertState(t, rt, id, swarm.StatePaused)
		}
	}
	done := c.get(id, "completed")
	if done.Result == nil || done.Result.IsError || done.Result.StructuredContent.State != swarm.StateCompleted ||
		string(done.Result.StructuredContent.Result) != `{"plan":"hut booked"}` {
		t.Fatalf("completed task: %+v", done)
	}
	// The answered pause is no longer outstanding: a second answer changes
	// nothing.
	if r := c.call("tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"message": "again"}}}}); r.Error != nil {
		t.Fatalf("late tasks/update: %+v", r.Error)
	}

	// A run that goes on is a working task; tasks/cancel stops it.
	tk = c.task(c.call("tools/call", "slow", map[string]any{"name": "slow", "arguments": map[string]any{"input": "x"}}))
	if tk.ResultType != "task" || tk.Status != "working" {
		t.Fatalf("tools/call slow: %+v", tk)
	}
	c.get(tk.TaskID, "working")
	if r := c.call("tasks/cancel", tk.TaskID, map[string]any{"taskId": tk.TaskID}); r.Error != nil || string(r.Result) != `{"resultType":"complete"}` {
		t.Fatalf("tasks/cancel: %s %+v", r.Result, r.Error)
	}
	c.get(tk.TaskID, "cancelled")
	swarmtest.AssertState(t, rt, tk.TaskID, swarm.StateStopped)

	// A failed run is a completed task whose result is an error (or that
	// result at once, when the run failed within the wait).
	r = c.call("tools/call", "doomed", map[string]any{"name": "doomed", "arguments": map[string]any{"input": "x"}})
	tk = c.task(r)
	if tk.ResultType == "task" {
		tk = c.get(tk.TaskID, "completed")
		r.Result, _ = json.Marshal(tk.Result)
	}
	var failed struct {
		IsError           bool        `json:"isError"`
		StructuredContent mcp.Outcome `json:"structuredContent"`
	}
	if err := json.Unmarshal(r.Result, &failed); err != nil || !failed.IsError || failed.StructuredContent.State != swarm.StateFailed {
		t.Fatalf("doomed: %s", r.Result)
	}

	// Within the wait, a run that ends is answered with its result.
	patient := httptest.NewServer(mcp.NewHTTPHandler(rt, mcp.Options{TaskWait: time.Minute}))
	defer patient.Close()
	p := &modern{t: t, url: patient.URL, tasks: true}
	r = p.call("tools/call", "echo", map[string]any{"name": "echo", "arguments": map[string]any{"input": "hi"}})
	var res struct {
		ResultType        string      `json:"resultType"`
		StructuredContent mcp.Outcome `json:"structuredContent"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || res.ResultType != "complete" || res.StructuredContent.State != swarm.StateCompleted {
		t.Fatalf("tools/call echo: %s %+v", r.Result, r.Error)
	}

	// Every stateless result says its type, prompts and resources too.
	for _, q := range []struct {
		method, name string
		params       map[string]any
	}{
		{"prompts/get", "echo", map[string]any{"name": "echo", "arguments": map[string]any{"input": "hi"}}},
		{"resources/read", "swarm://runs/" + id + "/result", map[string]any{"uri": "swarm://runs/" + id + "/result"}},
		{"tools/list", "", nil},
	} {
		r := p.call(q.method, q.name, q.params)
		if r.Error != nil || !strings.Contains(string(r.Result), `"resultType":"complete"`) {
			t.Errorf("%s: %s %+v", q.method, r.Result, r.Error)
		}
	}

	// Without the extension, a call waits for its run as before: a pause
	// is a result naming the resume tool, never a task.
	plain := &modern{t: t, url: quick.URL}
	r = plain.call("tools/call", "approval", map[string]any{"name": "approval", "arguments": map[string]any{"input": "book"}})
	if err := json.Unmarshal(r.Result, &res); err != nil || res.ResultType != "complete" || res.StructuredContent.State != swarm.StatePaused {
		t.Fatalf("tools/call without tasks: %s %+v", r.Result, r.Error)
	}
}

// TestTasksErrors checks the protocol errors of the extension's requests.
func TestTasksErrors(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, tasksScript, tasksDefs()...)
	authn, err := auth.New([]auth.Token{
		{Name: "echoer", Secret: "s-echo", Swarms: []string{"echo"}},
		{Name: "admin", Secret: "s-admin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(authn.Middleware(mcp.NewHTTPHandler(rt, mcp.Options{})))
	defer ts.Close()
	admin := &modern{t: t, url: ts.URL, token: "s-admin", tasks: true}
	tk := admin.task(admin.call("tools/call", "approval", map[string]any{"name": "approval", "arguments": map[string]any{"input": "x"}}))
	id := tk.TaskID

	// Another token's swarm: answered as a task that does not exist (the
	// answer does not tell that the id is a run), and nothing applied.
	echoer := &modern{t: t, url: ts.URL, token: "s-echo", tasks: true}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		r := echoer.call(m, id, map[string]any{"taskId": id, "inputResponses": map[string]any{}})
		unknown := echoer.call(m, "run_nope", map[string]any{"taskId": "run_nope", "inputResponses": map[string]any{}})
		if r.status != unknown.status || r.Error == nil || unknown.Error == nil || r.Error.Code != unknown.Error.Code || r.Error.Message != unknown.Error.Message ||
			r.header.Get("WWW-Authenticate") != "" || strings.Contains(r.Error.Message, "approval") {
			t.Errorf("echoer %s: status %d %+v, want the answer to an unknown task: %d %+v", m, r.status, r.Error, unknown.status, unknown.Error)
		}
	}
	swarmtest.AssertState(t, rt, id, swarm.StatePaused)

	for _, c := range []struct {
		name   string
		client *modern
		method string
		taskID string
		edit   func(*http.Request)
		status int
		code   int
	}{
		{"unknown task", admin, "tasks/get", "run_nope", nil, 200, -32602},
		{"no task id", admin, "tasks/get", "", nil, 200, -32602},
		{"no extension", &modern{t: t, url: ts.URL, token: "s-admin"}, "tasks/get", id, nil, 400, -32021},
		{"name mismatch", admin, "tasks/get", id, func(r *http.Request) { r.Header.Set("Mcp-Name", "run_other") }, 400, -32020},
		{"method mismatch", admin, "tasks/cancel", id, func(r *http.Request) { r.Header.Set("Mcp-Method", "tasks/get") }, 400, -32020},
		{"no token", &modern{t: t, url: ts.URL, tasks: true}, "tasks/get", id, nil, 401, 0},
	} {
		r := c.client.send(c.method, c.taskID, map[string]any{"taskId": c.taskID}, c.edit)
		if r.status != c.status || (c.code != 0 && (r.Error == nil || r.Error.Code != c.code)) {
			t.Errorf("%s: status %d error %+v, want %d %d", c.name, r.status, r.Error, c.status, c.code)
		}
	}
	// A decline is refused; the pause still waits.
	r := admin.call("tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{tk.firstKey(): map[string]any{"action": "decline"}}})
	if r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("decline: %+v", r.Error)
	}
	swarmtest.AssertState(t, rt, id, swarm.StatePaused)
}

func (tk task) firstKey() string {
	for k := range tk.InputRequests {
		return k
	}
	return ""
}

// TestTasksAcrossRestart starts tasks through a real `swarm serve` on
// SQLite, kills the process, and follows them through a new one on the
// same store: tasks/get still answers, tasks/update resumes one and
// tasks/cancel stops the other.
func TestTasksAcrossRestart(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("testdata", "interop"))
	env := []string{"SWARM_STORE=sqlite:" + filepath.Join(t.TempDir(), "runs.db")}
	first := servetest.Serve(t, dir, env)
	c := &modern{t: t, url: first.URL + "/mcp", tasks: true}
	var ids []string
	for range 2 {
		tk := c.task(c.call("tools/call", "approval", map[string]any{"name": "approval", "arguments": map[string]any{"input": "book"}}))
		if tk.ResultType != "task" || tk.Status != "input_required" {
			t.Fatalf("tools/call approval: %+v", tk)
		}
		ids = append(ids, tk.TaskID)
	}
	_ = first.Cmd.Process.Kill()
	<-first.Exited

	second := servetest.Serve(t, dir, env)
	c.url = second.URL + "/mcp"
	tk := c.get(ids[0], "input_required")
	if r := c.call("tasks/update", ids[0], map[string]any{"taskId": ids[0], "inputResponses": map[string]any{tk.firstKey(): map[string]any{"action": "accept", "content": map[string]any{"message": "yes"}}}}); r.Error != nil {
		t.Fatalf("tasks/update: %+v", r.Error)
	}
	done := c.get(ids[0], "completed")
	if done.Result == nil || done.Result.IsError || string(done.Result.StructuredContent.Result) != `"booked"` {
		t.Fatalf("completed task: %+v", done)
	}
	if r := c.call("tasks/cancel", ids[1], map[string]any{"taskId": ids[1]}); r.Error != nil {
		t.Fatalf("tasks/cancel: %+v", r.Error)
	}
	c.get(ids[1], "cancelled")
}

// BenchmarkTaskRoundTrip measures a task's round trip over the stateless
// revision on loopback HTTP (memory store, scripted model): a tools/call
// that answers with a task waiting for input, a tasks/get, the tasks/update
// that answers it, and tasks/get until the result.
func BenchmarkTaskRoundTrip(b *testing.B) {
	rt, _ := swarmtest.NewRuntime(b, tasksScript, tasksDefs()...)
	ts := httptest.NewServer(mcp.NewHTTPHandler(rt, mcp.Options{}))
	defer ts.Close()
	c := &modern{t: b, url: ts.URL, tasks: true}
	gets := 0
	b.ReportAllocs()
	for b.Loop() {
		tk := c.task(c.call("tools/call", "approval", map[string]any{"name": "approval", "arguments": map[string]any{"input": "book"}}))
		if tk.Status != "input_required" {
			b.Fatalf("tools/call: %+v", tk)
		}
		tk = c.task(c.call("tasks/get", tk.TaskID, map[string]any{"taskId": tk.TaskID}))
		if r := c.call("tasks/update", tk.TaskID, map[string]any{"taskId": tk.TaskID, "inputResponses": map[string]any{tk.firstKey(): map[string]any{"action": "accept", "content": map[string]any{"message": "yes"}}}}); r.Error != nil {
			b.Fatalf("tasks/update: %+v", r.Error)
		}
		for {
			gets++
			if got := c.task(c.call("tasks/get", tk.TaskID, map[string]any{"taskId": tk.TaskID})); got.Status == "completed" {
				break
			}
		}
	}
	b.ReportMetric(float64(gets)/float64(b.N), "gets/op")
}

// TestTasksAcrossNodesPostgres serves one PostgreSQL store from two
// runtimes, as two nodes: a task started on one is read, answered and
// cancelled through the other.
func TestTasksAcrossNodesPostgres(t *testing.T) {
	url := pgtest.URL(t) // a schema of its own; skips without SWARM_TEST_POSTGRES
	ctx := swarmtest.Context(t)
	var nodes []*modern
	for range 2 {
		st, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(tasksScript), PollInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		if err := rt.Register(tasksDefs()...); err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(mcp.NewHTTPHandler(rt, mcp.Options{TaskWait: 50 * time.Millisecond}))
		t.Cleanup(ts.Close)
		nodes = append(nodes, &modern{t: t, url: ts.URL, tasks: true})
	}
	a, b := nodes[0], nodes[1]
	tk := a.task(a.call("tools/call", "approval", map[string]any{"name": "approval", "arguments": map[string]any{"input": "book"}}))
	if tk.Status != "input_required" {
		t.Fatalf("tools/call on a: %+v", tk)
	}
	got := b.get(tk.TaskID, "input_required")
	if r := b.call("tasks/update", tk.TaskID, map[string]any{"taskId": tk.TaskID, "inputResponses": map[string]any{got.firstKey(): map[string]any{"action": "accept", "content": map[string]any{"message": "yes"}}}}); r.Error != nil {
		t.Fatalf("tasks/update on b: %+v", r.Error)
	}
	if done := a.get(tk.TaskID, "completed"); done.Result == nil || done.Result.StructuredContent.State != swarm.StateCompleted {
		t.Fatalf("completed on a: %+v", done)
	}
	slow := a.task(a.call("tools/call", "slow", map[string]any{"name": "slow", "arguments": map[string]any{"input": "x"}}))
	if slow.Status != "working" {
		t.Fatalf("slow on a: %+v", slow)
	}
	if r := b.call("tasks/cancel", slow.TaskID, map[string]any{"taskId": slow.TaskID}); r.Error != nil {
		t.Fatalf("tasks/cancel on b: %+v", r.Error)
	}
	a.get(slow.TaskID, "cancelled")
}

// TestTasksStdio drives the Tasks extension of `swarm mcp` over real stdio
// with newline-delimited JSON-RPC, written from the specification: no
// initialize, each request with its _meta; a paused run is a task that
// tasks/update answers, and an unknown task is invalid params.
func TestTasksStdio(t *testing.T) {
	cmd := exec.Command(swarmBinary(t), "mcp")
	cmd.Dir = filepath.Join("testdata", "interop")
	cmd.Env = append(os.Environ(), "SWARM_STORE=memory:", "SWARM_MODEL=")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 0, 4<<10), 1<<20)
	id := 0
	call := func(method string, params map[string]any) rpcReply {
		t.Helper()
		id++
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{mcp.TasksExtension: map[string]any{}}},
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			var r struct {
				ID int `json:"id"`
				rpcReply
			}
			if json.Unmarshal(lines.Bytes(), &r) == nil && r.ID == id {
				return r.rpcReply
			}
		}
		t.Fatalf("%s: no answer (stderr: %s)", method, stderr.String())
		return rpcReply{}
	}
	c := &modern{t: t}
	tk := c.task(call("tools/call", map[string]any{"name": "approval", "arguments": map[string]any{"input": "book"}}))
	if tk.ResultType != "task" || tk.Status != "input_required" {
		t.Fatalf("tools/call: %+v", tk)
	}
	if r := call("tasks/update", map[string]any{"taskId": tk.TaskID, "inputResponses": map[string]any{tk.firstKey(): map[string]any{"action": "accept", "content": map[string]any{"message": "yes"}}}}); r.Error != nil {
		t.Fatalf("tasks/update: %+v", r.Error)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := c.task(call("tasks/get", map[string]any{"taskId": tk.TaskID}))
		if got.Status == "completed" {
			if got.Result == nil || string(got.Result.StructuredContent.Result) != `"booked"` {
				t.Fatalf("completed: %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task is %s", got.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := call("tasks/get", map[string]any{"taskId": "run_nope"}); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("unknown task: %+v", r.Error)
	}
}
