package swarm_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/swarmtest"
)

// visionSwarm describes an attached photo: it draws a chart (a tool that
// returns an image), waits in hold (which blocks until release is closed
// or its run is interrupted), and answers. Every model call asserts that
// the images it should see arrived with their bytes.
func visionSwarm(photo, chart []byte, holding chan<- struct{}, release <-chan struct{}) (*swarm.Swarm[string, string], scripted.Script) {
	chartTool := swarm.NewTool("chart", "draws a chart", func(ctx context.Context, _ struct{}) (string, error) {
		if err := swarm.AttachParts(ctx, model.Image("image/png", chart)); err != nil {
			return "", err
		}
		return "the chart is attached", nil
	})
	hold := holdTool(holding, release)
	s := swarm.Define[string, string]("vision", "", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Describe the photo.", Tools: []swarm.Tool{chartTool, hold}}
	})
	seePhoto := scripted.ExpectPart{Type: model.PartImage, MediaType: "image/jpeg", MinBytes: len(photo)}
	seeChart := scripted.ExpectPart{Type: model.PartImage, MediaType: "image/png", MinBytes: len(chart)}
	script := scripted.Script{"vision": {
		{ExpectParts: []scripted.ExpectPart{seePhoto}, ToolCalls: []scripted.ToolCall{scripted.CallTool("chart", nil)}},
		{ExpectParts: []scripted.ExpectPart{seePhoto, seeChart}, ToolCalls: []scripted.ToolCall{scripted.CallTool("hold", nil)}},
		{ExpectParts: []scripted.ExpectPart{seePhoto, seeChart}, Text: "a cat beside a bar chart"},
	}}
	return s, script
}

