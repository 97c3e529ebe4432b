package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/swarmtest"
)

// TestOpenAPIMatchesRoutes holds the served document to the mux: every
// route is documented and every documented operation is served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		if _, mount := ops["x-swarm-mount"]; mount {
			continue // served by a front end that swarm serve mounts; cmd/swarm's tests hold these to the mounts
		}
		for m := range ops {
			if m == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(m)+" "+path)
		}
	}
	for _, r := range routes {
		// OpenAPI has no "rest of the path" parameter: {key...} is {key}.
		served = append(served, r.method+" "+strings.ReplaceAll(r.path, "...}", "}"))
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("documented operations:\n%s\nserved routes:\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
	// The document is what the server serves.
	ts, _, _ := newTest(t, Options{})
	res := client{t: t, base: ts.URL}.get("/openapi.json")
	if res.status != 200 || !bytes.Equal(res.body, openAPI) || res.header.Get("Content-Type") != "application/json" {
		t.Errorf("GET /openapi.json: %d %s", res.status, res.header.Get("Content-Type"))
	}
}

func TestStartAndGetResult(t *testing.T) {
	ts, _, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	res := c.post("/v1/swarms/echo/runs", `{"input": "hello"}`)
	if res.status != http.StatusCreated {
		t.Fatalf("start: %d %s", res.status, res.body)
	}
	var st RunStatus
	res.decode(t, &st)
	if st.ID == "" || st.Swarm != "echo" || res.header.Get("Location") != "/v1/runs/"+st.ID {
		t.Fatalf("start: %+v, Location %q", st, res.header.Get("Location"))
	}
	code, st := c.wait(st.ID)
	if code != http.StatusOK || st.State != swarm.StateCompleted || string(st.Result) != `"done"` || st.Usage.Calls != 1 || st.Turn != 1 {
		t.Errorf("completed run: %d %+v", code, st)
	}
	if st.CreatedAt.IsZero() || st.UpdatedAt.IsZero() || st.Agent != "echo" || st.LastSeq == 0 {
		t.Errorf("status fields: %+v", st)
	}
}

func TestIdempotentStart(t *testing.T) {
	ts, _, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	body := `{"id": "order-42", "input": "hello", "values": {"user": "ann"}}`
	first := c.post("/v1/swarms/echo/runs", body)
	if first.status != http.StatusCreated {
		t.Fatalf("first start: %d %s", first.status, first.body)
	}
	// Same request, other spacing and key order: the same run.
	again := c.post("/v1/swarms/echo/runs", `{"values":{"user":"ann"},"input":"hello","id":"order-42"}`)
	var a, b RunStatus
	first.decode(t, &a)
	again.decode(t, &b)
	if again.status != http.StatusOK || a.ID != "order-42" || b.ID != "order-42" {
		t.Fatalf("repeat: %d %s", again.status, again.body)
	}
	for _, tc := range []struct{ name, swarm, body string }{
		{"other input", "echo", `{"id": "order-42", "input": "bye", "values": {"user": "ann"}}`},
		{"other values", "echo", `{"id": "order-42", "input": "hello"}`},
		{"other swarm", "approval", `{"id": "order-42", "input": "hello", "values": {"user": "ann"}}`},
	} {
		res := c.post("/v1/swarms/"+tc.swarm+"/runs", tc.body)
		if res.status != http.StatusConflict || res.errorCode() != "conflict" {
			t.Errorf("%s: %d %s", tc.name, res.status, res.body)
		}
	}
	if n := c.runCount(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}

func TestPauseResume(t *testing.T) {
	ts, _, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	st := c.start("approval", `{"input": "book it"}`)
	code, st := c.wait(st.ID)
	if code != http.StatusOK || st.State != swarm.StatePaused || st.Reason != "approve?" || st.Context != "a hut" {
		t.Fatalf("paused: %d %+v", code, st)
	}
	if res := c.post("/v1/runs/"+st.ID+"/resume", `{"message": "yes"}`); res.status != http.StatusAccepted {
		t.Fatalf("resume: %d %s", res.status, res.body)
	}
	code, st = c.wait(st.ID)
	if code != http.StatusOK || st.State != swarm.StateCompleted || string(st.Result) != `"approved"` {
		t.Fatalf("after resume: %d %+v", code, st)
	}
	// Invalid transitions.
	if res := c.post("/v1/runs/"+st.ID+"/resume", `{"message": "again"}`); res.status != http.StatusConflict || res.errorCode() != "invalid_state" {
		t.Errorf("resume completed run: %d %s", res.status, res.body)
	}
	if res := c.post("/v1/runs/"+st.ID+"/stop", `{"reason": "late"}`); res.status != http.StatusConflict || res.errorCode() != "invalid_state" {
		t.Errorf("stop completed run: %d %s", res.status, res.body)
	}
}

func TestStopAndStates(t *testing.T) {
	ts, _, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	slow := c.start("slow", `{"input": "x"}`)
	res := c.get("/v1/runs/" + slow.ID)
	var st RunStatus
	res.decode(t, &st)
	if res.status != http.StatusAccepted || st.State != swarm.StateRunning {
		t.Fatalf("running run: %d %s", res.status, res.body)
	}
	// A bounded long poll on a running run answers 202 with its status.
	if res := c.get("/v1/runs/" + slow.ID + "?wait=50ms"); res.status != http.StatusAccepted {
		t.Errorf("long poll timeout: %d %s", res.status, res.body)
	}
	if res := c.post("/v1/runs/"+slow.ID+"/resume", `{}`); res.status != http.StatusConflict {
		t.Errorf("resume running run: %d %s", res.status, res.body)
	}
	if res := c.do("POST", "/v1/runs/"+slow.ID+"/stop", "", ""); res.status != http.StatusAccepted {
		t.Fatalf("stop without body: %d %s", res.status, res.body)
	}
	code, st := c.wait(slow.ID)
	if code != http.StatusOK || st.State != swarm.StateStopped {
		t.Errorf("stopped: %d %+v", code, st)
	}
	failing := c.start("failing", `{"input": "x"}`)
	code, st = c.wait(failing.ID)
	if code != http.StatusOK || st.State != swarm.StateFailed || st.Reason != "cannot do it" || st.Error == nil || st.Error.Code != "run_failed" {
		t.Errorf("failed: %d %+v", code, st)
	}
	paused := c.start("approval", `{"input": "x"}`)
	c.wait(paused.ID)
	if res := c.post("/v1/runs/"+paused.ID+"/stop", `{"reason": "no"}`); res.status != http.StatusAccepted {
		t.Fatalf("stop paused: %d %s", res.status, res.body)
	}
	if code, st := c.wait(paused.ID); code != 200 || st.State != swarm.StateStopped || st.Reason != "no" {
		t.Errorf("stopped paused: %d %+v", code, st)
	}
}

func TestBadInput(t *testing.T) {
	ts, _, _ := newTest(t, Options{MaxBodyBytes: 1024})
	c := client{t: t, base: ts.URL}
	done := c.start("echo", `{"input": "x"}`)
	c.wait(done.ID)
	big := `{"input": "` + strings.Repeat("a", 2000) + `"}`
	for _, tc := range []struct {
		name, method, path, ctype, body string
		status                          int
		code                            string
	}{
		{"malformed JSON", "POST", "/v1/swarms/echo/runs", "application/json", `{"input": `, 400, "bad_request"},
		{"not an object", "POST", "/v1/swarms/echo/runs", "application/json", `[1]`, 400, "bad_request"},
		{"trailing data", "POST", "/v1/swarms/echo/runs", "application/json", `{"input": "x"} {}`, 400, "bad_request"},
		{"unknown field", "POST", "/v1/swarms/echo/runs", "application/json", `{"inputs": "x"}`, 400, "bad_request"},
		{"empty body", "POST", "/v1/swarms/echo/runs", "application/json", ``, 400, "bad_request"},
		{"input of the wrong type", "POST", "/v1/swarms/echo/runs", "application/json", `{"input": 3}`, 400, "invalid_input"},
		{"input not matching schema", "POST", "/v1/swarms/typed/runs", "application/json", `{"input": {"n": "three"}}`, 400, "invalid_input"},
		{"input missing a field", "POST", "/v1/swarms/typed/runs", "application/json", `{"input": {}}`, 400, "invalid_input"},
		{"text input missing", "POST", "/v1/swarms/echo/runs", "application/json", `{}`, 400, "invalid_input"},
		{"text input null", "POST", "/v1/swarms/echo/runs", "application/json", `{"input": null}`, 400, "invalid_input"},
		{"id with spaces", "POST", "/v1/swarms/echo/runs", "application/json", `{"input": "x", "id": "a b"}`, 400, "bad_request"},
		{"id too long", "POST", "/v1/swarms/echo/runs", "application/json", `{"input": "x", "id": "` + strings.Repeat("i", 201) + `"}`, 400, "bad_request"},
		{"oversized body", "POST", "/v1/swarms/echo/runs", "application/json", big, 413, "body_too_large"},
		{"wrong content type", "POST", "/v1/swarms/echo/runs", "text/plain", `{"input": "x"}`, 415, "unsupported_media_type"},
		{"missing content type", "POST", "/v1/swarms/echo/runs", "", `{"input": "x"}`, 415, "unsupported_media_type"},
		{"unknown swarm", "POST", "/v1/swarms/nope/runs", "application/json", `{"input": "x"}`, 404, "unknown_swarm"},
		{"unknown swarm info", "GET", "/v1/swarms/nope", "", ``, 404, "unknown_swarm"},
		{"unknown run", "GET", "/v1/runs/nope", "", ``, 404, "not_found"},
		{"unknown run resume", "POST", "/v1/runs/nope/resume", "application/json", `{"message": "x"}`, 404, "not_found"},
		{"unknown run stop", "POST", "/v1/runs/nope/stop", "application/json", `{}`, 404, "not_found"},
		{"unknown run events", "GET", "/v1/runs/nope/events", "", ``, 404, "not_found"},
		{"malformed resume", "POST", "/v1/runs/" + done.ID + "/resume", "application/json", `{"message": 3}`, 400, "bad_request"},
		{"bad wait", "GET", "/v1/runs/" + done.ID + "?wait=forever", "", ``, 400, "bad_request"},
		{"bad Last-Event-ID", "GET", "/v1/runs/" + done.ID + "/events?after=x", "", ``, 400, "bad_request"},
		{"bad state", "GET", "/v1/runs?state=sleeping", "", ``, 400, "bad_request"},
		{"bad limit", "GET", "/v1/runs?limit=0", "", ``, 400, "bad_request"},
		{"bad cursor", "GET", "/v1/runs?cursor=xyz", "", ``, 400, "bad_request"},
		{"wrong method", "PUT", "/v1/runs/" + done.ID, "", ``, 405, "method_not_allowed"},
		{"wrong method on start", "GET", "/v1/swarms/echo/runs", "", ``, 405, "method_not_allowed"},
		{"unknown endpoint", "GET", "/v2/everything", "", ``, 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := c.do(tc.method, tc.path, tc.ctype, tc.body)
			if res.status != tc.status || res.errorCode() != tc.code {
				t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, res.status, res.body, tc.status, tc.code)
			}
			if ct := res.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			if tc.code == "not_found" && strings.HasPrefix(tc.path, "/v1/runs/nope") && !strings.Contains(string(res.body), `"no run \"nope\""`) {
				t.Errorf("not found without a plain message: %s", res.body)
			}
		})
	}
	if res := c.do("PUT", "/v1/runs/x", "", ""); res.header.Get("Allow") == "" {
		t.Errorf("405 without Allow header")
	}
	if n := c.runCount(); n != 1 {
		t.Errorf("%d runs after bad requests, want 1", n)
	}
}

