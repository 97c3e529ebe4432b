package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// Typed is the input of the "typed" swarm: a number is required.
type Typed struct {
	N int `json:"n"`
}

func blobTool() swarm.Tool {
	return swarm.NewTool("blob", "returns a large text", func(ctx context.Context, in struct{}) (string, error) {
		return strings.Repeat("x", 256<<10), nil
	})
}

func testSwarms() []swarm.Definition {
	text := func(id string) *swarm.Swarm[string, string] {
		return swarm.Define[string, string](id, "the "+id+" swarm", nil)
	}
	return []swarm.Definition{
		text("echo").WithTags("demo"),
		text("approval"),
		text("slow"),
		text("failing"),
		swarm.Define[string, string]("big", "many large tool results", func(string) swarm.Spec {
			return swarm.Spec{Tools: []swarm.Tool{blobTool()}}
		}),
		swarm.Define[Typed, string]("typed", "takes a number", nil),
	}
}

func testScript() scripted.Script {
	var blobs []scripted.ToolCall
	for range 40 {
		blobs = append(blobs, scripted.CallTool("blob", nil))
	}
	return scripted.Script{
		"echo": {scripted.Text("done")},
		"approval": {
			scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "approve?", "context": "a hut"})),
			scripted.Text("approved"),
		},
		"slow":    {{Text: "late", Delay: time.Minute}},
		"failing": {scripted.Tools(scripted.CallTool("fail", map[string]any{"reason": "cannot do it"}))},
		"big":     {scripted.Tools(blobs...), scripted.Text("done")},
		"typed":   {scripted.Text("ok")},
	}
}

// newTest starts a server on a runtime with the test swarms.
func newTest(t *testing.T, opts Options) (*httptest.Server, *Server, *swarm.Runtime) {
	t.Helper()
	rt, _ := swarmtest.NewRuntime(t, testScript(), testSwarms()...)
	ts, srv := serveRuntime(t, rt, opts)
	return ts, srv, rt
}

// serveRuntime serves rt until the test ends.
func serveRuntime(t *testing.T, rt *swarm.Runtime, opts Options) (*httptest.Server, *Server) {
	t.Helper()
	srv, err := New(rt, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.CloseStreams()
		ts.Close()
	})
	return ts, srv
}

type client struct {
	t     *testing.T
	base  string
	token string
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errorCode returns the code of an error body ("" if it is not one).
func (r response) errorCode() string {
	var e errorBody
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Code
}

func (c client) do(method, path, contentType, body string) response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(swarmtest.Context(c.t), method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func (c client) get(path string) response { return c.do("GET", path, "", "") }

func (c client) post(path, body string) response {
	return c.do("POST", path, "application/json", body)
}

// start starts a run and returns its status.
func (c client) start(swarmID, body string) RunStatus {
	c.t.Helper()
	res := c.post("/v1/swarms/"+swarmID+"/runs", body)
	if res.status != http.StatusCreated {
		c.t.Fatalf("start %s: %d %s", swarmID, res.status, res.body)
	}
	var st RunStatus
	res.decode(c.t, &st)
	return st
}

// wait long-polls a run until it is no longer running.
func (c client) wait(id string) (int, RunStatus) {
	c.t.Helper()
	deadline := time.Now().Add(swarmtest.Timeout)
	for {
		res := c.get("/v1/runs/" + id + "?wait=10s")
		var st RunStatus
		res.decode(c.t, &st)
		if st.State != swarm.StateRunning {
			return res.status, st
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("run %s still running after %s", id, swarmtest.Timeout)
		}
	}
}

// runCount returns the number of runs the client can list.
func (c client) runCount() int {
	c.t.Helper()
	var list RunList
	c.get("/v1/runs?limit=500").decode(c.t, &list)
	return len(list.Runs)
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	id, event, data string
	comment         bool
}

// readEvents parses an SSE stream until it ends or f returns false.
func readEvents(r io.Reader, f func(sseEvent) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var ev sseEvent
	seen := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if seen && !f(ev) {
				return nil
			}
			ev, seen = sseEvent{}, false
			continue
		case strings.HasPrefix(line, ":"):
			ev.comment = true
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
		seen = true
	}
	return sc.Err()
}

// baseline returns the goroutine count once idle client connections (and
// their server sides) are gone.
func baseline() int {
	http.DefaultClient.CloseIdleConnections()
	n := runtime.NumGoroutine()
	for range 50 {
		time.Sleep(10 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}

// goroutinesBack waits until the goroutine count is at most base.
func goroutinesBack(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		http.DefaultClient.CloseIdleConnections()
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, want at most %d:\n%s", n, base, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
