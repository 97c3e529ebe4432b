package swarm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
)

// screenDesk is a conversation whose desk agent may transfer to billing
// and hand off to the viewer swarm.
func screenDesk() (*conversation.Conversation[struct{}], *swarm.Swarm[string, string]) {
	viewer := swarm.Define[string, string]("viewer", "Looks at images", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Describe what you see."}
	})
	desk := &swarm.Agent{Name: "desk", Instructions: "Help.", Handoffs: []swarm.Handoff{swarm.ToSwarm(viewer)}}
	billing := &swarm.Agent{Name: "billing", Description: "Billing", Instructions: "Answer billing questions."}
	conv := conversation.Define("screens", "", conversation.Spec[struct{}]{
		Queen: desk, Agents: []*swarm.Agent{billing},
		Handovers: map[string][]conversation.Handover{"desk": {{To: "billing"}}},
	})
	return conv, viewer
}

// userParts returns the parts of the last user message of req.
func userParts(req model.Request) []model.Part {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.RoleUser {
			return req.Messages[i].Parts
		}
	}
	return nil
}

// The second message of a conversation carries a screenshot: the model
// answering it gets the image on that turn's user message, an agent it
// transfers to and a swarm it hands off to see it too, and the first
// turn saw none.
func TestConversationMessageParts(t *testing.T) {
	ctx := ctxT(t)
	shot := randomBytes(t, 8<<10) // over the blob threshold: kept by reference
	see := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: len(shot)}}
	conv, viewer := screenDesk()
	rt, rec := convRuntime(t, scripted.Script{
		"desk": {
			scripted.Text("hello"),
			{ExpectParts: see, ToolCalls: []scripted.ToolCall{scripted.CallTool("handoff_to_viewer", map[string]any{"request": "describe it"})}},
			{ExpectParts: see, ToolCalls: []scripted.ToolCall{scripted.CallTool("transfer_to_billing", nil)}},
		},
		"viewer":  {{ExpectParts: see, Text: "an invoice"}},
		"billing": {{ExpectParts: see, Text: "the invoice is due"}},
	}, nil)
	for _, d := range []swarm.Definition{viewer, conv} {
		if err := rt.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	session, err := conv.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := session.Say(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	reply, err := session.Say(ctx, "what is in this screenshot?", swarm.WithMessageParts(model.Image("image/png", shot)))
	if err != nil || reply.Text != "the invoice is due" {
		t.Fatalf("reply %+v, %v", reply, err)
	}
	reqs := rec.Requests("desk")
	if len(reqs) != 3 {
		t.Fatalf("%d requests of desk, want 3", len(reqs))
	}
	if p := userParts(reqs[0]); len(p) != 0 {
		t.Errorf("the first turn's user message has parts %v", p)
	}
	if p := userParts(reqs[1]); len(p) != 1 || string(p[0].Data) != string(shot) {
		t.Errorf("the second turn's user message has parts %v, want the screenshot", p)
	}
	viewed := false
	for _, m := range reqs[2].Messages {
		viewed = viewed || m.Role == model.RoleTool && m.Content == "an invoice" && !m.IsError
	}
	if !viewed {
		t.Error("the viewer swarm did not answer: it did not see the screenshot")
	}
	// The journal holds the screenshot by reference.
	var resumed *swarm.Event
	evs, err := rt.History(ctx, session.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == swarm.EventResumed && ev.Key == "m2/await/resumed" {
			resumed = &ev
		}
	}
	if resumed == nil || len(resumed.Parts) != 1 || resumed.Parts[0].Blob != store.BlobHash(shot) || resumed.Parts[0].Data != nil {
		t.Fatalf("resumed event of message 2: %+v, want the screenshot by reference", resumed)
	}
	// A fork from the answer to message 2 shares the screenshot's blob.
	forked, err := rt.Fork(ctx, session.ID(), "m2/t1/model")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Store().(store.Blobs).Blob(ctx, forked, store.BlobHash(shot)); err != nil {
		t.Errorf("the fork does not refer to the screenshot: %v", err)
	}
}

// A crash after a message with an image is sent and before it is
// answered: the process that recovers the conversation gives the model
// the same image, and the store holds its bytes once.
func TestConversationMessagePartsCrash(t *testing.T) {
	ctx := ctxT(t)
	shot := randomBytes(t, 1<<20)
	st, raw := measuredSQLite(t)
	conv, viewer := screenDesk()

	// Process A answers message 1, then dies inside the model call of
	// message 2.
	calling := make(chan struct{}, 1)
	first := scripted.New(scripted.Script{"desk": {scripted.Text("hello")}})
	calls := 0
	a, err := swarm.New(swarm.Config{Store: st, RetryBackoff: time.Millisecond, Owner: "A", Lease: time.Minute,
		Model: model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			if calls++; calls == 1 {
				return first.Generate(ctx, req)
			}
			calling <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []swarm.Definition{viewer, conv} {
		if err := a.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	session, err := conv.Start(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := session.Say(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	said := make(chan error, 1)
	sayCtx, cancelSay := context.WithCancel(ctx)
	go func() {
		_, err := session.Say(sayCtx, "what is in this screenshot?", swarm.WithMessageParts(model.Image("image/png", shot)))
		said <- err
	}()
	select {
	case <-calling:
	case <-ctx.Done():
		t.Fatal("message 2 never reached the model")
	}
	a.Close()
	cancelSay() // the process is gone: its Say ends without an answer
	<-said

	see := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: len(shot)}}
	b, err := swarm.New(swarm.Config{Store: st, RetryBackoff: time.Millisecond, Owner: "B",
		Model: scripted.New(scripted.Script{"desk": {scripted.Text("hello"), {ExpectParts: see, Text: "an invoice"}}})})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, d := range []swarm.Definition{viewer, conv} {
		if err := b.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Settle(ctx, session.ID()); err != nil {
		t.Fatal(err)
	}
	var reply *swarm.Event
	evs, err := b.History(ctx, session.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == swarm.EventReply && ev.Key == "m2/reply" {
			reply = &ev
		}
	}
	if reply == nil || reply.IsError || reply.Text != "an invoice" {
		t.Fatalf("reply to message 2 after recovery: %+v", reply)
	}
	var blobs, blobBytes, journal int64
	if err := raw.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(length(data)), 0) FROM blobs`).Scan(&blobs, &blobBytes); err != nil {
		t.Fatal(err)
	}
	if err := raw.QueryRowContext(ctx, `SELECT coalesce(sum(length(data)), 0) FROM journal`).Scan(&journal); err != nil {
		t.Fatal(err)
	}
	if blobs != 1 || blobBytes != int64(len(shot)) || journal > int64(len(shot))/10 {
		t.Errorf("store holds %d blobs of %d bytes and a journal of %d bytes; want the screenshot once (%d bytes), by reference", blobs, blobBytes, journal, len(shot))
	}
}

// A message whose parts are bad is refused before anything is sent or
// stored: the conversation still awaits its message.
func TestSayRefusesBadParts(t *testing.T) {
	ctx := ctxT(t)
	st := memory.New()
	conv, viewer := screenDesk()
	rt, _ := convRuntime(t, scripted.Script{"desk": {scripted.Text("hello")}}, st)
	for _, d := range []swarm.Definition{viewer, conv} {
		if err := rt.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	session, err := conv.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	before, err := rt.Status(ctx, session.ID())
	if err != nil {
		t.Fatal(err)
	}
	other := randomBytes(t, 8<<10)
	for _, c := range []struct {
		what string
		part model.Part
		want string
	}{
		{"an unknown blob", model.Part{Type: model.PartImage, MediaType: "image/png", Blob: store.BlobHash(other), Size: int64(len(other))}, "blob"},
		{"an invalid part", model.Part{Type: model.PartImage, MediaType: "text/plain", Data: []byte("x")}, "part 0"},
		{"an oversized part", model.Image("image/png", make([]byte, store.MaxBlobBytes+1)), "over the limit"},
	} {
		_, err := session.Say(ctx, "look", swarm.WithMessageParts(c.part))
		if !errors.Is(err, swarm.ErrInvalidInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("a message with %s: %v, want ErrInvalidInput naming %q", c.what, err, c.want)
		}
		st2, err := rt.Status(ctx, session.ID())
		if err != nil || st2.State != swarm.StatePaused || st2.LastSeq != before.LastSeq {
			t.Fatalf("after a message with %s: %+v, %v; want the run as it was", c.what, st2, err)
		}
		if in, err := st.Inbox(ctx, session.ID()); err != nil || len(in) != 0 {
			t.Fatalf("after a message with %s: inbox %+v, %v", c.what, in, err)
		}
		if _, err := st.Blob(ctx, session.ID(), store.BlobHash(c.part.Data)); !errors.Is(err, store.ErrNoBlob) {
			t.Fatalf("after a message with %s: its bytes were stored (%v)", c.what, err)
		}
	}
	// A part is a message on its own: no text is needed.
	reply, err := session.Say(ctx, "", swarm.WithMessageParts(model.Image("image/png", other)))
	if err != nil || reply.Text != "hello" {
		t.Fatalf("a message of an image alone: %+v, %v", reply, err)
	}
}
