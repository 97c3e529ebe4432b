package swarm_test

import (
	"bytes"
	"context"
	"database/sql"
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
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/swarmtest"
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
	register(t, rt, viewer, conv)
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
	register(t, a, viewer, conv)
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
	register(t, b, viewer, conv)
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
	register(t, rt, viewer, conv)
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

// askingViewer is the script of screenDesk's conversation in which the
// viewer swarm the desk hands off to asks the human for the screenshot
// (its pause tool) and describes it once answered.
func askingViewer(shot []byte) scripted.Script {
	see := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: len(shot)}}
	return scripted.Script{
		"desk": {
			scripted.Tools(scripted.CallTool("handoff_to_viewer", map[string]any{"request": "look at the user's screen"})),
			scripted.Text("it shows an invoice"),
		},
		"viewer": {
			scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "send me the screenshot"})),
			{ExpectParts: see, Text: "an invoice"},
		},
	}
}

// shotAndStore returns a screenshot of 1 MiB, over the blob threshold,
// and a measured SQLite store (see measuredSQLite).
func shotAndStore(t *testing.T) ([]byte, *sqlite.Store, *sql.DB) {
	t.Helper()
	st, raw := measuredSQLite(t)
	return randomBytes(t, 1<<20), st, raw
}

// holdsBytes reports whether a message of req carries a part whose bytes
// are data.
func holdsBytes(req model.Request, data []byte) bool {
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if bytes.Equal(p.Data, data) {
				return true
			}
		}
	}
	return false
}

// checkChildGotParts checks that child run id, answered with shot through
// its parent, completed, journaled the answer's parts by reference, refers to the
// blob, and that its model's last request (in reqs) held the bytes; the
// store holds them once.
func checkChildGotParts(t *testing.T, rt *swarm.Runtime, child string, reqs []model.Request, shot []byte, blobBytes int64) {
	t.Helper()
	ctx := ctxT(t)
	if s, err := rt.Status(ctx, child); err != nil || s.State != swarm.StateCompleted || string(s.Result) != `"an invoice"` {
		t.Fatalf("the child after the answer: %+v, %v", s, err)
	}
	if len(reqs) == 0 || !holdsBytes(reqs[len(reqs)-1], shot) {
		t.Errorf("the child's model did not get the screenshot sent with the answer (%d requests)", len(reqs))
	}
	evs, err := rt.History(ctx, child, 0)
	if err != nil {
		t.Fatal(err)
	}
	resumed, ok := eventOf(evs, swarm.EventResumed, nil)
	if !ok || len(resumed.Parts) != 1 || resumed.Parts[0].Blob != store.BlobHash(shot) || resumed.Parts[0].Data != nil {
		t.Errorf("the child's resumed event %+v; want the screenshot by reference", resumed)
	}
	if got, err := rt.Store().(store.Blobs).Blob(ctx, child, store.BlobHash(shot)); err != nil || !bytes.Equal(got, shot) {
		t.Errorf("the child does not refer to the screenshot: %d bytes, %v", len(got), err)
	}
	size := 0
	for _, rec := range journal(t, rt, child) {
		size += len(rec.Data)
	}
	if size > 32<<10 {
		t.Errorf("the child's journal holds %d bytes, want references only", size)
	}
	if blobBytes != int64(len(shot)) {
		t.Errorf("the blob table holds %d bytes, want the screenshot once (%d)", blobBytes, len(shot))
	}
}

