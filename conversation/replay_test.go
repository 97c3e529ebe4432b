package conversation_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/conversation/conversationtest"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/swarmtest/strategytest"
)

// reading is a memory store that counts the journal records it reads.
type reading struct {
	*memory.Store
	records atomic.Int64
}

func (s *reading) Read(ctx context.Context, id string, after int64, limit int) ([]store.Record, error) {
	recs, err := s.Store.Read(ctx, id, after, limit)
	s.records.Add(int64(len(recs)))
	return recs, err
}

// say says n messages in sess and returns how many journal records each
// one read.
func say(t *testing.T, st *reading, sess *conversation.Session[Sale], n int) []int64 {
	t.Helper()
	ctx := ctxT(t)
	read := make([]int64, n)
	for i := range n {
		before := st.records.Load()
		if r, err := sess.Say(ctx, "hello"); err != nil || r.Text != "ok" {
			t.Fatalf("message %d: reply %+v, %v", i+1, r, err)
		}
		read[i] = st.records.Load() - before
	}
	return read
}

// A message to a long conversation replays no more of the journal than
// one to a short one: the conversation checkpoints at every message, so
// the run reads its newest checkpoint and the few records after it
// instead of every earlier message (which made each message cost more
// than the one before, until a snapshot every Config.SnapshotEvery
// records).
func TestConversationSayReadsABoundedJournal(t *testing.T) {
	ctx := ctxT(t)
	st := &reading{Store: memory.New()}
	rt, err := swarm.New(swarm.Config{Store: st, Model: answering, MaxModelCalls: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sess, err := shop(conversationtest.NewEffects(), nil).Start(ctx, rt, swarm.WithID("chat"))
	if err != nil {
		t.Fatal(err)
	}
	read := say(t, st, sess, 40)
	if early, late := slices.Max(read[2:10]), slices.Max(read[30:]); late > early {
		t.Errorf("a message read %d journal records at 30 messages and more, %d at 3 to 10: %v", late, early, read)
	}
	tr, err := sess.Transcript(ctx)
	if err != nil || len(tr) != 80 {
		t.Fatalf("transcript of %d utterances (%v), want 80", len(tr), err)
	}
}

// A conversation journaled without checkpoints (by a runtime that kept no
// snapshots, or before conversations checkpointed every message) goes on
// where it was: its journal is replayed from its start once, and its
// messages are then checkpointed.
func TestConversationWithoutCheckpointsGoesOn(t *testing.T) {
	ctx := ctxT(t)
	st := &reading{Store: memory.New()}
	conv := shop(conversationtest.NewEffects(), nil)
	old, err := swarm.New(swarm.Config{Store: st, Model: answering, MaxModelCalls: -1, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := conv.Start(ctx, old, swarm.WithID("chat"))
	if err != nil {
		t.Fatal(err)
	}
	say(t, st, sess, 12)
	old.Close()
	if _, err := st.Snapshot(ctx, "chat"); err == nil {
		t.Fatal("a runtime without snapshots left one")
	}

	rt, err := swarm.New(swarm.Config{Store: st, Model: answering, MaxModelCalls: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if sess, err = conv.Attach(ctx, rt, "chat"); err != nil {
		t.Fatal(err)
	}
	read := say(t, st, sess, 8)
	if read[len(read)-1] >= read[0] {
		t.Errorf("records read per message %v: the first replays the whole journal, the next ones only since the newest checkpoint", read)
	}
	tr, err := sess.Transcript(ctx)
	if err != nil || len(tr) != 40 {
		t.Fatalf("transcript of %d utterances (%v), want 40", len(tr), err)
	}
	for i, u := range tr {
		if want := map[bool]string{true: "hello", false: "ok"}[i%2 == 0]; u.Text != want {
			t.Fatalf("utterance %d is %+v, want %q", i, u, want)
		}
	}
}

// The conformance kit on a conversation of four messages, each checkpointed
// when the next one comes: a crash at any record, before or after a
// checkpoint, recovers to the same replies, context and journal, with the
// tool that changes the context and the handover after two checkpoints.
func TestConformanceAcrossCheckpoints(t *testing.T) {
	desk := frontDesk()
	strategytest.Run(t, strategytest.Case{
		Definitions: []swarm.Definition{desk},
		Swarm:       "shop",
		Answers:     []string{"hello", "I'm Ada", "CRM please", "thanks"},
		Want:        swarm.StatePaused,
		Check: func(t *testing.T, rt *swarm.Runtime, id string) {
			var replies []string
			for _, ev := range swarmtest.Events(t, rt, id) {
				if strings.HasSuffix(ev.Key, "/reply") {
					replies = append(replies, ev.Agent+": "+ev.Text+" "+string(ev.Shared))
				}
			}
			want := []string{
				`receptionist: Hello! {"customer":"","topic":""}`,
				`receptionist: Hi Ada. {"customer":"Ada","topic":""}`,
				`sales: CRM for Ada. {"customer":"Ada","topic":"CRM"}`,
				`sales: You're welcome. {"customer":"Ada","topic":"CRM"}`,
			}
			if !slices.Equal(replies, want) {
				t.Errorf("replies %q, want %q", replies, want)
			}
		},
		Script: scripted.Script{
			"receptionist": {
				scripted.Text("Hello!"),
				scripted.Tools(scripted.CallTool("lookup_customer", map[string]any{"name": "Ada"})),
				scripted.Text("Hi Ada."),
				scripted.Tools(scripted.CallTool("transfer_to_sales", map[string]any{"topic": "CRM"})),
			},
			"sales": {scripted.Text("CRM for Ada."), scripted.Text("You're welcome.")},
		},
	})
}
