package conversation_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/conversation/conversationtest"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/sqlite"
)

// answering is a model that answers every call with "ok".
var answering = model.Func(func(context.Context, *model.Request) (*model.Response, error) {
	return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "ok"}}, nil
})

// BenchmarkConversationSayAt measures one user message answered by one
// model call in a session that already holds about at messages, on the
// memory store and on SQLite: what a long conversation's next message
// costs, replay of the earlier ones included. The session is started
// again every few messages, so that b.N does not move it far from at.
func BenchmarkConversationSayAt(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"memory", func(*testing.B) store.Store { return memory.New() }},
		{"sqlite", func(b *testing.B) store.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "swarm.db"))
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
	}
	for _, s := range stores {
		for _, at := range []int{10, 100, 500} {
			b.Run(s.name+"/at="+strconv.Itoa(at), func(b *testing.B) {
				benchSayAt(b, s.open(b), at)
			})
		}
	}
}

// sayWindow is how many messages a benchmark says in one session before
// it starts another.
const sayWindow = 10

func benchSayAt(b *testing.B, st store.Store, at int) {
	rt, err := swarm.New(swarm.Config{Store: st, Model: answering, MaxModelCalls: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	conv := shop(conversationtest.NewEffects(), nil)
	var sess *conversation.Session[Sale]
	fresh := func(i int) {
		sess, err = conv.Start(ctx, rt, swarm.WithID("chat-"+strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		for range at {
			if _, err := sess.Say(ctx, "hello"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%sayWindow == 0 {
			b.StopTimer()
			fresh(i)
			b.StartTimer()
		}
		if _, err := sess.Say(ctx, "hello"); err != nil {
			b.Fatal(err)
		}
	}
}