// askedForScreen starts screenDesk's conversation on rt and sends its
// first message, to which the viewer swarm asks for the screenshot
// (askingViewer). It returns the conversation's run id and the viewer's.
func askedForScreen(t *testing.T, rt *swarm.Runtime, conv *conversation.Conversation[struct{}]) (string, string) {
	t.Helper()
	ctx := ctxT(t)
	session, err := conv.Start(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := session.Say(ctx, "what is on my screen?")
	if err != nil || rep.Waiting != "send me the screenshot" {
		t.Fatalf("first message: %+v, %v; want the viewer's question", rep, err)
	}
	kids := children(t, rt, session.ID())
	if len(kids) != 1 || kids[0].State != swarm.StatePaused {
		t.Fatalf("children %+v", kids)
	}
	return session.ID(), kids[0].ID
}

// settledAwaiting checks that conversation id settles, awaiting its next
// message.
func settledAwaiting(t *testing.T, rt *swarm.Runtime, id string) {
	t.Helper()
	if s, err := rt.Settle(ctxT(t), id); err != nil || s.State != swarm.StatePaused || s.Reason != swarm.AwaitingMessage {
		t.Fatalf("conversation %s: %+v, %v; want it awaiting a message", id, s, err)
	}
}

// A swarm that a conversation's agent hands off to asks the human for a
// screenshot: the message that answers it, sent with Say or Resume and
// the screenshot, reaches the child with the screenshot, whose model gets
// its bytes; the child journals it by reference and refers to the blob,
// stored once.
func TestChildPauseAnswerCarriesParts(t *testing.T) {
	for _, via := range []string{"say", "resume"} {
		t.Run(via, func(t *testing.T) {
			ctx := ctxT(t)
			shot, st, raw := shotAndStore(t)
			conv, viewer := screenDesk()
			rt, rec := convRuntime(t, askingViewer(shot), st)
			if err := rt.Register(viewer, conv); err != nil {
				t.Fatal(err)
			}
			id, child := askedForScreen(t, rt, conv)
			shotPart := model.Image("image/png", shot)
			switch via {
			case "say":
				reply, _, err := rt.Say(ctx, id, "here it is", swarm.WithMessageParts(shotPart))
				if err != nil || reply == nil || reply.Text != "it shows an invoice" {
					t.Fatalf("reply %+v, %v", reply, err)
				}
			case "resume":
				if err := rt.Resume(ctx, id, "here it is", swarm.ResumeParts(shotPart)); err != nil {
					t.Fatal(err)
				}
				settledAwaiting(t, rt, id)
			}
			checkChildGotParts(t, rt, child, rec.Requests("viewer"), shot, blobTableBytes(t, raw))
		})
	}
}

// A process dies right after journaling the answer (with a screenshot)
// to a question its child swarm asked, before passing it down: the
// process that recovers the run gives the child the same screenshot, by
// reference, stored once.
func TestChildPauseAnswerPartsCrash(t *testing.T) {
	ctx := ctxT(t)
	shot, st, raw := shotAndStore(t)
	conv, viewer := screenDesk()
	open := func(s store.Store, owner string) (*swarm.Runtime, *convRecorder) {
		rec := &convRecorder{Script: scripted.New(askingViewer(shot))}
		rt, err := swarm.New(swarm.Config{Store: s, Model: rec.Model(), Owner: owner, Lease: 60 * time.Millisecond,
			RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close() })
		if err := rt.Register(viewer, conv); err != nil {
			t.Fatal(err)
		}
		return rt, rec
	}
	// A dies right after the conversation journals the answer to the
	// child's question.
	dying := &dieAfter{Killable: swarmtest.NewKillable(t, st), match: func(r *store.Record) bool {
		return r.Type == string(swarm.EventResumed) && strings.Contains(r.Key, "/pause/")
	}}
	a, _ := open(dying, "A")
	id, child := askedForScreen(t, a, conv)
	if err := a.Resume(ctx, id, "here it is", swarm.ResumeParts(model.Image("image/png", shot))); err != nil {
		t.Fatal(err)
	}
	awaitDeath(t, ctx, dying, "the answer was never journaled")
	if s, err := st.Get(ctx, child); err != nil || s.State != store.Paused {
		t.Fatalf("the child after the crash: %+v, %v; want it still waiting", s, err)
	}
	time.Sleep(80 * time.Millisecond) // A's leases run out

	b, rec := open(st, "B")
	if _, err := b.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	settledAwaiting(t, b, id)
	checkChildGotParts(t, b, child, rec.Requests("viewer"), shot, blobTableBytes(t, raw))
}

// The question of a grandchild reaches the root run, two handoffs up; the
// answer's screenshot goes down both, and the grandchild's model gets it.
func TestGrandchildPauseAnswerCarriesParts(t *testing.T) {
	_, viewer := screenDesk()
	middle := swarm.Define[string, string]("middle", "Passes work on", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Ask the viewer.", Handoffs: []swarm.Handoff{swarm.ToSwarm(viewer)}}
	})
	top := swarm.Define[string, string]("top", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToSwarm(middle)}}
	})
	ctx := ctxT(t)
	shot, st, raw := shotAndStore(t)
	script := askingViewer(shot)
	script["top"] = []scripted.Step{
		scripted.Tools(scripted.CallTool("handoff_to_middle", map[string]any{"request": "look at the screen"})),
		scripted.Text("it shows an invoice"),
	}
	script["middle"] = script["desk"]
	rt, rec := convRuntime(t, script, st)
	if err := rt.Register(viewer, middle, top); err != nil {
		t.Fatal(err)
	}
	res, run, err := top.Run(ctx, rt, "what is on my screen?")
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := res.(swarm.Paused); !ok || p.Reason != "send me the screenshot" {
		t.Fatalf("result %#v; want the viewer's question", res)
	}
	mids := children(t, rt, run.ID())
	if len(mids) != 1 {
		t.Fatalf("children %+v", mids)
	}
	leaves := children(t, rt, mids[0].ID)
	if len(leaves) != 1 || leaves[0].Swarm != "viewer" {
		t.Fatalf("grandchildren %+v", leaves)
	}
	if err := run.Resume(ctx, "here it is", swarm.ResumeParts(model.Image("image/png", shot))); err != nil {
		t.Fatal(err)
	}
	if res, err := run.Wait(ctx); err != nil {
		t.Fatal(err)
	} else if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "it shows an invoice" {
		t.Fatalf("after the answer: %#v", res)
	}
	checkChildGotParts(t, rt, leaves[0].ID, rec.Requests("viewer"), shot, blobTableBytes(t, raw))
	if _, err := st.Blob(ctx, mids[0].ID, store.BlobHash(shot)); err != nil {
		t.Errorf("the middle run does not refer to the screenshot it passed on: %v", err)
	}
}

// register registers defs on rt.
func register(t *testing.T, rt *swarm.Runtime, defs ...swarm.Definition) {
	t.Helper()
	if err := rt.Register(defs...); err != nil {
		t.Fatal(err)
	}
}
