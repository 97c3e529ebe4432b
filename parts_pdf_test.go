package swarm_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
)

// A 5 MB PDF rides through a 10-turn run that crashes at turn 5 and is
// recovered, with a snapshot every record, and is then forked at turn 7:
// every model call of the origin and the fork receives the whole PDF, and
// the SQLite database holds its bytes once. The check is on the store's
// size on disk, not only on the blob table.
func TestPDFThroughTenTurnsStoredOnce(t *testing.T) {
	ctx := ctxT(t)
	pdf := append([]byte("%PDF-1.7\n"), randomBytes(t, 5<<20)...)
	st, raw := measuredSQLite(t)

	holding, release := make(chan struct{}, 1), make(chan struct{})
	note := swarm.NewTool("note", "takes a note", func(context.Context, struct{}) (string, error) { return "noted", nil })
	s := swarm.Define[string, string]("reader", "", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Read the report.", Tools: []swarm.Tool{note, holdTool(holding, release)}}
	})
	seePDF := []scripted.ExpectPart{{Type: model.PartFile, MediaType: "application/pdf", Name: "report.pdf", MinBytes: len(pdf)}}
	var steps []scripted.Step
	for turn := 1; turn <= 10; turn++ {
		step := scripted.Step{ExpectParts: seePDF, ToolCalls: []scripted.ToolCall{scripted.CallTool("note", nil)}}
		switch turn {
		case 5:
			step.ToolCalls = []scripted.ToolCall{scripted.CallTool("hold", nil)}
		case 10:
			step = scripted.Step{ExpectParts: seePDF, Text: "a report on the harvest"}
		}
		steps = append(steps, step)
	}
	script := scripted.Script{"reader": steps}
	cfg := func(owner string) swarm.Config {
		return swarm.Config{Store: st, Model: scripted.New(script), RetryBackoff: time.Millisecond, Owner: owner, SnapshotEvery: 1, Lease: time.Minute}
	}

	a, err := swarm.New(cfg("A"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Register(s); err != nil {
		t.Fatal(err)
	}
	run, err := s.Start(ctx, a, "summarise it", swarm.WithParts(model.File("report.pdf", "application/pdf", pdf)))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-holding: // four turns journaled, the fifth in its tool call
	case <-ctx.Done():
		t.Fatal("the run never reached turn 5")
	}
	a.Close() // the process goes away mid-run

	b, err := swarm.New(cfg("B"))
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
	if stat, err := b.Wait(ctx, run.ID()); err != nil || stat.State != store.Completed {
		t.Fatalf("after recovery: %+v, %v", stat, err)
	}
	if sn, err := st.Snapshot(ctx, run.ID()); err != nil || len(sn.Data) > 64<<10 {
		t.Fatalf("snapshot: %d bytes, %v; want a small one holding a reference", len(sn.Data), err)
	}

	// A fork at the seventh model call continues with the PDF too.
	recs, err := st.Read(ctx, run.ID(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var at string
	calls := 0
	for _, rec := range recs {
		if rec.Type == string(swarm.EventModelResponse) {
			if calls++; calls == 7 {
				at = rec.Key
			}
		}
	}
	if calls != 10 || at == "" {
		t.Fatalf("the origin made %d model calls, want 10", calls)
	}
	fork, err := b.Fork(ctx, run.ID(), at)
	if err != nil {
		t.Fatal(err)
	}
	if fs, err := b.Wait(ctx, fork); err != nil || fs.State != store.Completed {
		t.Fatalf("fork: %+v, %v", fs, err)
	}

	var blobBytes sql.NullInt64
	if err := raw.QueryRowContext(ctx, `SELECT sum(length(data)) FROM blobs`).Scan(&blobBytes); err != nil {
		t.Fatal(err)
	}
	if blobBytes.Int64 != int64(len(pdf)) {
		t.Errorf("blob table holds %d bytes, want the PDF's %d once", blobBytes.Int64, len(pdf))
	}
	if _, err := raw.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	var pages, pageSize, free int64
	for q, v := range map[string]*int64{"PRAGMA page_count": &pages, "PRAGMA page_size": &pageSize, "PRAGMA freelist_count": &free} {
		if err := raw.QueryRowContext(ctx, q).Scan(v); err != nil {
			t.Fatal(err)
		}
	}
	used := (pages - free) * pageSize
	t.Logf("5 MB PDF, 10 turns, a crash, a snapshot a record and a fork: %d bytes in use in the database, %d of them the PDF", used, len(pdf))
	// Within 5% of the PDF plus the two runs' text: storing it twice
	// would double it.
	if limit := int64(len(pdf)) * 105 / 100; used > limit {
		t.Errorf("the database uses %d bytes, over %d (the PDF once plus 5%%)", used, limit)
	}
}
