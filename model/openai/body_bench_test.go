package openai

import (
	"encoding/json"
	"testing"

	"github.com/swarmrt/swarm/model"
)

// BenchmarkChatBody measures building and encoding a Chat Completions
// request body like an orchestrator's second call: a system prompt, four
// messages and four tools.
func BenchmarkChatBody(b *testing.B) {
	m, err := New(WithModel("m"))
	if err != nil {
		b.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"},"context":{"type":"string"}},"required":["reason"]}`)
	req := &model.Request{
		System: "You are the orchestrator. Delegate the user's question to the specialist, then answer.",
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "What is the answer to the ultimate question?"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "handoff_to_specialist", Arguments: json.RawMessage(`{"request":"answer"}`)}}},
			{Role: model.RoleTool, ToolCallID: "c1", Content: "42"},
		},
		Tools: []model.ToolDef{
			{Name: "handoff_to_specialist", Description: "A specialist.", Parameters: json.RawMessage(`{"type":"object","properties":{"request":{"type":"string","description":"The task and its context."}},"required":["request"]}`)},
			{Name: "lookup", Description: "Looks things up.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["q"]}`)},
			{Name: "pause", Description: "Wait for a human.", Parameters: schema},
			{Name: "fail", Description: "Give up.", Parameters: schema},
		},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.chatBody(req, "m", false); err != nil {
			b.Fatal(err)
		}
	}
}

// imageRequest is a request whose user message carries a 2 MB image.
func imageRequest() *model.Request {
	img := make([]byte, 2<<20)
	for i := range img {
		img[i] = byte(i * 7)
	}
	return &model.Request{
		System:   "Describe the picture.",
		Messages: []model.Message{{Role: model.RoleUser, Content: "What is in it?", Parts: []model.Part{model.Image("image/png", img)}}},
	}
}

// BenchmarkChatBodyImage measures building a Chat Completions body with a
// 2 MB image (base64 into a data URL).
func BenchmarkChatBodyImage(b *testing.B) {
	m, err := New(WithModel("m"))
	if err != nil {
		b.Fatal(err)
	}
	req := imageRequest()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.chatBody(req, "m", false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResponsesBodyImage measures building and encoding (with the
// SDK, as it sends it) a Responses body with a 2 MB image.
func BenchmarkResponsesBodyImage(b *testing.B) {
	m, err := New(WithModel("m"), WithAPI(Responses))
	if err != nil {
		b.Fatal(err)
	}
	req := imageRequest()
	b.ReportAllocs()
	for b.Loop() {
		p, err := m.responsesParams(req, "m")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChatBodyBlob is BenchmarkChatBodyImage with the image loaded
// from a blob, as in a run: its base64 is encoded once and reused.
func BenchmarkChatBodyBlob(b *testing.B) {
	m, err := New(WithModel("m"))
	if err != nil {
		b.Fatal(err)
	}
	req := imageRequest()
	p := &req.Messages[0].Parts[0]
	p.Blob, p.Size = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", int64(len(p.Data))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.chatBody(req, "m", false); err != nil {
			b.Fatal(err)
		}
	}
}
