package storetest

import (
	"reflect"
	"testing"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// testSendResumeParts: a resume's parts (a text part, a small image
// inline, a blob reference) are kept as given and returned by Inbox and
// Send; parts that are invalid, hold too many bytes inline, or ride on a
// stop are refused and store nothing.
func testSendResumeParts(t *testing.T, s store.Store) {
	ctx := t.Context()
	l := create(t, s, "r1", "o1", long)
	appendOK(t, s, l, recs("p"), store.Update{State: store.Paused, Reason: "awaiting user message"})
	bad := []struct {
		what   string
		m      store.Message
		target error
	}{
		{"an invalid part", store.Message{Kind: store.MsgResume, Text: "x", Parts: []model.Part{{Type: model.PartImage, MediaType: "text/plain", Data: []byte("x")}}}, nil},
		{"too many bytes inline", store.Message{Kind: store.MsgResume, Text: "x", Parts: []model.Part{model.Image("image/png", make([]byte, store.MaxMailBytes+1))}}, store.ErrTooLarge},
		{"parts on a stop", store.Message{Kind: store.MsgStop, Parts: []model.Part{model.TextPart("why")}}, nil},
	}
	for _, b := range bad {
		_, err := s.Send(ctx, "r1", b.m)
		switch {
		case err == nil:
			t.Fatalf("a message with %s was sent", b.what)
		case b.target != nil:
			wantErr(t, "a message with "+b.what, err, b.target)
		}
		if in := inbox(t, s, "r1"); len(in) != 0 {
			t.Fatalf("a message with %s was stored: %+v", b.what, in)
		}
		if r := get(t, s, "r1"); r.State != store.Paused {
			t.Fatalf("a message with %s changed the run's state to %s", b.what, r.State)
		}
	}
	parts := []model.Part{
		model.TextPart("see attached"),
		model.Image("image/png", []byte("\x89PNG tiny")),
		{Type: model.PartFile, Name: "report.pdf", MediaType: "application/pdf", Blob: store.BlobHash([]byte("report")), Size: 6},
	}
	given := append([]model.Part(nil), parts...)
	m, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgResume, Text: "what is in it?", Parts: given})
	if err != nil {
		t.Fatalf("resume with parts: %v", err)
	}
	if !reflect.DeepEqual(m.Parts, parts) {
		t.Fatalf("Send returned parts %+v, want %+v", m.Parts, parts)
	}
	given[0] = model.TextPart("changed") // the store keeps no alias
	in := inbox(t, s, "r1")
	if len(in) != 1 || in[0].ID != m.ID || in[0].Text != "what is in it?" || !reflect.DeepEqual(in[0].Parts, parts) {
		t.Fatalf("Inbox = %+v, want one message with parts %+v", in, parts)
	}
	// A message without parts has none.
	ls, err := s.ClaimExpired(ctx, "o2", long, 10)
	if err != nil || len(ls) != 1 {
		t.Fatalf("ClaimExpired after resume = %+v, %v", ls, err)
	}
	appendOK(t, s, ls[0], recs("q"), store.Update{State: store.Paused, Reason: "awaiting user message", AckInbox: m.ID})
	if _, err := s.Send(ctx, "r1", store.Message{Kind: store.MsgResume, Text: "thanks"}); err != nil {
		t.Fatalf("resume without parts: %v", err)
	}
	if in := inbox(t, s, "r1"); len(in) != 1 || in[0].Parts != nil {
		t.Fatalf("Inbox = %+v, want one message without parts", in)
	}
}
