package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
)

// A teammate's mailbox: the lead posts, the teammate reads and
// acknowledges what it read in the append that journals its turn.
func Example_mailboxes() {
	ctx := context.Background()
	var s store.Store = memory.New()
	defer s.Close()
	l, _ := s.Create(ctx, store.Run{ID: "bob"}, "node-1", time.Minute, nil)

	mb, ok := s.(store.Mailboxes)
	if !ok {
		fmt.Println("this store keeps no mailboxes")
		return
	}
	for i, text := range []string{"please run the tests", "and report back"} {
		m := store.Mail{ID: fmt.Sprint("lead-", i), From: "lead", Type: "message", Content: text}
		if _, err := mb.Post(ctx, []string{"bob"}, m); err != nil {
			fmt.Println(err)
			return
		}
	}
	mails, cursor, _ := mb.Mailbox(ctx, "bob", 0)
	for _, m := range mails {
		fmt.Printf("%d %s: %s\n", m.Seq, m.From, m.Content)
	}
	turn := []store.Record{{Key: "turn-1", Type: "turn", Time: time.Now()}}
	if _, err := s.Append(ctx, l, turn, store.Update{AckMail: mails[len(mails)-1].Seq}); err != nil {
		fmt.Println(err)
		return
	}
	mails, cursor2, _ := mb.Mailbox(ctx, "bob", 0)
	fmt.Printf("cursor %d -> %d, %d unread\n", cursor, cursor2, len(mails))

	_, err := mb.Post(ctx, []string{"bob", "alice"}, store.Mail{ID: "lead-2", Content: "hi"})
	fmt.Println(err)
	// Output:
	// 1 lead: please run the tests
	// 2 lead: and report back
	// cursor 0 -> 2, 0 unread
	// post mail "lead-2": run "alice": run not found
}

// A run tree's root created with its first block of model and tool calls
// already taken from its budget pool, in one step (store.Reserver).
func Example_createReserving() {
	ctx := context.Background()
	var s store.Store = memory.New()
	defer s.Close()
	rs, ok := s.(store.Reserver)
	if !ok {
		fmt.Println("this store creates runs without reserving")
		return
	}
	l, p, err := rs.CreateReserving(ctx, store.Run{ID: "root"}, "node-1", time.Minute, nil, store.Pool{Calls: 15, Tools: 32})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(l.Epoch, p.Calls, p.Tools)
	// Output: 1 15 32
}
