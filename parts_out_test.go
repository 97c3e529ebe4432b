package swarm_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
)

// A tool's 2 MB output image (AttachOutput) becomes the completed run's
// result part, through a crash and a recovery from a snapshot taken after
// the tool's round: the bytes are kept once in the blob table, every
// record (the tool's result, the completed event) and the snapshot hold a
// reference, Status.Parts the reference, Completed.Parts the bytes.
func TestAttachOutputStoredOnceThroughCrash(t *testing.T) {
	ctx := ctxT(t)
	img := randomBytes(t, 2<<20)
	st, raw := measuredSQLite(t)
	holding, release := make(chan struct{}, 1), make(chan struct{})
	render := swarm.NewTool("render", "renders the chart", func(ctx context.Context, _ struct{}) (string, error) {
		if err := swarm.AttachOutput(ctx, model.Image("image/png", img)); err != nil {
			return "", err
		}
		return "rendered", nil
	})
	hold := holdTool(holding, release)
	s := swarm.Define[string, string]("charts", "", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Chart it.", Tools: []swarm.Tool{render, hold}}
	})
	script := scripted.Script{"charts": {
		scripted.Tools(scripted.CallTool("render", nil)),
		scripted.Tools(scripted.CallTool("hold", nil)),
		scripted.Text("the chart is attached"),
	}}
	a, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), RetryBackoff: time.Millisecond, Owner: "A", SnapshotEvery: 1, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	run, err := s.Start(ctx, a, "sales")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-holding:
	case <-ctx.Done():
		t.Fatal("the run never reached hold")
	}
	a.Close()

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
	run, err = s.Attach(ctx, b, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := res.(swarm.Completed[string])
	if !ok || c.Output != "the chart is attached" {
		t.Fatalf("result: %#v", res)
	}
	if len(c.Parts) != 1 || c.Parts[0].Type != model.PartImage || c.Parts[0].MediaType != "image/png" || !bytes.Equal(c.Parts[0].Data, img) {
		t.Fatalf("Completed.Parts: %v, want the rendered image with its bytes", c.Parts)
	}
	stat, err := b.Status(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(stat.Parts) != 1 || stat.Parts[0].Blob != store.BlobHash(img) || len(stat.Parts[0].Data) != 0 || stat.Parts[0].Size != int64(len(img)) {
		t.Fatalf("Status.Parts: %v, want the image by reference", stat.Parts)
	}
	recs, err := st.Read(ctx, run.ID(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	journaled := 0
	prefix := []byte(base64.StdEncoding.EncodeToString(img[:30]))
	for _, rec := range recs {
		journaled += len(rec.Data)
		if bytes.Contains(rec.Data, prefix) {
			t.Errorf("record %s holds the image's bytes", rec.Key)
		}
	}
	if journaled > 32<<10 {
		t.Errorf("journal holds %d bytes for a run with a 2 MB output image, want references only", journaled)
	}
	if sn, err := st.Snapshot(ctx, run.ID()); err != nil || len(sn.Data) > 16<<10 {
		t.Errorf("snapshot: %d bytes, %v; want a small one with references", len(sn.Data), err)
	}
	var n sql.NullInt64
	if err := raw.QueryRowContext(ctx, `SELECT sum(length(data)) FROM blobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n.Int64 != int64(len(img)) {
		t.Errorf("blob table holds %d bytes, want %d (the image once)", n.Int64, len(img))
	}
	t.Logf("a run with a 2 MB output image: journal %d bytes in %d records, blobs %d bytes", journaled, len(recs), n.Int64)

	// A fork after the tool's round reuses its result and shares the
	// image, which outlives the origin's deletion.
	var second string
	for _, rec := range recs {
		if rec.Type == string(swarm.EventModelResponse) && rec.Key != "t1/model" {
			second = rec.Key
			break
		}
	}
	fork, err := b.Fork(ctx, run.ID(), second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeleteRun(ctx, run.ID()); err != nil {
		t.Fatal(err)
	}
	fr, err := s.Attach(ctx, b, fork)
	if err != nil {
		t.Fatal(err)
	}
	res, err = fr.Wait(ctx)
	if c, ok := res.(swarm.Completed[string]); err != nil || !ok || len(c.Parts) != 1 || !bytes.Equal(c.Parts[0].Data, img) {
		t.Fatalf("fork: %v, %v; want the image as its result part", res, err)
	}
}

// AttachOutput outside a tool call, and with an invalid part, is an error.
func TestAttachOutputRefusesBadUse(t *testing.T) {
	if err := swarm.AttachOutput(context.Background(), model.Image("image/png", []byte("x"))); err == nil {
		t.Error("AttachOutput outside a tool call: no error")
	}
}

// Typed parts in and out: a Go input with a model.Part field reaches the
// model as a real image part and is journaled by reference; a result
// whose type has part fields is journaled by reference (no base64 in the
// records) and comes back with its bytes, in Output and in Parts.
type shot struct {
	Caption string     `json:"caption"`
	Photo   model.Part `json:"photo"`
}

type verdict struct {
	Summary string       `json:"summary"`
	Crops   []model.Part `json:"crops"`
}

func TestTypedPartsInAndOut(t *testing.T) {
	ctx := ctxT(t)
	photo, crop := randomBytes(t, 100<<10), randomBytes(t, 20<<10)
	out, err := json.Marshal(verdict{Summary: "one cat", Crops: []model.Part{model.Image("image/png", crop), model.ImageURL("https://example.com/c.png")}})
	if err != nil {
		t.Fatal(err)
	}
	s := swarm.Define[shot, verdict]("inspect", "", func(shot) swarm.Spec { return swarm.Spec{Instructions: "Inspect."} })
	rt, _ := newRuntime(t, scripted.Script{"inspect": {
		{ExpectParts: []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/jpeg", MinBytes: len(photo)}}, Text: string(out)},
	}}, nil)
	res, run, err := s.Run(ctx, rt, shot{Caption: "the garden", Photo: model.Image("image/jpeg", photo)})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := res.(swarm.Completed[verdict])
	if !ok {
		evs, _ := rt.History(ctx, run.ID(), 0)
		for _, ev := range evs {
			t.Logf("%s %.300s", ev.Type, ev.Text)
		}
		t.Fatalf("result: %#v", res)
	}
	if c.Output.Summary != "one cat" || len(c.Output.Crops) != 2 || !bytes.Equal(c.Output.Crops[0].Data, crop) || c.Output.Crops[1].URL != "https://example.com/c.png" {
		t.Fatalf("Output: %v", c.Output)
	}
	if len(c.Parts) != 2 || !bytes.Equal(c.Parts[0].Data, crop) || c.Parts[1].URL == "" {
		t.Fatalf("Parts: %v", c.Parts)
	}
	evs, err := rt.History(ctx, run.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == swarm.EventModelResponse {
			continue // the model's own text: it wrote the crop as base64
		}
		b, _ := json.Marshal(ev)
		for _, data := range [][]byte{photo, crop} {
			if bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString(data[:30]))) {
				t.Errorf("%s event holds a part's bytes", ev.Type)
			}
		}
		if ev.Type == swarm.EventCompleted && !strings.Contains(string(ev.Result), store.BlobHash(crop)) {
			t.Errorf("completed result %s: want the crop by reference", ev.Result)
		}
		if ev.Type == swarm.EventStarted && !strings.Contains(string(ev.Input), store.BlobHash(photo)) {
			t.Errorf("started input %s: want the photo by reference", ev.Input)
		}
	}
}

// A typed result naming a blob its run does not hold (a model may write
// any hash, another run's too) completes without that part and without
// its bytes.
func TestTypedResultForeignBlob(t *testing.T) {
	ctx := ctxT(t)
	st := memory.New()
	secret := randomBytes(t, 10<<10)
	hash, err := st.PutBlob(ctx, mustRun(t, st), secret)
	if err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprintf(`{"summary":"stolen","crops":[{"type":"image","media_type":"image/png","blob":%q,"size":%d}]}`, hash, len(secret))
	s := swarm.Define[string, verdict]("thief", "", nil)
	rt, _ := newRuntime(t, scripted.Script{"thief": {scripted.Text(out)}}, st)
	res, _, err := s.Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := res.(swarm.Completed[verdict])
	if !ok || len(c.Parts) != 0 || len(c.Output.Crops) != 1 || len(c.Output.Crops[0].Data) != 0 {
		t.Fatalf("result: %#v; want no part and no bytes of another run's blob", res)
	}
}

// mustRun creates a run in st to own blobs.
func mustRun(t *testing.T, st store.Store) string {
	t.Helper()
	if _, err := st.Create(ctxT(t), store.Run{ID: "other", Swarm: "x", State: store.Running}, "o", time.Minute, []store.Record{{Key: "start", Type: "started", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	return "other"
}
