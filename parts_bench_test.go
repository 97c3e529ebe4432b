package swarm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/sqlite"
)

// countedStore is a SQLite store that counts the bytes of the snapshots
// written, and keeps blobs only when blobs is set (else parts stay
// inline, as in a store without store.Blobs).
type countedStore struct {
	store.Store
	db        *sqlite.Store
	snapBytes *atomic.Int64
}

func (c countedStore) PutSnapshot(ctx context.Context, id string, s store.Snapshot) error {
	c.snapBytes.Add(int64(len(s.Data)))
	return c.db.PutSnapshot(ctx, id, s)
}

func (c countedStore) Snapshot(ctx context.Context, id string) (store.Snapshot, error) {
	return c.db.Snapshot(ctx, id)
}

type countedBlobStore struct {
	countedStore
	store.Blobs
}

// BenchmarkPartsJournal runs a 10-turn run (nine tool rounds and the
// answer) with a 2 MB image attached, on SQLite with a snapshot every 4
// records, and reports the bytes journaled, written to snapshots and kept
// as blobs: inline (a store without blobs) against blob references, and
// a text-only run for reference.
func BenchmarkPartsJournal(b *testing.B) {
	img := randomBytes(b, 2<<20)
	for _, mode := range []string{"text-only", "inline", "blobs"} {
		b.Run(mode, func(b *testing.B) {
			var journal, snaps, blobs, n int64
			for b.Loop() {
				j, s, bl := partsRun(b, mode, img)
				journal, snaps, blobs, n = journal+j, snaps+s, blobs+bl, n+1
			}
			b.ReportMetric(float64(journal)/float64(n), "journal-B/run")
			b.ReportMetric(float64(snaps)/float64(n), "snapshot-B/run")
			b.ReportMetric(float64(blobs)/float64(n), "blob-B/run")
			b.ReportMetric(float64(journal+snaps+blobs)/float64(n), "total-B/run")
		})
	}
}

func partsRun(b *testing.B, mode string, img []byte) (journal, snaps, blobs int64) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var snapBytes atomic.Int64
	var st store.Store = countedStore{Store: db, db: db, snapBytes: &snapBytes}
	if mode == "blobs" {
		st = countedBlobStore{countedStore: st.(countedStore), Blobs: db}
	}
	look := swarm.NewTool("look", "looks closer", func(context.Context, struct{}) (string, error) {
		return "a detail of the picture", nil
	})
	s := swarm.Define[string, string]("vision", "", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Describe the picture.", Tools: []swarm.Tool{look}}
	})
	var steps []scripted.Step
	for range 9 {
		steps = append(steps, scripted.Tools(scripted.CallTool("look", nil)))
	}
	steps = append(steps, scripted.Text("a cat"))
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(scripted.Script{"vision": steps}), SnapshotEvery: 4, RetryBackoff: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(s); err != nil {
		b.Fatal(err)
	}
	var opts []swarm.StartOption
	if mode != "text-only" {
		opts = append(opts, swarm.WithParts(model.Image("image/png", img)))
	}
	res, run, err := s.Run(ctx, rt, "what is it?", opts...)
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := res.(swarm.Completed[string]); !ok {
		b.Fatalf("run: %#v", res)
	}
	recs, err := db.Read(ctx, run.ID(), 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range recs {
		journal += int64(len(r.Data))
	}
	if mode == "blobs" {
		blobs = int64(len(img))
		if got, err := db.Blob(ctx, run.ID(), store.BlobHash(img)); err != nil || len(got) != len(img) {
			b.Fatal(fmt.Errorf("blob: %d bytes, %w", len(got), err))
		}
	}
	return journal, snapBytes.Load(), blobs
}
