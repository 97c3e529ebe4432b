package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/internal/servetest"
	"github.com/swarmrt/swarm/mcp"
)

// jsTasks is what interop/mcp/tasks.mjs prints.
type jsTasks struct {
	Kind              string          `json:"kind"`
	TaskID            string          `json:"taskId"`
	Status            string          `json:"status"`
	Elicited          []string        `json:"elicited"`
	IsError           bool            `json:"isError"`
	StructuredContent mcp.Outcome     `json:"structuredContent"`
	Reference         json.RawMessage `json:"reference"`
	Error             string          `json:"error"`
}

func runTasksJS(t *testing.T, url string, args ...string) jsTasks {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"tasks.mjs", url}, args...)...)
	cmd.Dir = interopDir
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tasks.mjs %v: %v\n%s\n%s", args, err, out, stderr.String())
	}
	var r jsTasks
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("tasks.mjs %v: output is not JSON: %v\n%s", args, err, out)
	}
	return r
}

// TestTasksTypeScript drives the Tasks extension of a real `swarm serve`
// with the official TypeScript client and tasks package: a paused run is
// a task whose pause the client answers as an elicitation; a cancelled
// task's run stops; a task started before the server restarts is resumed
// from its serialized reference by another client process afterwards.
func TestTasksTypeScript(t *testing.T) {
	needNodeModules(t)
	dir, _ := filepath.Abs(filepath.Join("testdata", "interop"))
	env := []string{"SWARM_STORE=sqlite:" + filepath.Join(t.TempDir(), "runs.db")}
	first := servetest.Serve(t, dir, env)
	url := first.URL + "/mcp"

	r := runTasksJS(t, url, "answer")
	if r.Kind != "task" || r.Status != "completed" || r.IsError || r.StructuredContent.State != swarm.StateCompleted ||
		string(r.StructuredContent.Result) != `"booked"` || len(r.Elicited) != 1 || !strings.Contains(r.Elicited[0], "approve the booking?") {
		t.Fatalf("answer: %+v", r)
	}

	r = runTasksJS(t, url, "cancel")
	if r.Kind != "task" || r.Status != "cancelled" {
		t.Fatalf("cancel: %+v", r)
	}

	started := runTasksJS(t, url, "start")
	if started.Kind != "task" || !strings.Contains(string(started.Reference), `"taskId"`) {
		t.Fatalf("start: %+v", started)
	}
	_ = first.Cmd.Process.Kill()
	<-first.Exited
	second := servetest.Serve(t, dir, env)
	r = runTasksJS(t, second.URL+"/mcp", "finish", string(started.Reference))
	if r.Status != "completed" || string(r.StructuredContent.Result) != `"booked"` || !slices.ContainsFunc(r.Elicited, func(s string) bool { return strings.Contains(s, "approve") }) {
		t.Fatalf("finish after restart: %+v", r)
	}
}
