package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/internal/servetest"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
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

// TestResultMediaTypeScript calls a swarm tool with the official
// TypeScript client: the PNG and the PDF the swarm's tool attached to the
// run's result arrive as image content and an embedded resource.
func TestResultMediaTypeScript(t *testing.T) {
	needNodeModules(t)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{3}, 30<<10)...)
	pdf := []byte("%PDF-1.7 a report")
	render := swarm.NewTool("render", "renders", func(ctx context.Context, _ struct{}) (string, error) {
		return "ok", swarm.AttachOutput(ctx, model.Image("image/png", png), model.File("q3.pdf", "application/pdf", pdf))
	})
	def := swarm.Define[string, string]("charts", "Draws charts", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{render}}
	})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"charts": {
		scripted.Tools(scripted.CallTool("render", nil)), scripted.Text("drawn"),
	}}, def)
	srv := httptest.NewServer(mcp.NewHTTPHandler(rt, mcp.Options{}))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "tasks.mjs", srv.URL, "media")
	cmd.Dir = interopDir
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tasks.mjs media: %v\n%s\n%s", err, out, stderr.String())
	}
	var r struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type, Text, MimeType, Head string
			Bytes                      int
		} `json:"content"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("tasks.mjs media: output is not JSON: %v\n%s", err, out)
	}
	c := r.Content
	if r.IsError || len(c) != 3 || c[0].Type != "text" || c[0].Text != "drawn" ||
		c[1].Type != "image" || c[1].MimeType != "image/png" || c[1].Bytes != len(png) || c[1].Head != "89504e47" ||
		c[2].Type != "resource" || c[2].MimeType != "application/pdf" || c[2].Bytes != len(pdf) {
		t.Fatalf("content: %s", out)
	}
}