// holdTool signals holding and blocks until release is closed or its run
// is interrupted.
func holdTool(holding chan<- struct{}, release <-chan struct{}) swarm.Tool {
	return swarm.NewTool("hold", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		select {
		case holding <- struct{}{}:
		default:
		}
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// A 2 MB photo attached to a run and a chart returned by a tool reach
// every model call that should see them, through a crash and recovery on
// SQLite, with snapshots; the journal and snapshots hold references, the
// bytes are stored once; a fork shares them, and deleting the runs
// collects them.
func TestPartsStoredOnceThroughCrashForkAndDelete(t *testing.T) {
	ctx := ctxT(t)
	photo, chart := randomBytes(t, 2<<20), randomBytes(t, 10<<10)
	st, raw := measuredSQLite(t)
	holding, release := make(chan struct{}, 1), make(chan struct{})
	s, script := visionSwarm(photo, chart, holding, release)

	a, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), RetryBackoff: time.Millisecond, Owner: "A", SnapshotEvery: 1, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Register(s); err != nil {
		t.Fatal(err)
	}
	run, err := s.Start(ctx, a, "what is in it?", swarm.WithParts(model.Image("image/jpeg", photo)))
	if err != nil {
		t.Fatal(err)
	}
	id := run.ID()
	select {
	case <-holding: // two model calls and the chart are journaled
	case <-ctx.Done():
		t.Fatal("the run never reached hold")
	}
	a.Close() // the process goes away mid-round

	b, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), RetryBackoff: time.Millisecond, Owner: "B", SnapshotEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Register(s); err != nil {
		t.Fatal(err)
	}
	close(release)
	if _, err := b.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	stat, err := b.Wait(ctx, id)
	if err != nil || stat.State != store.Completed {
		t.Fatalf("after recovery: %+v, %v", stat, err)
	}

	// The journal and the snapshot hold references, not bytes.
	recs, err := st.Read(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	journaled := 0
	prefix := []byte(base64.StdEncoding.EncodeToString(photo[:30]))
	for _, rec := range recs {
		journaled += len(rec.Data)
		if bytes.Contains(rec.Data, prefix) {
			t.Errorf("record %s holds the photo's bytes", rec.Key)
		}
	}
	if journaled > 64<<10 {
		t.Errorf("journal holds %d bytes for a run with a 2 MB photo, want references only", journaled)
	}
	if sn, err := st.Snapshot(ctx, id); err != nil || len(sn.Data) > 32<<10 {
		t.Errorf("snapshot: %d bytes, %v; want a small one with references", len(sn.Data), err)
	}
	if got, err := st.Blob(ctx, id, store.BlobHash(photo)); err != nil || !bytes.Equal(got, photo) {
		t.Fatalf("the photo's blob: %d bytes, %v", len(got), err)
	}
	// Stored once: the blob table holds the photo and the chart, once each,
	// through the crash and the recovery.
	blobBytes := func() int64 { return blobTableBytes(t, raw) }
	if n := blobBytes(); n != int64(len(photo)+len(chart)) {
		t.Errorf("blob table holds %d bytes, want %d (the photo and the chart once)", n, len(photo)+len(chart))
	}

	// A fork at the second model call reads the shared blobs, and keeps
	// them when its origin is deleted.
	var second string
	for _, rec := range recs {
		if rec.Type == string(swarm.EventModelResponse) && second == "" && rec.Key != "t1/model" {
			second = rec.Key
		}
	}
	fork, err := b.Fork(ctx, id, second)
	if err != nil {
		t.Fatal(err)
	}
	if fs, err := b.Wait(ctx, fork); err != nil || fs.State != store.Completed {
		t.Fatalf("fork: %+v, %v", fs, err)
	}
	if n := blobBytes(); n != int64(len(photo)+len(chart)) {
		t.Errorf("after the fork the blob table holds %d bytes, want %d: a fork shares its origin's blobs", n, len(photo)+len(chart))
	}
	if n, err := st.DeleteRun(ctx, id); err != nil || n != 1 {
		t.Fatalf("DeleteRun(origin): %d, %v", n, err)
	}
	if _, err := st.Blob(ctx, fork, store.BlobHash(photo)); err != nil {
		t.Fatalf("the fork lost the photo when its origin was deleted: %v", err)
	}
	if _, err := st.DeleteRun(ctx, fork); err != nil {
		t.Fatal(err)
	}
	other, err := b.Start(ctx, "vision", []byte(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RefBlob(ctx, other, store.BlobHash(photo)); !errors.Is(err, store.ErrNoBlob) {
		t.Errorf("after deleting both runs, RefBlob of the photo: %v, want ErrNoBlob (collected)", err)
	}
}

// Bad parts are refused at the start, and nothing is created.
func TestWithPartsRefusesBadParts(t *testing.T) {
	ctx := ctxT(t)
	rt, _ := newRuntime(t, scripted.Script{"vision": {scripted.Text("x")}}, nil)
	s, _ := visionSwarm(nil, nil, nil, nil)
	if err := rt.Register(s); err != nil {
		t.Fatal(err)
	}
	for _, p := range []model.Part{
		{Type: model.PartImage, MediaType: "image/png"},                                  // no bytes
		model.Image("text/html", []byte("<script>")),                                     // not an image
		{Type: model.PartImage, MediaType: "image/png", Blob: store.BlobHash([]byte{1})}, // another run's blob
	} {
		_, err := s.Start(ctx, rt, "x", swarm.WithParts(p))
		if !errors.Is(err, swarm.ErrInvalidInput) {
			t.Errorf("part %v: err = %v, want ErrInvalidInput", p, err)
		}
	}
	if runs, err := rt.Store().List(ctx, store.Filter{}); err != nil || len(runs) != 0 {
		t.Errorf("%d runs created, %v; want none", len(runs), err)
	}
}

// Guardrails see parts: one refuses PDFs from tools (the result is
// replaced, its parts dropped), another trips a run whose input image is
// too large.
func TestGuardrailsSeeParts(t *testing.T) {
	ctx := ctxT(t)
	noPDF := guardrail.Guardrail{Name: "no-pdf", Points: []guardrail.Point{guardrail.ToolResult, guardrail.Input},
		Check: func(_ context.Context, c guardrail.Check) (guardrail.Verdict, error) {
			for _, p := range c.Parts {
				switch {
				case c.Point == guardrail.ToolResult && p.MediaType == "application/pdf":
					return guardrail.Verdict{Action: guardrail.Reject, Message: "no PDFs"}, nil
				case c.Point == guardrail.Input && p.Len() > 1<<20:
					return guardrail.Verdict{Action: guardrail.Tripwire, Message: "image too large"}, nil
				}
			}
			return guardrail.Verdict{Action: guardrail.Allow}, nil
		}}
	report := swarm.NewTool("report", "fetches the report", func(ctx context.Context, _ struct{}) (string, error) {
		return "attached", swarm.AttachParts(ctx, model.File("q3.pdf", "application/pdf", randomBytes(t, 10<<10)))
	})
	s := swarm.Define[string, string]("guarded", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{report}, Guardrails: []guardrail.Guardrail{noPDF}}
	})
	rt, _ := newRuntime(t, scripted.Script{"guarded": {scripted.Tools(scripted.CallTool("report", nil)), scripted.Text("done")}}, nil)
	if err := rt.Register(s); err != nil {
		t.Fatal(err)
	}
	_, run, err := s.Run(ctx, rt, "small", swarm.WithParts(model.Image("image/png", randomBytes(t, 10<<10))))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range journal(t, rt, run.ID()) {
		if ev.Type != string(swarm.EventToolResult) {
			continue
		}
		if !bytes.Contains(ev.Data, []byte("no PDFs")) || bytes.Contains(ev.Data, []byte(`"parts"`)) {
			t.Errorf("rejected tool result journaled as %s, want the rejection without parts", ev.Data)
		}
	}
	res, _, err := s.Run(ctx, rt, "large", swarm.WithParts(model.Image("image/png", randomBytes(t, 2<<20))))
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, "image too large") {
		t.Errorf("run with a large image: %#v, want failed by the input guardrail", res)
	}
}

