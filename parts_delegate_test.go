package swarm_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/strategy"
)

// A child swarm an agent hands off to sees the parts of the agent's
// conversation (the run's 2 MB photo, a tool's chart) in its model call;
// the child refers to the parent's blobs, so the bytes are stored once;
// deleting the tree collects them.
func TestChildSwarmSeesPartsStoredOnce(t *testing.T) {
	ctx := ctxT(t)
	photo, chart := randomBytes(t, 2<<20), randomBytes(t, 10<<10)
	st, raw := measuredSQLite(t)
	blobBytes := func() int64 { return blobTableBytes(t, raw) }

	chartTool := swarm.NewTool("chart", "draws a chart", func(ctx context.Context, _ struct{}) (string, error) {
		return "the chart is attached", swarm.AttachParts(ctx, model.Image("image/png", chart))
	})
	viewer := swarm.Define[string, string]("viewer", "Looks at images", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Describe what you see."}
	})
	desk := swarm.Define[string, string]("desk", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{chartTool}, Handoffs: []swarm.Handoff{swarm.ToSwarm(viewer)}}
	})
	seePhoto := scripted.ExpectPart{Type: model.PartImage, MediaType: "image/jpeg", MinBytes: len(photo)}
	seeChart := scripted.ExpectPart{Type: model.PartImage, MediaType: "image/png", MinBytes: len(chart)}
	rt, _ := newRuntime(t, scripted.Script{
		"desk": {
			{ExpectParts: []scripted.ExpectPart{seePhoto}, ToolCalls: []scripted.ToolCall{scripted.CallTool("chart", nil)}},
			{ExpectParts: []scripted.ExpectPart{seePhoto, seeChart}, ToolCalls: []scripted.ToolCall{scripted.CallTool("handoff_to_viewer", map[string]any{"request": "describe both"})}},
			scripted.Text("done"),
		},
		"viewer": {{ExpectParts: []scripted.ExpectPart{seePhoto, seeChart}, Text: "a cat beside a chart"}},
	}, st)
	if err := rt.Register(desk); err != nil {
		t.Fatal(err)
	}
	res, run, err := desk.Run(ctx, rt, "what is it?", swarm.WithParts(model.Image("image/jpeg", photo)))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
		t.Fatalf("result %#v", res)
	}
	var child string
	for _, rec := range journal(t, rt, run.ID()) {
		if rec.Type == string(swarm.EventHandoffReturned) {
			if !bytes.Contains(rec.Data, []byte("a cat beside a chart")) {
				t.Fatalf("the child did not see the parts: %s", rec.Data)
			}
			var ev swarm.Event
			if err := json.Unmarshal(rec.Data, &ev); err != nil {
				t.Fatal(err)
			}
			child = ev.Child
		}
	}
	if child == "" {
		t.Fatal("no child run")
	}
	prefix := []byte(base64.StdEncoding.EncodeToString(photo[:30]))
	size := 0
	for _, rec := range journal(t, rt, child) {
		size += len(rec.Data)
		if bytes.Contains(rec.Data, prefix) {
			t.Errorf("the child's record %s holds the photo's bytes", rec.Key)
		}
	}
	if size > 32<<10 {
		t.Errorf("the child's journal holds %d bytes, want references only", size)
	}
	t.Logf("child journal %d bytes; blob table %d bytes for a %d-byte photo and a %d-byte chart", size, blobBytes(), len(photo), len(chart))
	if n := blobBytes(); n != int64(len(photo)+len(chart)) {
		t.Errorf("blob table holds %d bytes, want %d (each image once)", n, len(photo)+len(chart))
	}
	if got, err := st.Blob(ctx, child, store.BlobHash(photo)); err != nil || !bytes.Equal(got, photo) {
		t.Errorf("the child does not refer to the photo: %d bytes, %v", len(got), err)
	}
	if n, err := st.DeleteRun(ctx, run.ID()); err != nil || n != 2 {
		t.Fatalf("DeleteRun: %d, %v", n, err)
	}
	if n := blobBytes(); n != 0 {
		t.Errorf("after deleting the tree the blob table holds %d bytes", n)
	}
}

