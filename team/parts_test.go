package team_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

func randomImage(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// A mail's image reaches the recipient's next model call; the process dies
// before that turn is journaled, and the recovered teammate gets the mail
// and its image again and consumes it once. The mailbox and the journal
// hold a reference; the bytes are a blob the recipient refers to.
func TestTeamMailPartsRedeliveredAfterCrash(t *testing.T) {
	ctx := ctxT(t)
	img := randomImage(t, 64<<10)
	see := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: len(img)}}
	script := scripted.Script{
		"bob": {scripted.Text("Ready."), {ExpectParts: see, Text: "A chart of sales."}},
	}
	a, ks, bm, tdef, tr := startBob(t, ctx, script, "analyst", "teamp")
	if _, err := tr.Send(ctx, "bob", "what is in this chart?", team.WithMailParts(model.Image("image/png", img))); err != nil {
		t.Fatal(err)
	}
	inbox, err := tr.Inbox(ctx, "bob")
	if err != nil || len(inbox) != 1 || len(inbox[0].Parts) != 1 || inbox[0].Parts[0].Blob != store.BlobHash(img) || len(inbox[0].Parts[0].Data) != 0 {
		t.Fatalf("bob's inbox = %+v, %v; want one mail with a reference to the image", inbox, err)
	}
	swarmtest.Recv(t, ctx, bm.reached, "bob's model call with the mail")
	ks.Kill() // A dies before journaling bob's turn
	b, tr := recoverTeam(t, ctx, a, ks, tdef, script, "teamp")
	settledRoster(t, ctx, tr, "bob")
	var consumed []string
	answered := false
	prefix := []byte(base64.StdEncoding.EncodeToString(img[:30]))
	recs, err := ks.Read(ctx, "teamp~bob", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if bytes.Contains(rec.Data, prefix) {
			t.Errorf("bob's record %s holds the image's bytes", rec.Key)
		}
	}
	for _, ev := range swarmtest.Events(t, b, "teamp~bob") {
		for _, ml := range ev.Mails {
			consumed = append(consumed, ml.Content)
		}
		if ev.Type == swarm.EventReply && ev.Text == "A chart of sales." {
			answered = true
		}
	}
	if want := []string{"what is in this chart?"}; !slices.Equal(consumed, want) {
		t.Errorf("bob consumed %q, want the mail once", consumed)
	}
	if !answered {
		t.Error("bob did not answer from the image: its model call did not get it")
	}
	if got, err := ks.Blob(ctx, "teamp~bob", store.BlobHash(img)); err != nil || !bytes.Equal(got, img) {
		t.Errorf("bob does not refer to the image's blob: %d bytes, %v", len(got), err)
	}
}

// A member forwards the images it has (send_message with attach): the
// lead, mailed a chart by the user, passes it to bob by reference; a mail
// with an invalid part is refused.
func TestTeamMemberForwardsParts(t *testing.T) {
	ctx := ctxT(t)
	img := randomImage(t, 64<<10)
	see := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: len(img)}}
	script := scripted.Script{
		"lead": {
			scripted.Text("Ready."),
			{ExpectParts: see, ToolCalls: []scripted.ToolCall{scripted.CallTool("send_message", map[string]any{"to": "bob", "content": "read this chart", "attach": true})}},
			scripted.Text("Asked bob."),
		},
		"bob": {{ExpectParts: see, Text: "Sales went up."}},
	}
	tdef := seedTeam(func(s *team.TeamSpec) {
		s.Members = []team.Teammate{{Name: "bob", Role: "analyst"}}
	})
	st := memory.New()
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tr, err := tdef.Start(ctx, rt, "Wait for work.", swarm.WithID("teamf"))
	if err != nil {
		t.Fatal(err)
	}
	settledRoster(t, ctx, tr, "bob")
	if _, err := tr.Send(ctx, "lead", "the chart", team.WithMailParts(model.Image("image/png", img))); err != nil {
		t.Fatal(err)
	}
	if answer, err := tr.Say(ctx, "pass the chart to bob"); err != nil || answer != "Asked bob." {
		t.Fatalf("the lead answered %q, %v", answer, err)
	}

	until(t, ctx, "bob answers", func() bool {
		for _, ev := range swarmtest.Events(t, rt, "teamf~bob") {
			if ev.Type == swarm.EventReply {
				return true
			}
		}
		return false
	})
	settledRoster(t, ctx, tr, "bob")
	got := received(t, rt, tr, "bob")
	if len(got) != 1 || len(got[0].Parts) != 1 || got[0].Parts[0].Blob != store.BlobHash(img) {
		t.Fatalf("bob received %+v, want the mail with the chart by reference", got)
	}
	answered := false
	for _, ev := range swarmtest.Events(t, rt, "teamf~bob") {
		answered = answered || (ev.Type == swarm.EventReply && ev.Text == "Sales went up.")
	}
	if !answered {
		t.Error("bob did not answer from the chart")
	}

	bad := model.Part{Type: model.PartImage, MediaType: "text/html", Data: []byte("<script>")}
	if _, err := tr.Send(ctx, "bob", "x", team.WithMailParts(bad)); err == nil {
		t.Error("a mail with an image of media type text/html was sent")
	}
	ref := model.Part{Type: model.PartImage, MediaType: "image/png", Blob: store.BlobHash(img), Size: int64(len(img))}
	if _, err := tr.Send(ctx, "bob", "x", team.WithMailParts(ref)); err == nil {
		t.Error("the user named a blob by reference in a mail")
	}
}

// The user's message to the lead carries a screenshot: the lead's model
// gets it on that message.
func TestTeamLeadMessageParts(t *testing.T) {
	ctx := ctxT(t)
	img := randomImage(t, 16<<10)
	see := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: len(img)}}
	script := scripted.Script{"lead": {
		scripted.Text("Ready."),
		{ExpectParts: see, Text: "It shows a chart."},
	}}
	st := memory.New()
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tr, err := seedTeam().Start(ctx, rt, "Wait for work.", swarm.WithID("teaml"))
	if err != nil {
		t.Fatal(err)
	}
	answer, err := tr.Say(ctx, "what is in this screenshot?", swarm.WithMessageParts(model.Image("image/png", img)))
	if err != nil || answer != "It shows a chart." {
		t.Fatalf("the lead answered %q, %v", answer, err)
	}
}