// An agent the orchestrator hands off to sees the input's attachments too.
func TestHandoffAgentSeesAttachments(t *testing.T) {
	ctx := ctxT(t)
	img := randomBytes(t, 8<<10)
	see := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: len(img)}}
	billing := &swarm.Agent{Name: "billing", Description: "Billing questions", Instructions: "Answer billing questions."}
	s := swarm.Define[string, string]("desk", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToAgent(billing)}}
	})
	rt, _ := newRuntime(t, scripted.Script{
		"desk":    {{ExpectParts: see, ToolCalls: []scripted.ToolCall{scripted.CallTool("handoff_to_billing", map[string]any{"request": "read the invoice"})}}, scripted.Text("paid")},
		"billing": {{ExpectParts: see, Text: "the invoice is paid"}},
	}, nil)
	if err := rt.Register(s); err != nil {
		t.Fatal(err)
	}
	res, run, err := s.Run(ctx, rt, "is it paid?", swarm.WithParts(model.Image("image/png", img)))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "paid" {
		t.Fatalf("result %#v", res)
	}
	answered := false
	for _, rec := range journal(t, rt, run.ID()) {
		if rec.Type == string(swarm.EventHandoffReturned) {
			answered = bytes.Contains(rec.Data, []byte("the invoice is paid")) && !bytes.Contains(rec.Data, []byte(`"is_error":true`))
		}
	}
	if !answered {
		t.Error("billing did not answer: it did not see the image")
	}
}

// In a conversation, a tool's image reaches the agent's next call.
func TestConversationToolParts(t *testing.T) {
	ctx := ctxT(t)
	chart := randomBytes(t, 6<<10)
	draw := swarm.NewTool("chart", "draws", func(ctx context.Context, _ struct{}) (string, error) {
		return "drawn", swarm.AttachParts(ctx, model.Image("image/png", chart))
	})
	analyst := &swarm.Agent{Name: "analyst", Instructions: "Chart things.", Tools: []swarm.Tool{draw}}
	conv := conversation.Define("charts", "", conversation.Spec[struct{}]{Queen: analyst})
	rt, _ := newRuntime(t, scripted.Script{"analyst": {
		scripted.Tools(scripted.CallTool("chart", nil)),
		{ExpectParts: []scripted.ExpectPart{{Type: model.PartImage, MinBytes: len(chart)}}, Text: "sales rise"},
	}}, nil)
	if err := rt.Register(conv); err != nil {
		t.Fatal(err)
	}
	session, err := conv.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := session.Say(ctx, "how are sales?")
	if err != nil || !strings.Contains(fmt.Sprint(reply), "sales rise") {
		t.Fatalf("reply %+v, %v", reply, err)
	}
}

// failingBlobs is a memory store whose blob puts fail.
type failingBlobs struct{ *memory.Store }

func (f failingBlobs) Create(ctx context.Context, r store.Run, owner string, lease time.Duration, recs []store.Record) (store.Lease, error) {
	if len(r.Blobs) > 0 {
		return store.Lease{}, errors.New("disk full")
	}
	return f.Store.Create(ctx, r, owner, lease, recs)
}

func (f failingBlobs) CreateReserving(ctx context.Context, r store.Run, owner string, lease time.Duration, recs []store.Record, d store.Pool) (store.Lease, store.Pool, error) {
	if len(r.Blobs) > 0 {
		return store.Lease{}, store.Pool{}, errors.New("disk full")
	}
	return f.Store.CreateReserving(ctx, r, owner, lease, recs, d)
}

func (failingBlobs) PutBlob(context.Context, string, []byte) (string, error) {
	return "", errors.New("disk full")
}

// A start whose attachments cannot be stored says so, and creates
// nothing: no run refers to bytes that are not kept.
func TestStartPartsStoreFails(t *testing.T) {
	ctx := ctxT(t)
	st := failingBlobs{memory.New()}
	rt, _ := newRuntime(t, scripted.Script{"vision": {scripted.Text("x")}}, st)
	s, _ := visionSwarm(nil, nil, nil, nil)
	if err := rt.Register(s); err != nil {
		t.Fatal(err)
	}
	_, err := s.Start(ctx, rt, "x", swarm.WithID("v1"), swarm.WithParts(model.Image("image/png", randomBytes(t, 8<<10))))
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Start: %v, want the store's error", err)
	}
	if _, err := st.Get(ctx, "v1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("run after the failed start: %v; want none", err)
	}
}

