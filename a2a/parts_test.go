package a2a_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
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

// rawFile is a file part holding data.
func rawFile(data []byte, mediaType, name string) *sdk.Part {
	p := sdk.NewRawPart(data)
	p.MediaType, p.Filename = mediaType, name
	return p
}

// urlFile is a file part given by its URL.
func urlFile(url, mediaType, name string) *sdk.Part {
	p := sdk.NewFileURLPart(sdk.URL(url), mediaType)
	p.Filename = name
	return p
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

	task := send(t, c, sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("what are these?"),
		rawFile(png, "image/png", "chart.png"), urlFile("https://example.com/report.pdf", "application/pdf", "report.pdf")))
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

	follow := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("here is the screenshot you asked for"),
		rawFile(png, "image/png", "screen.png"), urlFile("https://example.com/log.txt", "text/plain", "log.txt"))
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

// A task's history carries the user's files as file parts beside the
// text: the first message's and a follow-up's, with their bytes (loaded
// from the run's blobs for large ones), media type and name, or their
// URL; the text holds no placeholders for them. GetTask, ListTasks and
// SendMessage's task agree.
func TestHistoryFileParts(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{3}, 20<<10)...)
	screen := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{4}, 12<<10)...)
	notes := []byte("step 1: open the app\nstep 2: it crashes")
	script := scripted.Script{"support": {
		scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "send me a screenshot"})),
		scripted.Text("the screenshot shows the error"),
	}}
	_, c := serveOne(t, script, swarm.Define[string, string]("support", "helps with errors", nil))
	ctx := swarmtest.Context(t)

	task := send(t, c, sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("my app crashes"), rawFile(png, "image/png", "photo.png"),
		rawFile(notes, "text/plain", "steps.txt"), urlFile("https://example.com/manual.pdf", "application/pdf", "manual.pdf")))
	if task.Status.State != sdk.TaskStateInputRequired {
		t.Fatalf("task = %+v", task.Status)
	}
	follow := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("here it is"),
		rawFile(screen, "image/png", "screen.png"), urlFile("https://example.com/log.txt", "text/plain", "log.txt"))
	follow.TaskID = task.ID
	done := send(t, c, follow)
	if done.Status.State != sdk.TaskStateCompleted {
		t.Fatalf("after the follow-up: %+v", done.Status)
	}

	type want struct {
		text   string
		bytes  []byte
		url    string
		media  string
		name   string
		isText bool
	}
	check := func(how string, history []*sdk.Message) {
		t.Helper()
		if len(history) != 3 {
			t.Fatalf("%s: history has %d messages, want 3: %+v", how, len(history), history)
		}
		for i, tc := range []struct {
			msg   *sdk.Message
			role  sdk.MessageRole
			parts []want
		}{
			{history[0], sdk.MessageRoleUser, []want{
				{isText: true, text: "my app crashes"},
				{bytes: png, media: "image/png", name: "image-1"},
				{bytes: notes, media: "text/plain", name: "steps.txt"},
				{url: "https://example.com/manual.pdf", media: "application/pdf", name: "manual.pdf"},
			}},
			{history[1], sdk.MessageRoleAgent, []want{{isText: true, text: "send me a screenshot"}}},
			{history[2], sdk.MessageRoleUser, []want{
				{isText: true, text: "here it is"},
				{bytes: screen, media: "image/png", name: "image-1"},
				{url: "https://example.com/log.txt", media: "text/plain", name: "log.txt"},
			}},
		} {
			m := tc.msg
			if m.Role != tc.role || len(m.Parts) != len(tc.parts) {
				t.Errorf("%s: message %d: %s with %d parts, want %s with %d: %+v", how, i, m.Role, len(m.Parts), tc.role, len(tc.parts), m.Parts)
				continue
			}
			for j, w := range tc.parts {
				p := m.Parts[j]
				switch {
				case w.isText:
					if _, ok := p.Content.(sdk.Text); !ok || p.Text() != w.text {
						t.Errorf("%s: message %d part %d: %+v, want the text %q", how, i, j, p, w.text)
					}
					continue
				case w.url != "":
					if p.URL() != sdk.URL(w.url) {
						t.Errorf("%s: message %d part %d: %+v, want the URL %s", how, i, j, p, w.url)
					}
				default:
					if _, ok := p.Content.(sdk.Raw); !ok || !bytes.Equal(p.Raw(), w.bytes) {
						t.Errorf("%s: message %d part %d: %+v, want %d bytes", how, i, j, p, len(w.bytes))
					}
				}
				if p.MediaType != w.media || p.Filename != w.name {
					t.Errorf("%s: message %d part %d: media type %q, name %q; want %q, %q", how, i, j, p.MediaType, p.Filename, w.media, w.name)
				}
			}
		}
	}
	check("SendMessage", done.History)
	got, err := c.GetTask(ctx, &sdk.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	check("GetTask", got.History)
	all := 10
	list, err := c.ListTasks(ctx, &sdk.ListTasksRequest{HistoryLength: &all})
	if err != nil || len(list.Tasks) != 1 {
		t.Fatalf("ListTasks: %v, %+v", err, list)
	}
	check("ListTasks", list.Tasks[0].History)
}

