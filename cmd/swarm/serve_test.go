package main_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swarmrt/swarm/internal/servetest"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/sqlite"
)

// served is a running `swarm serve` process.
type served = servetest.Process

// serve starts `swarm serve` in dir and waits for its address.
func serve(t *testing.T, ctx context.Context, dir string, env []string, args ...string) *served {
	t.Helper()
	return serveWatched(t, ctx, dir, env, nil, args...)
}

// serveWatched is serve that also hands each line the process writes on
// stderr to onLine (if not nil), as it comes.
func serveWatched(t *testing.T, ctx context.Context, dir string, env []string, onLine func(string), args ...string) *served {
	t.Helper()
	cmd := swarmCmd(ctx, dir, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	return servetest.Start(t, cmd, onLine)
}

func httpJSON(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	return tokenJSON(t, method, url, "", body, out)
}

// tokenJSON is httpJSON with a bearer token (none if empty).
func tokenJSON(t *testing.T, method, url, token, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, url, res.StatusCode, b)
		}
	}
	return res.StatusCode
}

// TestServe drives `swarm serve` over HTTP: a run is started, followed over
// SSE through a pause, resumed over HTTP and completed; SIGTERM then ends
// the process with exit 0 and releases the lease of a run in progress.
func TestServe(t *testing.T) {
	dir := workdir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := serve(t, ctx, dir, nil)

	var health map[string]string
	if code := httpJSON(t, "GET", s.URL+"/readyz", "", &health); code != 200 {
		t.Fatalf("readyz %d", code)
	}
	var st struct {
		ID, State, Reason string
		Result            json.RawMessage
	}
	if code := httpJSON(t, "POST", s.URL+"/v1/swarms/approval/runs", `{"id": "h1", "input": "a hut"}`, &st); code != 201 || st.ID != "h1" {
		t.Fatalf("start: %d %+v", code, st)
	}
	res, err := http.Get(s.URL + "/v1/runs/h1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var types []string
	sc := bufio.NewScanner(res.Body)
	lastID := ""
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			lastID = id
		}
		ev, ok := strings.CutPrefix(line, "event: ")
		if !ok {
			continue
		}
		types = append(types, ev)
		if ev == "paused" {
			var paused struct{ State, Reason string }
			if code := httpJSON(t, "GET", s.URL+"/v1/runs/h1", "", &paused); code != 200 || paused.State != "paused" || paused.Reason != "approve the booking?" {
				t.Fatalf("paused run: %d %+v", code, paused)
			}
			if code := httpJSON(t, "POST", s.URL+"/v1/runs/h1/resume", `{"message": "approved"}`, nil); code != 202 {
				t.Fatalf("resume: %d", code)
			}
		}
	}
	got := strings.Join(types, " ")
	if !strings.HasPrefix(got, "started") || !strings.Contains(got, "paused resumed") || !strings.HasSuffix(got, "completed") {
		t.Errorf("events: %s", got)
	}
	if code := httpJSON(t, "GET", s.URL+"/v1/runs/h1", "", &st); code != 200 || st.State != "completed" || string(st.Result) != `{"plan":"hut booked"}` {
		t.Errorf("result: %d %+v", code, st)
	}
	if lastID == "" {
		t.Error("no event ids")
	}

	// A run in progress at SIGTERM is handed back, not failed.
	if code := httpJSON(t, "POST", s.URL+"/v1/swarms/trip/runs", `{"id": "t1", "input": "two people"}`, &st); code != 201 {
		t.Fatalf("start trip: %d", code)
	}
	if err := s.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exitsCleanly(t, s)
	if r := storedRun(t, dir, "t1"); r.State == store.Running && r.Owner != "" {
		t.Errorf("lease of t1 not released: owner %q", r.Owner)
	}
	// The next process finishes it.
	if out, code := run(t, dir, "recover"); code != 0 {
		t.Errorf("recover: %d %s", code, out)
	}
	if r := storedRun(t, dir, "t1"); r.State != store.Completed || string(r.Result) != `{"plan":"hike on Saturday"}` {
		t.Errorf("t1 after recover: %s %s", r.State, r.Result)
	}
}

