package swarm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/sqlite"
)

// BenchmarkRecover10k measures what a long conversation costs at each
// message, which is a recovery: the run is paused between messages, and
// the message is answered by a drive that rebuilds the run's state from
// the store, as a process that starts after a crash does. The conversation
// has 10,000 journal records (a tool call in every message) in SQLite; one
// operation is one more message, with the journal replayed from its start
// or continued from the newest snapshot.
//
//	go test -run XXX -bench Recover10k -benchtime 50x .
func BenchmarkRecover10k(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const extra = 100000
	var steps []scripted.Step
	for i := range 2000 + extra {
		steps = append(steps, scripted.Tools(scripted.CallTool("lookup_customer", map[string]any{"name": fmt.Sprint("c", i)})), scripted.Text(fmt.Sprint("answer ", i)))
	}
	script := scripted.Script{"receptionist": steps}
	conv := shop(&effects{n: map[string]int{}}, nil)
	open := func(every int) *swarm.Session[Sale] {
		// One long conversation: more model calls than a run tree may
		// make by default.
		rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), SnapshotEvery: every, MaxModelCalls: -1, MaxToolCalls: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rt.Close() })
		sess, err := conv.Start(ctx, rt, swarm.WithID("long"))
		if err != nil {
			b.Fatal(err)
		}
		return sess
	}
	sess := open(0)
	for i := 0; ; i++ {
		if run, _ := st.Get(ctx, "long"); run.LastSeq >= 10000 {
			b.Logf("%d records, %d messages", run.LastSeq, i)
			break
		}
		if _, err := sess.Say(ctx, fmt.Sprint("message ", i)); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []struct {
		name  string
		every int
	}{{"journal", -1}, {"snapshots", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			sess := open(mode.every)
			for i := 0; b.Loop(); i++ {
				if _, err := sess.Say(ctx, fmt.Sprint("more ", i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
