package a2a_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
)

// An A2A message's file parts (bytes and URLs) reach the model as the
// run's attachments; a follow-up message with a file is refused.
func TestFileParts(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 20<<10)...)
	script := scripted.Script{"vision": {{ExpectParts: []scripted.ExpectPart{
		{Type: model.PartImage, MediaType: "image/png", MinBytes: len(png)},
		{Type: model.PartFile, Name: "report.pdf"},
	}, Text: "a chart and a report"}}}
	rt, _ := swarmtest.NewRuntime(t, script, swarm.Define[string, string]("vision", "looks at pictures", nil))
	h, err := a2a.NewHandler(rt, a2a.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e := &env{rt: rt, srv: srv}
	c := e.client(t, "vision", "")

	raw := sdk.NewRawPart(png)
	raw.MediaType, raw.Filename = "image/png", "chart.png"
	pdf := sdk.NewFileURLPart("https://example.com/report.pdf", "application/pdf")
	pdf.Filename = "report.pdf"
	task := send(t, c, sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("what are these?"), raw, pdf))
	if task.Status.State != sdk.TaskStateCompleted || artifactText(t, task) != "a chart and a report" {
		t.Fatalf("task = %+v", task.Status)
	}
	// The image is kept once, as a blob of the run.
	if _, err := rt.Store().(store.Blobs).Blob(swarmtest.Context(t), string(task.ID), store.BlobHash(png)); err != nil {
		t.Errorf("the image is not a blob of the run: %v", err)
	}

	// A part the run refuses is InvalidParams; a file in a follow-up
	// message is not accepted.
	bad := sdk.NewFileURLPart("file:///etc/passwd", "image/png")
	_, err = c.SendMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("x"), bad)})
	wantErr(t, err, sdk.ErrInvalidParams)
	follow := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("and this"), sdk.NewRawPart(png))
	follow.TaskID = task.ID
	_, err = c.SendMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: follow})
	wantErr(t, err, sdk.ErrUnsupportedContentType)
}

// A run's result parts (a tool's AttachOutput) become file artifacts with
// their bytes, media type and name, after the result artifact, in the task
// and in the stream.
func TestResultPartsAsArtifacts(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{9}, 40<<10)...)
	render := swarm.NewTool("render", "renders", func(ctx context.Context, _ struct{}) (string, error) {
		return "ok", swarm.AttachOutput(ctx, model.Image("image/png", png), model.File("notes.txt", "text/plain", []byte("three bars")))
	})
	step := []scripted.Step{scripted.Tools(scripted.CallTool("render", nil)), scripted.Text("drawn")}
	script := scripted.Script{"charts": append(step, step...)}
	rt, _ := swarmtest.NewRuntime(t, script, swarm.Define[string, string]("charts", "draws charts", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{render}}
	}))
	h, err := a2a.NewHandler(rt, a2a.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e := &env{rt: rt, srv: srv}
	c := e.client(t, "charts", "")
	check := func(how string, arts []*sdk.Artifact) {
		t.Helper()
		if len(arts) != 3 || arts[0].ID != a2a.ResultArtifactID || arts[0].Parts[0].Text() != "drawn" {
			t.Fatalf("%s: artifacts %+v, want the result and two parts", how, arts)
		}
		img, txt := arts[1], arts[2]
		if img.ID != sdk.ArtifactID(a2a.ResultPartArtifactID(0)) || len(img.Parts) != 1 || !bytes.Equal(img.Parts[0].Raw(), png) || img.Parts[0].MediaType != "image/png" || img.Parts[0].Filename != "image-1" {
			t.Errorf("%s: image artifact %+v", how, img)
		}
		if len(txt.Parts) != 1 || string(txt.Parts[0].Raw()) != "three bars" || txt.Parts[0].Filename != "notes.txt" || txt.Name != "notes.txt" {
			t.Errorf("%s: file artifact %+v", how, txt)
		}
	}
	task := send(t, c, sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("sales")))
	if task.Status.State != sdk.TaskStateCompleted {
		t.Fatalf("task = %+v", task.Status)
	}
	check("task", task.Artifacts)
	got, err := c.GetTask(swarmtest.Context(t), &sdk.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	check("GetTask", got.Artifacts)

	var arts []*sdk.Artifact
	for ev, err := range c.SendStreamingMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("again"))}) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := ev.(*sdk.TaskArtifactUpdateEvent); ok {
			arts = append(arts, a.Artifact)
		}
	}
	check("stream", arts)
}
