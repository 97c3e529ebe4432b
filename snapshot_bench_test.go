package swarm_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/conversation/conversationtest"
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
	var steps []scripted.Step
	for i := range 2000 + 100000 {
		steps = append(steps, scripted.Tools(scripted.CallTool("lookup_customer", map[string]any{"name": fmt.Sprint("c", i)})), scripted.Text(fmt.Sprint("answer ", i)))
	}
	recover10k(b, shop(conversationtest.NewEffects(), nil), scripted.Script{"receptionist": steps})
}

// BenchmarkRecover10kCompacted is BenchmarkRecover10k for a conversation
// whose history is compacted (two tool calls in every message, and a
// summary every few messages), and the same conversation without
// compaction.
//
//	go test -run XXX -bench Recover10kCompacted -benchtime 20x .
func BenchmarkRecover10kCompacted(b *testing.B) {
	script := chatScript(1000+10000, -1)
	b.Run("compacted", func(b *testing.B) {
		recover10k(b, chatConv(&compact.Config{Window: 1500, Trigger: 0.7, Keep: 1}, conversation.HistoryOwnTools), script)
	})
	b.Run("whole", func(b *testing.B) { recover10k(b, chatConv(nil, conversation.HistoryOwnTools), script) })
}

// recover10k talks to conv, played by script, until its journal holds
// 10,000 records, then measures one more message replaying the journal
// and continuing from a snapshot.
func recover10k(b *testing.B, conv *conversation.Conversation[Sale], script scripted.Script) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	open := func(every int) *conversation.Session[Sale] {
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