// handing is a strategy that passes parts on: a child run (Child.Parts)
// gets the run's own parts by reference, an agent (DelegateParts) a
// note; a run started as a child answers from its own model call.
type handing struct{}

func (handing) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	if string(d.Input()) == `"kid"` {
		resp, err := d.Model(ctx, "look", []model.Message{{Role: model.RoleUser, Content: "look", Parts: d.Parts()}})
		if err != nil {
			return nil, err
		}
		return json.Marshal(resp.Message.Content)
	}
	kid := strategy.Child{ID: d.RunID() + ".kid", Input: json.RawMessage(`"kid"`), Parts: d.Parts()}
	if err := d.StartChildren(ctx, kid); err != nil {
		return nil, err
	}
	// A child ends with its parent: wait for it (not durably, as a test).
	if _, err := d.Runtime().Wait(ctx, kid.ID); err != nil {
		return nil, err
	}
	out, err := d.DelegateParts(ctx, "eye", "eye", "what is in the note?", []model.Part{model.File("note.txt", "text/plain", []byte("a cat"))})
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// Strategies pass parts with DelegateParts and Child.Parts; a reference
// to a blob the run does not have is refused.
func TestStrategyHandsPartsOn(t *testing.T) {
	ctx := ctxT(t)
	photo := randomBytes(t, 64<<10)
	eye := &swarm.Agent{Name: "eye", Description: "Looks", Instructions: "Look."}
	s := swarm.Define[string, string]("hand", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(eye)}, Strategy: strategy.Of(handing{})}
	})
	seePhoto := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/jpeg", MinBytes: len(photo)}}
	rt, _ := newRuntime(t, scripted.Script{
		"hand": {{ExpectParts: seePhoto, Text: "a photo"}},
		"eye":  {{ExpectParts: []scripted.ExpectPart{{Type: model.PartFile, Name: "note.txt"}}, Text: "a cat in the note"}},
	}, nil)
	if err := rt.Register(s); err != nil {
		t.Fatal(err)
	}
	res, run, err := s.Run(ctx, rt, "go", swarm.WithParts(model.Image("image/jpeg", photo)))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "a cat in the note" {
		t.Fatalf("result %#v", res)
	}
	kid, err := rt.Wait(ctx, run.ID()+".kid")
	if err != nil || kid.State != store.Completed || string(kid.Result) != `"a photo"` {
		t.Fatalf("child: %+v, %v", kid, err)
	}
	b := rt.Store().(store.Blobs)
	if _, err := b.Blob(ctx, kid.ID, store.BlobHash(photo)); err != nil {
		t.Errorf("the child does not refer to the photo's blob: %v", err)
	}
	for _, rec := range journal(t, rt, kid.ID) {
		if len(rec.Data) > 16<<10 {
			t.Errorf("the child's record %s holds %d bytes, want a reference", rec.Key, len(rec.Data))
		}
	}

	// A reference to a blob the run does not have (the photo, which the
	// store keeps for the runs above) is refused.
	bad := handingBad{ref: model.Part{Type: model.PartImage, MediaType: "image/jpeg", Blob: store.BlobHash(photo), Size: int64(len(photo))}}
	s2 := swarm.Define[string, string]("bad", "", func(string) swarm.Spec { return swarm.Spec{Strategy: strategy.Of(bad)} })
	if err := rt.Register(s2); err != nil {
		t.Fatal(err)
	}
	res2, _, err := s2.Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	f, ok := res2.(swarm.Failed)
	if !ok || !strings.HasPrefix(f.Reason, "refused: ") || !strings.Contains(f.Reason, "blob") {
		t.Fatalf("a strategy handing on a foreign blob: %#v, want a failure naming the blob", res2)
	}
}