// lossyStore is a memory store that counts the blobs read and, once lost
// is set, no longer finds any blob: a run whose start record was stored
// but whose blobs were not (a crash in between).
type lossyStore struct {
	*memory.Store
	lost  atomic.Bool
	reads atomic.Int64
}

func (s *lossyStore) Blob(ctx context.Context, id, hash string) ([]byte, error) {
	s.reads.Add(1)
	if s.lost.Load() {
		return nil, fmt.Errorf("blob %s of run %s: %w", hash, id, store.ErrNoBlob)
	}
	return s.Store.Blob(ctx, id, hash)
}

// A task whose file's blob is missing can still be read: its history says
// the bytes are missing in place of the file. A task read without its
// history (as ListTasks lists it by default) reads no blob.
func TestHistoryMissingBlob(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{2}, 20<<10)...)
	st := &lossyStore{Store: memory.New()}
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(scripted.Script{"vision": {scripted.Text("a chart")}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(swarm.Define[string, string]("vision", "looks at pictures", nil)); err != nil {
		t.Fatal(err)
	}
	h, err := a2a.NewHandler(rt, a2a.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := (&env{rt: rt, srv: srv}).client(t, "vision", "")

	task := send(t, c, sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("what is this?"), rawFile(png, "image/png", "")))
	if task.Status.State != sdk.TaskStateCompleted {
		t.Fatalf("task = %+v", task.Status)
	}
	ctx := swarmtest.Context(t)
	read := st.reads.Load()
	zero := 0
	if list, err := c.ListTasks(ctx, &sdk.ListTasksRequest{}); err != nil || len(list.Tasks) != 1 || list.Tasks[0].History != nil {
		t.Fatalf("ListTasks: %v, %+v", err, list)
	}
	if got, err := c.GetTask(ctx, &sdk.GetTaskRequest{ID: task.ID, HistoryLength: &zero}); err != nil || got.History != nil {
		t.Fatalf("GetTask without history: %v, %+v", err, got)
	}
	if n := st.reads.Load() - read; n != 0 {
		t.Errorf("reading the task without its history read %d blobs", n)
	}
	st.lost.Store(true)
	got, err := c.GetTask(ctx, &sdk.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatalf("GetTask with a missing blob: %v", err)
	}
	if len(got.History) != 1 || len(got.History[0].Parts) != 2 {
		t.Fatalf("history = %+v", got.History)
	}
	if p := got.History[0].Parts[1].Text(); !strings.Contains(p, "image image/png") || !strings.Contains(p, "missing") {
		t.Errorf("the missing image is %q, want a text saying its bytes are missing", p)
	}
}