func TestSwarms(t *testing.T) {
	ts, _, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	var list SwarmList
	c.get("/v1/swarms").decode(t, &list)
	var ids []string
	for _, s := range list.Swarms {
		ids = append(ids, s.ID)
	}
	if want := []string{"approval", "big", "echo", "failing", "slow", "typed"}; !slices.Equal(ids, want) {
		t.Errorf("swarms %v, want %v", ids, want)
	}
	var echo SwarmInfo
	res := c.get("/v1/swarms/echo")
	res.decode(t, &echo)
	if res.status != 200 || echo.Description != "the echo swarm" || !slices.Equal(echo.Tags, []string{"demo"}) ||
		string(echo.InputSchema) != `{"type":"string"}` || string(echo.ResultSchema) != `{"type":"string"}` {
		t.Errorf("echo: %d %s", res.status, res.body)
	}
	var typed SwarmInfo
	c.get("/v1/swarms/typed").decode(t, &typed)
	if !strings.Contains(string(typed.InputSchema), `"n"`) {
		t.Errorf("typed input schema %s", typed.InputSchema)
	}
}

func TestListRuns(t *testing.T) {
	ts, _, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	var started []string
	for i := range 10 {
		sw := "echo"
		if i%3 == 0 {
			sw = "approval"
		}
		st := c.start(sw, fmt.Sprintf(`{"input": "%d"}`, i))
		c.wait(st.ID)
		started = append(started, st.ID)
	}
	slices.Reverse(started) // newest first
	pages := func(query string, limit int, between func(last string)) []string {
		var ids []string
		cursor := ""
		for {
			res := c.get(fmt.Sprintf("/v1/runs?limit=%d%s&cursor=%s", limit, query, cursor))
			var page RunList
			res.decode(t, &page)
			if res.status != 200 || len(page.Runs) > limit {
				t.Fatalf("page: %d %s", res.status, res.body)
			}
			for _, r := range page.Runs {
				ids = append(ids, r.ID)
			}
			if page.NextCursor == "" {
				return ids
			}
			cursor = page.NextCursor
			if between != nil {
				between(ids[len(ids)-1])
			}
		}
	}
	if got := pages("", 3, nil); !slices.Equal(got, started) {
		t.Errorf("pages:\n got %v\nwant %v", got, started)
	}
	// Runs started between pages do not shift the pages.
	var late []string
	got := pages("", 4, func(string) { late = append(late, c.start("echo", `{"input": "late"}`).ID) })
	if !slices.Equal(got, started) {
		t.Errorf("pages with new runs between them:\n got %v\nwant %v", got, started)
	}
	var paused []string
	for i, id := range started {
		if (9-i)%3 == 0 {
			paused = append(paused, id)
		}
	}
	if got := pages("&swarm=approval", 2, nil); !slices.Equal(got, paused) {
		t.Errorf("approval runs %v, want %v", got, paused)
	}
	// Paused runs that leave the state filter between pages: the last run
	// of a page (the cursor's) and one before it.
	got = pages("&state=paused", 1, func(last string) {
		c.post("/v1/runs/"+last+"/stop", `{}`)
		if last == paused[1] {
			c.post("/v1/runs/"+paused[0]+"/stop", `{}`)
		}
	})
	if !slices.Equal(got, paused) {
		t.Errorf("paused runs %v, want %v", got, paused)
	}
	// A cursor is bound to its filters.
	res := c.get("/v1/runs?limit=1")
	var page RunList
	res.decode(t, &page)
	if res := c.get("/v1/runs?limit=1&swarm=echo&cursor=" + page.NextCursor); res.status != 400 {
		t.Errorf("cursor with other filters: %d", res.status)
	}
	if res := c.get("/v1/runs?limit=100000"); res.status != 200 {
		t.Errorf("large limit: %d", res.status)
	}
}