// handingBad hands a child a blob reference its run does not have.
type handingBad struct{ ref model.Part }

func (h handingBad) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	err := d.StartChildren(ctx, strategy.Child{ID: d.RunID() + ".kid", Input: json.RawMessage(`"x"`), Parts: []model.Part{h.ref}})
	if !errors.Is(err, swarm.ErrInvalidInput) {
		return nil, &strategy.Failure{Reason: "want ErrInvalidInput, got " + errString(err)}
	}
	return nil, &strategy.Failure{Reason: "refused: " + err.Error()}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// mailReader waits for a human, then looks at its mail's parts.
type mailReader struct{}

func (mailReader) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	if _, err := d.Await(ctx, "go", strategy.Question{Reason: "wait"}); err != nil {
		return nil, err
	}
	mails, err := d.Mailbox(ctx, 0)
	if err != nil {
		return nil, err
	}
	var parts []model.Part
	for _, m := range mails {
		parts = append(parts, m.Parts...)
	}
	resp, err := d.Model(ctx, "look", []model.Message{{Role: model.RoleUser, Content: "look", Parts: parts}})
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp.Message.Content)
}

// A run forwards its photo by mail to a run of another tree and is
// deleted: the recipient refers to the blob, which stays until the
// recipient is deleted too.
func TestMailPartsOutliveTheSender(t *testing.T) {
	ctx := ctxT(t)
	photo := randomBytes(t, 256<<10)
	st, raw := measuredSQLite(t)
	blobBytes := func() int64 { return blobTableBytes(t, raw) }
	var rt *swarm.Runtime
	forward := swarm.NewTool("forward", "mails the photo", func(ctx context.Context, _ struct{}) (string, error) {
		_, err := rt.Post(ctx, []string{"reader-1"}, store.Mail{Type: "message", Content: "see", Parts: swarm.ConversationParts(ctx)})
		return "sent", err
	})
	sender := swarm.Define[string, string]("sender", "", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{forward}} })
	reader := swarm.Define[string, string]("reader", "", func(string) swarm.Spec { return swarm.Spec{Strategy: strategy.Of(mailReader{})} })
	see := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/jpeg", MinBytes: len(photo)}}
	rt, _ = newRuntime(t, scripted.Script{
		"sender": {scripted.Tools(scripted.CallTool("forward", nil)), scripted.Text("done")},
		"reader": {{ExpectParts: see, Text: "a photo"}},
	}, st)
	for _, s := range []swarm.Definition{sender, reader} {
		if err := rt.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.Start(ctx, "reader", []byte(`"x"`), swarm.WithID("reader-1")); err != nil {
		t.Fatal(err)
	}
	if s, err := rt.Wait(ctx, "reader-1"); err != nil || s.State != store.Paused {
		t.Fatalf("reader: %+v, %v", s, err)
	}
	res, run, err := sender.Run(ctx, rt, "forward it", swarm.WithParts(model.Image("image/jpeg", photo)))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
		t.Fatalf("sender: %#v", res)
	}
	if n, err := st.DeleteRun(ctx, run.ID()); err != nil || n != 1 {
		t.Fatalf("DeleteRun(sender): %d, %v", n, err)
	}
	if n := blobBytes(); n != int64(len(photo)) {
		t.Fatalf("after deleting the sender the blob table holds %d bytes, want the photo (%d) kept for the recipient", n, len(photo))
	}
	if err := rt.Resume(ctx, "reader-1", "go"); err != nil {
		t.Fatal(err)
	}
	if s, err := rt.Wait(ctx, "reader-1"); err != nil || s.State != store.Completed || string(s.Result) != `"a photo"` {
		t.Fatalf("reader: %+v, %v (its model call must load the photo)", s, err)
	}
	if _, err := st.DeleteRun(ctx, "reader-1"); err != nil {
		t.Fatal(err)
	}
	if n := blobBytes(); n != 0 {
		t.Errorf("after deleting both runs the blob table holds %d bytes", n)
	}
}
