package modeltest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/swarmrt/swarm/model"
)

// Sample bytes for the parts cases: what they are does not matter to a
// fake server, only that they arrive unchanged.
var (
	samplePNG = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 1, 2, 250}, 300)...)
	samplePDF = append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("stream\x00\xff"), 200)...)
	sampleWAV = append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), bytes.Repeat([]byte{9, 8, 7}, 100)...)
)

func runParts(t *testing.T, cfg Config, stream bool) {
	ctx := context.Background()
	pc := cfg.Parts
	userParts := []model.Part{
		model.Image("image/png", samplePNG),
		model.ImageURL("https://example.com/cat.jpg"),
		model.File("report.pdf", "application/pdf", samplePDF),
	}
	if pc.Audio {
		userParts = append(userParts, model.Audio("audio/wav", sampleWAV))
	}
	chart := model.Image("image/png", samplePNG[:100])
	req := baseRequest()
	req.Messages = []model.Message{
		{Role: model.RoleUser, Content: "Describe these.", Parts: userParts},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1", Name: "chart", Arguments: []byte(`{}`)}}},
		{Role: model.RoleTool, ToolCallID: "call_1", Name: "chart", Content: "the chart:", Parts: []model.Part{chart}},
	}
	req.Tools = []model.ToolDef{{Name: "chart", Parameters: []byte(`{"type":"object","properties":{}}`)}}

	t.Run("sent as documented", func(t *testing.T) {
		f := newFixture(t, cfg)
		f.reply = Reply{Text: "A cat and a report."}
		if _, _, err := f.call(ctx, req, stream); err != nil {
			t.Fatalf("Generate: %v", err)
		}
		calls := f.srv.Calls()
		if len(calls) != 1 {
			t.Fatalf("%d calls, want 1", len(calls))
		}
		msgs := calls[0].Messages
		if len(msgs) == 0 || msgs[0].Role != model.RoleUser || msgs[0].Content != "Describe these." {
			t.Fatalf("first message = %+v, want the user's text", msgs)
		}
		checkParts(t, "user message", msgs[0].Parts, userParts)
		var tool *model.Message
		for i := range msgs {
			if msgs[i].Role == model.RoleTool {
				tool = &msgs[i]
			}
		}
		if tool == nil || tool.Content != "the chart:" || tool.ToolCallID != "call_1" {
			t.Fatalf("no tool result with its text in %+v", msgs)
		}
		got := tool.Parts
		if pc.ToolMediaAsUser {
			last := msgs[len(msgs)-1]
			if last.Role != model.RoleUser || &msgs[len(msgs)-2] != tool {
				t.Fatalf("messages %v: want the tool result's image in a user message right after it", msgs)
			}
			got = last.Parts
		}
		checkParts(t, "tool result", got, []model.Part{chart})
	})

	t.Run("unsupported", func(t *testing.T) {
		f := newFixture(t, cfg)
		f.reply = Reply{Text: "no"}
		bad := model.Audio("audio/ogg", []byte("OggS"))
		if !pc.Audio {
			bad = model.Audio("audio/wav", sampleWAV)
		}
		r := baseRequest()
		r.Messages = []model.Message{{Role: model.RoleUser, Content: "Listen.", Parts: []model.Part{bad}}}
		_, _, err := f.call(ctx, r, stream)
		if !errors.Is(err, model.ErrUnsupportedPart) || model.KindOf(err) != model.KindBadRequest {
			t.Errorf("err = %v, want a bad request wrapping model.ErrUnsupportedPart", err)
		}
		r.Messages[0].Parts = []model.Part{{Type: model.PartImage, MediaType: "image/png"}} // no source
		_, _, err = f.call(ctx, r, stream)
		if !errors.Is(err, model.ErrUnsupportedPart) {
			t.Errorf("part without a source: err = %v, want model.ErrUnsupportedPart", err)
		}
		if n := len(f.srv.Calls()); n != 0 {
			t.Errorf("%d requests reached the server, want none", n)
		}
	})
}

// checkParts compares the parts a fake server decoded with those sent.
func checkParts(t *testing.T, what string, got, want []model.Part) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d parts arrived, want %d: %+v", what, len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Type != w.Type || g.URL != w.URL || !bytes.Equal(g.Data, w.Data) || (w.Data != nil && g.MediaType != w.MediaType) || g.Name != w.Name {
			t.Errorf("%s part %d: got %s %q %q url %q (%d bytes), want %s %q %q url %q (%d bytes)",
				what, i, g.Type, g.MediaType, g.Name, g.URL, len(g.Data), w.Type, w.MediaType, w.Name, w.URL, len(w.Data))
		}
	}
}