func TestReadyAndHealth(t *testing.T) {
	ts, _, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	if res := c.get("/healthz"); res.status != 200 {
		t.Errorf("healthz %d", res.status)
	}
	if res := c.get("/readyz"); res.status != 200 {
		t.Errorf("readyz %d", res.status)
	}
	down, _, _ := newTest(t, Options{Ready: func(context.Context) error { return errors.New("store unreachable") }})
	if res := (client{t: t, base: down.URL}).get("/readyz"); res.status != 503 || res.errorCode() != "not_ready" {
		t.Errorf("readyz when down: %d %s", res.status, res.body)
	}
}

func TestAuth(t *testing.T) {
	a := echoAndAdmin(t)
	var logs bytes.Buffer
	mount := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "principal %s", auth.FromContext(r.Context()).Name)
	})
	ts, _, _ := newTest(t, Options{
		Auth:   a,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Mounts: []Mount{
			{Pattern: "/ext/", Handler: mount},
			{Pattern: "GET /card", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "card") }), Public: true},
		},
	})
	anon := client{t: t, base: ts.URL}
	wrong := client{t: t, base: ts.URL, token: "nope"}
	echoOnly := client{t: t, base: ts.URL, token: "s-echo"}
	admin := client{t: t, base: ts.URL, token: "s-admin"}

	for _, path := range []string{"/healthz", "/readyz", "/openapi.json", "/card"} {
		if res := anon.get(path); res.status != 200 {
			t.Errorf("public %s: %d", path, res.status)
		}
	}
	for _, cl := range []client{anon, wrong} {
		for _, path := range []string{"/v1/swarms", "/v1/runs", "/v1/runs/x", "/v1/runs/x/events", "/ext/a"} {
			if res := cl.get(path); res.status != 401 || res.errorCode() != "unauthenticated" || res.header.Get("WWW-Authenticate") == "" {
				t.Errorf("token %q GET %s: %d %s", cl.token, path, res.status, res.body)
			}
		}
		if res := cl.post("/v1/swarms/echo/runs", `{"input": "x"}`); res.status != 401 {
			t.Errorf("token %q start: %d", cl.token, res.status)
		}
	}
	if res := admin.get("/ext/a"); res.status != 200 || string(res.body) != "principal admin" {
		t.Errorf("mount: %d %s", res.status, res.body)
	}

	mine := echoOnly.start("echo", `{"input": "x"}`)
	theirs := admin.start("approval", `{"input": "x"}`)
	admin.wait(theirs.ID)
	echoOnly.wait(mine.ID)
	if res := echoOnly.post("/v1/swarms/approval/runs", `{"input": "x"}`); res.status != 403 || res.errorCode() != "forbidden" {
		t.Errorf("start other swarm: %d %s", res.status, res.body)
	}
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/v1/runs/" + theirs.ID, ""},
		{"GET", "/v1/runs/" + theirs.ID + "/events", ""},
		{"GET", "/v1/runs/" + theirs.ID + "/requests/t1/model", ""},
		{"POST", "/v1/runs/" + theirs.ID + "/resume", `{"message": "x"}`},
		{"POST", "/v1/runs/" + theirs.ID + "/stop", `{}`},
		{"GET", "/v1/swarms/approval", ""},
		{"GET", "/v1/runs?swarm=approval", ""},
	} {
		ct := ""
		if req.body != "" {
			ct = "application/json"
		}
		if res := echoOnly.do(req.method, req.path, ct, req.body); res.status != 403 || res.errorCode() != "forbidden" ||
			res.header.Get("WWW-Authenticate") != `Bearer error="insufficient_scope"` {
			t.Errorf("%s %s with another swarm's token: %d %q %s", req.method, req.path, res.status, res.header.Get("WWW-Authenticate"), res.body)
		}
	}
	// The refused resume changed nothing.
	if res := admin.get("/v1/runs/" + theirs.ID); !strings.Contains(string(res.body), `"paused"`) {
		t.Errorf("run after refused resume: %s", res.body)
	}
	var swarms SwarmList
	echoOnly.get("/v1/swarms").decode(t, &swarms)
	if len(swarms.Swarms) != 1 || swarms.Swarms[0].ID != "echo" {
		t.Errorf("echo-only token sees swarms %+v", swarms.Swarms)
	}
	var runs RunList
	echoOnly.get("/v1/runs?limit=1").decode(t, &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].ID != mine.ID || runs.NextCursor != "" {
		t.Errorf("echo-only token lists %+v", runs)
	}
	admin.get("/v1/runs").decode(t, &runs)
	if len(runs.Runs) != 2 {
		t.Errorf("admin lists %d runs", len(runs.Runs))
	}
	if res := echoOnly.get("/v1/runs/" + mine.ID); res.status != 200 {
		t.Errorf("own run: %d", res.status)
	}
	if strings.Contains(logs.String(), "s-echo") || strings.Contains(logs.String(), "s-admin") || strings.Contains(logs.String(), "Bearer") {
		t.Errorf("a secret reached the log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "status=403") {
		t.Errorf("requests not logged:\n%s", logs.String())
	}
}

