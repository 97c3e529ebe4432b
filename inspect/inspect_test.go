package inspect_test

import (
	"strings"
	"testing"

	"github.com/swarmrt/swarm/inspect"
	"github.com/swarmrt/swarm/model"
)

// Count estimates each part: a quarter of the characters of text, rounded
// up, the JSON of tool calls and tools, and an image by its model.Part
// estimate, even as a blob reference whose bytes it never sees.
func TestCount(t *testing.T) {
	img := []model.Message{{Role: model.RoleUser, Content: "look", Parts: []model.Part{
		{Type: model.PartImage, MediaType: "image/png", Blob: strings.Repeat("ab", 32), Size: 2 << 20},
	}}}
	if got := inspect.Count(&inspect.Request{Messages: img}).Messages[0]; got != 1+1600 {
		t.Errorf("Count gives %d tokens for text and image, want 1601", got)
	}
	req := &inspect.Request{System: "12345", Messages: []model.Message{
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c", Name: "f"}}},
	}, Tools: []model.ToolDef{{Name: "f"}}}
	got := inspect.Count(req)
	if got.Estimate != "chars/4" || got.System != 2 || got.Messages[0] == 0 || got.Tools[0] == 0 ||
		got.Total != got.System+got.Messages[0]+got.Tools[0] {
		t.Errorf("Count = %+v", got)
	}
}

// Hash is a function of what the model was sent: the same request gives
// the same digest, a changed part another.
func TestHash(t *testing.T) {
	req := &model.Request{System: "be brief", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
	h := inspect.Hash(req)
	if len(h) != 32 || inspect.Hash(req) != h {
		t.Fatalf("Hash = %q, want 16 bytes in hex, stable", h)
	}
	changed := *req
	changed.System = "be long"
	if inspect.Hash(&changed) == h {
		t.Error("a changed system prompt gives the same digest")
	}
	changed = *req
	changed.Tools = []model.ToolDef{{Name: "f"}}
	if inspect.Hash(&changed) == h {
		t.Error("an added tool gives the same digest")
	}
}