// exitsCleanly waits (bounded) for s, sent SIGTERM, to exit 0.
func exitsCleanly(t *testing.T, s *served) {
	t.Helper()
	select {
	case <-s.Exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("swarm serve did not exit after SIGTERM: %s", s.Log())
	}
	if code := s.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d after SIGTERM: %s", code, s.Log())
	}
}

func storedRun(t *testing.T, dir, id string) store.Run {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestServeAuth: a non-loopback address needs
// tokens; with tokens, requests need them.
func TestServeAuth(t *testing.T) {
	dir := workdir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := swarmCmd(ctx, dir, "serve", "--addr", "0.0.0.0:0")
	cmd.Env = append(cmd.Env, "SWARM_TOKENS=")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "loopback") {
		t.Fatalf("open bind without tokens: exit %d %s", cmd.ProcessState.ExitCode(), out)
	}
	s := serve(t, ctx, dir, []string{"SWARM_TOKENS=ops:t0p-secret:trip"})
	if code := httpJSON(t, "GET", s.URL+"/v1/swarms", "", nil); code != 401 {
		t.Errorf("without token: %d", code)
	}
	req, _ := http.NewRequest("GET", s.URL+"/v1/swarms", nil)
	req.Header.Set("Authorization", "Bearer t0p-secret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `"trip"`) || strings.Contains(string(b), `"approval"`) {
		t.Errorf("with token: %d %s", res.StatusCode, b)
	}
	_ = s.Cmd.Process.Signal(syscall.SIGINT)
	<-s.Exited
	if strings.Contains(s.Log(), "t0p-secret") {
		t.Errorf("secret in the log: %s", s.Log())
	}
}

// TestServeResumeParts: through `swarm serve`, a resume whose parts are
// bad (bad base64, a blob the run does not hold, a media type that is not
// an image's) is refused with 400 and leaves the run paused at the same
// pause; a resume with an image goes through.
func TestServeResumeParts(t *testing.T) {
	dir := workdir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := serve(t, ctx, dir, nil)
	if code := httpJSON(t, "POST", s.URL+"/v1/swarms/approval/runs", `{"id": "h2", "input": "a hut"}`, nil); code != 201 {
		t.Fatalf("start: %d", code)
	}
	var st struct {
		State string
		Pause int64
	}
	for st.State != "paused" {
		if ctx.Err() != nil {
			t.Fatalf("the run never paused: %+v", st)
		}
		httpJSON(t, "GET", s.URL+"/v1/runs/h2", "", &st)
		time.Sleep(20 * time.Millisecond)
	}
	pause := st.Pause
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n a photo of the hut"))
	for name, body := range map[string]string{
		"bad base64":     `{"message": "look", "parts": [{"type": "image", "media_type": "image/png", "data": "not base64!"}]}`,
		"unknown blob":   `{"message": "look", "parts": [{"type": "image", "media_type": "image/png", "blob": "` + strings.Repeat("ab", 32) + `", "size": 9000}]}`,
		"not an image's": `{"message": "look", "parts": [{"type": "image", "media_type": "text/html", "data": "` + png + `"}]}`,
	} {
		if code := httpJSON(t, "POST", s.URL+"/v1/runs/h2/resume", body, nil); code != 400 {
			t.Errorf("%s: %d, want 400", name, code)
		}
		if httpJSON(t, "GET", s.URL+"/v1/runs/h2", "", &st); st.State != "paused" || st.Pause != pause {
			t.Fatalf("%s: the run is %+v, want it paused at %d still", name, st, pause)
		}
	}
	body := `{"message": "approved", "parts": [{"type": "image", "media_type": "image/png", "data": "` + png + `"}]}`
	if code := httpJSON(t, "POST", s.URL+"/v1/runs/h2/resume", body, nil); code != 202 {
		t.Fatalf("resume with an image: %d", code)
	}
	for st.State != "completed" {
		if ctx.Err() != nil {
			t.Fatalf("the run did not complete: %+v", st)
		}
		httpJSON(t, "GET", s.URL+"/v1/runs/h2", "", &st)
		time.Sleep(20 * time.Millisecond)
	}
}