func TestPanicRecovered(t *testing.T) {
	var logs bytes.Buffer
	ts, _, _ := newTest(t, Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Mounts: []Mount{{Pattern: "/boom", Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })}},
	})
	c := client{t: t, base: ts.URL}
	if res := c.get("/boom"); res.status != 500 || res.errorCode() != "internal" {
		t.Errorf("panic: %d %s", res.status, res.body)
	}
	if res := c.get("/healthz"); res.status != 200 {
		t.Errorf("after panic: %d", res.status)
	}
	if !strings.Contains(logs.String(), "panic") {
		t.Errorf("panic not logged: %s", logs.String())
	}
}

func TestMountConflict(t *testing.T) {
	rt, err := swarm.New(swarm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := New(rt, Options{Mounts: []Mount{{Pattern: "GET /v1/runs", Handler: http.NotFoundHandler()}}}); err == nil {
		t.Error("a mount on an API route was accepted")
	}
	if _, err := New(rt, Options{Mounts: []Mount{{Pattern: "/x"}}}); err == nil {
		t.Error("a mount without handler was accepted")
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("nil runtime accepted")
	}
}

// TestConcurrentIdenticalStarts: of 200 concurrent identical starts with one
// run id, exactly one is answered 201 Created and the others 200 OK.
// The store is SQLite, whose inserts take long enough for a check made
// before the insert to race.
func TestConcurrentIdenticalStarts(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(testScript()), PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(); st.Close() })
	if err := rt.Register(testSwarms()...); err != nil {
		t.Fatal(err)
	}
	ts, _ := serveRuntime(t, rt, Options{})
	const n = 200
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Open the n connections first, so that the starts arrive together.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer hc.CloseIdleConnections()
	concurrently := func(do func(i int) error) []error {
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = do(i)
			}()
		}
		close(start)
		wg.Wait()
		return errs
	}
	codes := make([]int, n)
	request := func(i int, method, path, body string) error {
		req, err := http.NewRequestWithContext(ctx, method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		codes[i] = res.StatusCode
		return nil
	}
	// Several rounds, each with a new id: a check-then-act race shows
	// in some of them.
	for round := range 5 {
		id := fmt.Sprintf("same-%d", round)
		concurrently(func(i int) error { return request(i, "GET", "/healthz", "") })
		errs := concurrently(func(i int) error {
			return request(i, "POST", "/v1/swarms/echo/runs", `{"id": "`+id+`", "input": "hi"}`)
		})
		count := map[int]int{}
		for i, code := range codes {
			if errs[i] != nil {
				t.Fatalf("start %d: %v", i, errs[i])
			}
			count[code]++
		}
		if count[http.StatusCreated] != 1 || count[http.StatusOK] != n-1 {
			t.Fatalf("run %s: statuses %v, want one 201 and %d 200", id, count, n-1)
		}
	}
}

