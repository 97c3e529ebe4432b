package a2a_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
)

// serveOne serves swarm def alone on script and connects a client to it.
func serveOne(t *testing.T, script scripted.Script, def swarm.Definition) (*swarm.Runtime, *a2aclient.Client) {
	t.Helper()
	rt, _ := swarmtest.NewRuntime(t, script, def)
	h, err := a2a.NewHandler(rt, a2a.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e := &env{rt: rt, srv: srv}
	return rt, e.client(t, def.ID(), "")
}

// An A2A message's file parts (bytes and URLs) reach the model as the
// run's attachments.
func TestFileParts(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 20<<10)...)
	script := scripted.Script{"vision": {{ExpectParts: []scripted.ExpectPart{
		{Type: model.PartImage, MediaType: "image/png", MinBytes: len(png)},
		{Type: model.PartFile, Name: "report.pdf"},
	}, Text: "a chart and a report"}}}
	rt, c := serveOne(t, script, swarm.Define[string, string]("vision", "looks at pictures", nil))

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

	// A part the run refuses is InvalidParams.
	bad := sdk.NewFileURLPart("file:///etc/passwd", "image/png")
	_, err := c.SendMessage(swarmtest.Context(t), &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("x"), bad)})
	wantErr(t, err, sdk.ErrInvalidParams)
}

// A follow-up message to an input-required task carries files: they reach
// the model of the resumed run with the answer, kept once as a blob and
// journaled by reference. A file the run refuses is InvalidParams, as in
// a first message, and leaves the task waiting with nothing stored.
func TestFollowUpFileParts(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{5}, 20<<10)...)
	script := scripted.Script{"support": {
		scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "send me a screenshot"})),
		{ExpectParts: []scripted.ExpectPart{
			{Type: model.PartImage, MediaType: "image/png", MinBytes: len(png)},
			{Type: model.PartFile, Name: "log.txt"},
		}, Text: "the screenshot shows the error"},
	}}
	rt, c := serveOne(t, script, swarm.Define[string, string]("support", "helps with errors", nil))
	ctx := swarmtest.Context(t)

	task := send(t, c, text("my app crashes"))
	if task.Status.State != sdk.TaskStateInputRequired {
		t.Fatalf("task = %+v", task.Status)
	}
	was := swarmtest.AssertState(t, rt, string(task.ID), swarm.StatePaused)

	// Refused files: InvalidParams, the task still waits, nothing stored.
	other := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{6}, 8<<10)...)
	badType := sdk.NewRawPart(other)
	badType.MediaType = "image/"
	asImage := sdk.NewRawPart(other)
	asImage.MediaType = "image/png"
	for _, tc := range []struct {
		what string
		part *sdk.Part
	}{
		{"a file URL", sdk.NewFileURLPart("file:///etc/passwd", "image/png")},
		{"an FTP URL", sdk.NewFileURLPart("ftp://example.com/x.png", "image/png")},
		{"a media type without a subtype", badType},
	} {
		follow := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("here"), asImage, tc.part)
		follow.TaskID = task.ID
		if _, err := c.SendMessage(ctx, &sdk.SendMessageRequest{Message: follow}); !errors.Is(err, sdk.ErrInvalidParams) {
			t.Fatalf("a follow-up with %s: %v, want %v", tc.what, err, sdk.ErrInvalidParams)
		}
		if now := swarmtest.AssertState(t, rt, string(task.ID), swarm.StatePaused); now.LastSeq != was.LastSeq {
			t.Fatalf("after a follow-up with %s: at %d, want %d", tc.what, now.LastSeq, was.LastSeq)
		}
	}
	if _, err := rt.Store().(store.Blobs).Blob(ctx, string(task.ID), store.BlobHash(other)); err == nil {
		t.Errorf("a refused follow-up's image was stored")
	}

	raw := sdk.NewRawPart(png)
	raw.MediaType, raw.Filename = "image/png", "screen.png"
	log := sdk.NewFileURLPart("https://example.com/log.txt", "text/plain")
	log.Filename = "log.txt"
	follow := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("here is the screenshot you asked for"), raw, log)
	follow.TaskID = task.ID
	done := send(t, c, follow)
	if done.Status.State != sdk.TaskStateCompleted || artifactText(t, done) != "the screenshot shows the error" {
		t.Fatalf("after the follow-up: %+v", done.Status)
	}
	if _, err := rt.Store().(store.Blobs).Blob(ctx, string(task.ID), store.BlobHash(png)); err != nil {
		t.Errorf("the screenshot is not a blob of the run: %v", err)
	}
	// The resumed record holds the screenshot by reference, not its bytes.
	recs, err := rt.Store().Read(ctx, string(task.ID), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var resumed []byte
	for _, r := range recs {
		if r.Type == string(swarm.EventResumed) {
			resumed = r.Data
		}
	}
	switch {
	case resumed == nil:
		t.Fatal("no resumed record")
	case !bytes.Contains(resumed, []byte(store.BlobHash(png))):
		t.Errorf("the resumed record does not refer to the screenshot's blob: %s", resumed)
	case bytes.Contains(resumed, []byte(base64.StdEncoding.EncodeToString(png[:30]))):
		t.Errorf("the resumed record holds the screenshot's bytes")
	}
	swarmtest.AssertJournal(t, rt, string(task.ID))
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
	_, c := serveOne(t, script, swarm.Define[string, string]("charts", "draws charts", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{render}}
	}))
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
