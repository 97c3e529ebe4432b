package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/server/temporaltest"

	"github.com/swarmrt/swarm/internal/servetest"
	"github.com/swarmrt/swarm/temporal"
)

var binary string

// TestMain builds the command once.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "swarm-temporal-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "swarm-temporal")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const script = `approval:
  - tool_calls:
      - {name: handoff_to_weather, arguments: {request: "forecast"}}
  - tool_calls:
      - {name: pause, arguments: {reason: "approve the booking?"}}
  - text: "hut booked"
weather:
  - text: "Sunny"
`

// workdir writes a swarm.yaml whose swarm runs on the Temporal server at
// address, in namespace.
func workdir(t *testing.T, address, namespace string) string {
	t.Helper()
	dir := t.TempDir()
	file := fmt.Sprintf(`version: 1
model: scripted:script.yaml
temporal:
  address: %s
  namespace: %s
  task_queue: serve-test
agents:
  weather: {description: Forecasts, instructions: Forecast.}
swarms:
  approval:
    description: Needs a human's approval
    instructions: Ask before booking {{.Input}}.
    handoffs: [weather]
`, address, namespace)
	for name, text := range map[string]string{"swarm.yaml": file, "script.yaml": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func getJSON(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if out != nil {
		_ = json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

// swarm-temporal serve serves a run whose engine is Temporal: started,
// followed, resumed over HTTP, shown by the dashboard; and it ran as a
// Temporal workflow on the server.
func TestServeTemporal(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	dir := workdir(t, ts.GetFrontendHostPort(), ts.GetDefaultNamespace())
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWARM_STORE=sqlite:"+filepath.Join(dir, "runs.db"), "SWARM_MODEL=", "NO_COLOR=1")
	s := servetest.Start(t, cmd, nil)

	var st struct {
		ID, State, Reason string
		Result            json.RawMessage
	}
	if code := getJSON(t, "POST", s.URL+"/v1/swarms/approval/runs", `{"id": "h1", "input": "a hut"}`, &st); code != 201 || st.ID != "h1" {
		t.Fatalf("start: %d %+v\n%s", code, st, s.Log())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/runs/h1/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var types []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		ev, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok {
			continue
		}
		types = append(types, ev)
		if ev == "paused" {
			if code := getJSON(t, "GET", s.URL+"/v1/runs/h1", "", &st); code != 200 || st.State != "paused" || st.Reason != "approve the booking?" {
				t.Fatalf("paused run: %d %+v", code, st)
			}
			if code := getJSON(t, "POST", s.URL+"/v1/runs/h1/resume", `{"message": "approved"}`, nil); code != 202 {
				t.Fatalf("resume: %d\n%s", code, s.Log())
			}
		}
	}
	got := strings.Join(types, " ")
	if !strings.HasPrefix(got, "started") || !strings.Contains(got, "paused resumed") || !strings.HasSuffix(got, "completed") {
		t.Fatalf("events: %s\n%s", got, s.Log())
	}
	if code := getJSON(t, "GET", s.URL+"/v1/runs/h1", "", &st); code != 200 || st.State != "completed" || string(st.Result) != `"hut booked"` {
		t.Errorf("result: %d %+v", code, st)
	}
	// The dashboard's page of the run.
	page, err := http.Get(s.URL + "/ui/runs/h1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 || !strings.Contains(string(body), "h1") || !strings.Contains(string(body), "hut booked") {
		t.Errorf("dashboard page: %d\n%.2000s", page.StatusCode, body)
	}
	// It ran on Temporal, not on Swarm's own engine: the workflow h1
	// ends (just after its journal's end is mirrored) with its result.
	if _, err := ts.GetDefaultClient().DescribeWorkflowExecution(ctx, "h1", ""); err != nil {
		t.Fatalf("the run is no Temporal workflow: %v", err)
	}
	var out temporal.RunOutput
	if err := ts.GetDefaultClient().GetWorkflow(ctx, "h1", "").Get(ctx, &out); err != nil || out.Status != "completed" || string(out.Result) != `"hut booked"` {
		t.Errorf("workflow h1: %+v, %v", out, err)
	}
	if err := s.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Exited:
		if code := s.Cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("exit %d\n%s", code, s.Log())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("no exit 30s after SIGTERM\n%s", s.Log())
	}
}