// TestSlowBodyDisconnected: a client that trickles its request body is
// disconnected once the body timeout passes, while a response that streams
// after its body was read outlives the timeout.
func TestSlowBodyDisconnected(t *testing.T) {
	const timeout = 300 * time.Millisecond
	streamed := make(chan error, 1)
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			streamed <- err
			return
		}
		rc := http.NewResponseController(w)
		for i := range 6 { // 3 body timeouts
			fmt.Fprintf(w, "data: %d\n\n", i)
			if err := rc.Flush(); err != nil {
				streamed <- err
				return
			}
			select {
			case <-time.After(timeout / 2):
			case <-r.Context().Done():
				streamed <- fmt.Errorf("request cancelled while streaming: %w", context.Cause(r.Context()))
				return
			}
		}
		streamed <- nil
	})
	rt, _ := swarmtest.NewRuntime(t, testScript(), testSwarms()...)
	ts, _ := serveRuntime(t, rt, Options{BodyTimeout: timeout, Mounts: []Mount{{Pattern: "POST /stream", Handler: stream}}})

	// A trickled body: one byte every 50ms of 1000.
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST /v1/swarms/echo/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range 999 {
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(conn) // until the server closes the connection
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept a trickling client for 10s (read %q)", b)
	}
	if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 4") {
		t.Errorf("answer to a trickled body: %q", b)
	}

	// A streamed response after a prompt body is not cut by the timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/stream", strings.NewReader(`{"a": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || !strings.Contains(string(body), "data: 5") {
		t.Fatalf("stream: %q %v", body, err)
	}
	if err := <-streamed; err != nil {
		t.Fatal(err)
	}
}
