package model_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"image"
	stdpng "image/png"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/model"
)

// A journal record written before parts existed decodes unchanged, and a
// text-only message encodes exactly as it did: no "parts" key.
func TestMessageJSONCompatible(t *testing.T) {
	old := `{"role":"tool","content":"42","tool_call_id":"c1","name":"calc","is_error":true}`
	var m model.Message
	if err := json.Unmarshal([]byte(old), &m); err != nil {
		t.Fatal(err)
	}
	if m.Parts != nil || m.Content != "42" || m.ToolCallID != "c1" || !m.IsError {
		t.Fatalf("decoded %+v", m)
	}
	b, err := json.Marshal(m)
	if err != nil || string(b) != old {
		t.Fatalf("re-encoded %s (%v), want %s", b, err, old)
	}
}

func TestMessagePartsRoundTrip(t *testing.T) {
	m := model.Message{Role: model.RoleUser, Content: "look", Parts: []model.Part{
		model.Image("image/png", []byte{0x89, 'P', 'N', 'G', 0, 255}),
		model.File("a.pdf", "application/pdf", []byte("%PDF")),
		{Type: model.PartImage, MediaType: "image/png", Blob: strings.Repeat("ab", 32), Size: 2 << 20},
	}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"data":"iVBORwD/"`) {
		t.Errorf("bytes not base64 in %s", b)
	}
	var back model.Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Parts) != 3 || string(back.Parts[0].Data) != string(m.Parts[0].Data) || back.Parts[1].Name != "a.pdf" || back.Parts[2].Blob != m.Parts[2].Blob || back.Parts[2].Size != 2<<20 {
		t.Errorf("round trip: %v", back.Parts)
	}
}

func TestPartValidate(t *testing.T) {
	hash := strings.Repeat("0f", 32)
	for _, tc := range []struct {
		p    model.Part
		want string // "" valid, else a piece of the error
	}{
		{model.TextPart("hi"), ""},
		{model.Image("image/png", []byte{1}), ""},
		{model.ImageURL("https://x/y.png"), ""},
		{model.ImageURL("data:image/png;base64,AAAA"), ""},
		{model.File("a.pdf", "application/pdf", []byte{1}), ""},
		{model.Audio("audio/wav", []byte{1}), ""},
		{model.Part{Type: model.PartImage, MediaType: "image/png", Blob: hash}, ""},
		{model.Part{Type: "video", Data: []byte{1}}, "unknown part type"},
		{model.Part{Data: []byte{1}}, "without a type"},
		{model.Part{Type: model.PartImage, MediaType: "image/png"}, "want one source"},
		{model.Part{Type: model.PartImage, MediaType: "image/png", Data: []byte{1}, URL: "https://x"}, "want one source"},
		{model.Image("", []byte{1}), "no media type"},
		{model.Image("application/pdf", []byte{1}), "is not image/"},
		{model.Audio("image/png", []byte{1}), "is not audio/"},
		{model.ImageURL("file:///etc/passwd"), "scheme"},
		{model.Part{Type: model.PartImage, MediaType: "image/png", Blob: "xyz"}, "not a hex SHA-256"},
		{model.Part{Type: model.PartText, Text: "t", Data: []byte{1}}, "only text"},
	} {
		err := tc.p.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: Validate() = %v, want %q", tc.p, err, tc.want)
		}
	}
}

func TestCheckParts(t *testing.T) {
	msgs := []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartImage, MediaType: "image/png", Blob: strings.Repeat("0f", 32)}}}}
	err := model.CheckParts("p", "m", msgs)
	if !errors.Is(err, model.ErrUnsupportedPart) || model.KindOf(err) != model.KindBadRequest || !strings.Contains(err.Error(), "not loaded") {
		t.Errorf("unresolved blob: %v", err)
	}
	if s := model.Image("image/png", make([]byte, 2<<20)).String(); s != "image image/png 2097152 bytes" {
		t.Errorf("String() = %q", s)
	}
}

func TestAttachment(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	for _, tc := range []struct {
		name, mt string
		data     []byte
		want     model.Part
	}{
		{"chart.png", "", png, model.Part{Type: model.PartImage, MediaType: "image/png"}},
		{"noext", "", png, model.Part{Type: model.PartImage, MediaType: "image/png"}},
		{"dir/report.pdf", "", []byte("%PDF-1.7"), model.Part{Type: model.PartFile, MediaType: "application/pdf", Name: "report.pdf"}},
		{"x.bin", "audio/wav; rate=8000", []byte{1}, model.Part{Type: model.PartAudio, MediaType: "audio/wav"}},
	} {
		p := model.Attachment(tc.name, tc.mt, tc.data)
		if p.Type != tc.want.Type || p.MediaType != tc.want.MediaType || p.Name != tc.want.Name || len(p.Data) != len(tc.data) {
			t.Errorf("Attachment(%q, %q) = %v, want %v", tc.name, tc.mt, p, tc.want)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("Attachment(%q): %v", tc.name, err)
		}
	}
}

func TestPartTokens(t *testing.T) {
	var png bytes.Buffer
	if err := stdpng.Encode(&png, image.NewGray(image.Rect(0, 0, 300, 200))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    model.Part
		want int
	}{
		{model.TextPart("12345678"), 2},
		{model.Image("image/png", png.Bytes()), 80}, // 300 × 200 / 750
		{model.Image("image/png", []byte("not an image")), 1600},
		{model.ImageURL("https://x/y.png"), 1600},
		{model.File("a.txt", "text/plain", make([]byte, 400)), 100},
		{model.File("a.pdf", "application/pdf", make([]byte, 100<<10)), 3000},
		{model.Part{Type: model.PartFile, MediaType: "application/pdf", Blob: strings.Repeat("0f", 32), Size: 10}, 1500},
	} {
		if got := tc.p.Tokens(); got != tc.want {
			t.Errorf("%v: Tokens() = %d, want %d", tc.p, got, tc.want)
		}
	}
}

// A blob loaded for a model call holds its bytes and keeps its hash: one
// source, and not an unloaded blob.
func TestLoadedBlobPart(t *testing.T) {
	p := model.Part{Type: model.PartImage, MediaType: "image/png", Blob: strings.Repeat("0f", 32), Size: 3, Data: []byte{1, 2, 3}}
	if err := p.Validate(); err != nil {
		t.Errorf("loaded blob: %v", err)
	}
	if err := model.CheckParts("p", "m", []model.Message{{Parts: []model.Part{p}}}); err != nil {
		t.Errorf("CheckParts of a loaded blob: %v", err)
	}
	if p.Len() != 3 {
		t.Errorf("Len() = %d", p.Len())
	}
}