// diesAtCreate is the store of a process killed right after it created a
// run: every later write fails.
type diesAtCreate struct{ *swarmtest.Killable }

func (d diesAtCreate) Create(ctx context.Context, r store.Run, owner string, lease time.Duration, recs []store.Record) (store.Lease, error) {
	l, err := d.Killable.Create(ctx, r, owner, lease, recs)
	d.Kill()
	return l, err
}

// A process killed right after it stored a run's start record leaves the
// run's 2 MB photo stored with it: the process that recovers the run
// gives the photo to the model and completes the run, on SQLite and in
// memory.
func TestStartKilledAfterStartRecordKeepsParts(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) store.Store{
		"memory": func(*testing.T) store.Store { return memory.New() },
		"sqlite": func(t *testing.T) store.Store { st, _ := measuredSQLite(t); return st },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			photo := randomBytes(t, 2<<20)
			base := open(t)
			s := swarm.Define[string, string]("vision", "", func(string) swarm.Spec { return swarm.Spec{Instructions: "Describe the photo."} })
			script := scripted.Script{"vision": {{ExpectParts: []scripted.ExpectPart{{Type: model.PartImage, MinBytes: len(photo)}}, Text: "a cat"}}}
			a, err := swarm.New(swarm.Config{Store: diesAtCreate{swarmtest.NewKillable(t, base)}, Model: scripted.New(script), Owner: "A", Lease: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Register(s); err != nil {
				t.Fatal(err)
			}
			// The process dies once the start record is stored; what it
			// says of the start does not matter.
			_, _ = s.Start(ctx, a, "x", swarm.WithID("v1"), swarm.WithParts(model.Image("image/jpeg", photo)))
			a.Close()

			b, _ := newRuntime(t, script, base)
			res := recovered(t, b, s, "v1")
			if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "a cat" {
				t.Fatalf("recovered run: %+v, want it completed with the photo seen", res)
			}
		})
	}
}

// recovered has rt, with s registered, recover run id of s once the lease
// of the process that died holding it runs out, and returns its result.
func recovered(t *testing.T, rt *swarm.Runtime, s *swarm.Swarm[string, string], id string) swarm.Result[string] {
	t.Helper()
	ctx := ctxT(t)
	if err := rt.Register(s); err != nil {
		t.Fatal(err)
	}
	for {
		ids, err := rt.Recover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ids, id) {
			run, err := s.Attach(ctx, rt, id)
			if err != nil {
				t.Fatal(err)
			}
			res, err := run.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s was never recovered", id)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A run whose journal names a blob the store does not keep (a journal
// written before a start stored its parts with its start record) fails
// with a reason that says the blob is missing, naming it and the run.
func TestMissingBlobReason(t *testing.T) {
	ctx := ctxT(t)
	st := memory.New()
	hash := store.BlobHash([]byte("never stored"))
	ev := swarm.Event{Swarm: "vision", Input: json.RawMessage(`"x"`), Agent: "vision", MaxTurns: 10,
		Parts: []model.Part{{Type: model.PartImage, MediaType: "image/png", Blob: hash, Size: 12}}}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, store.Run{ID: "old", Swarm: "vision", Agent: "vision", MaxTurns: 10}, "", 0,
		[]store.Record{{Key: "start", Type: string(swarm.EventStarted), Data: data, Time: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	rt, _ := newRuntime(t, scripted.Script{"vision": {scripted.Text("x")}}, st)
	s := swarm.Define[string, string]("vision", "", func(string) swarm.Spec { return swarm.Spec{Instructions: "Describe the photo."} })
	res := recovered(t, rt, s, "old")
	f, ok := res.(swarm.Failed)
	if !ok || !strings.Contains(f.Reason, "missing") || !strings.Contains(f.Reason, hash) || !strings.Contains(f.Reason, "run old") {
		t.Fatalf("result %+v, want a failure saying blob %s of run old is missing", res, hash)
	}
}

// measuredSQLite opens a SQLite store in a temporary file, and a second,
// raw handle on the same file to measure what the store holds; both close
// when t ends.
func measuredSQLite(t *testing.T) (*sqlite.Store, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return st, raw
}

// blobTableBytes returns the bytes the blob table holds.
func blobTableBytes(t *testing.T, raw *sql.DB) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := raw.QueryRowContext(t.Context(), `SELECT sum(length(data)) FROM blobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n.Int64
}
