package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/swarmrt/swarm/model"
)

// Anthropic is Anthropic's Messages API (POST /v1/messages).
var Anthropic Wire = anthropicWire{}

type anthropicWire struct{}

func (anthropicWire) Name() string { return "anthropic" }
func (anthropicWire) Path() string { return "/v1/messages" }

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`

	raw json.RawMessage // the whole block
}

// blocks reads content that is a string or a list of blocks.
func blocks(raw json.RawMessage) ([]anthropicBlock, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, fmt.Errorf("content is neither a string nor a list of blocks: %w", err)
	}
	bs := make([]anthropicBlock, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &bs[i]); err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		bs[i].raw = r
	}
	return bs, nil
}

func (anthropicWire) Decode(body []byte) (*Call, error) {
	var req struct {
		Model     string          `json:"model"`
		MaxTokens int64           `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	if req.MaxTokens <= 0 {
		return nil, fmt.Errorf("max_tokens: Field required")
	}
	c := &Call{Model: req.Model, Stream: req.Stream, MaxTokens: req.MaxTokens}
	if len(req.System) > 0 {
		bs, err := blocks(req.System)
		if err != nil {
			return nil, fmt.Errorf("system: %w", err)
		}
		for _, b := range bs {
			c.System += b.Text
		}
	}
	for i, m := range req.Messages {
		bs, err := blocks(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		switch m.Role {
		case "user":
			var text string
			var parts []model.Part
			for j := range bs {
				b := &bs[j]
				switch b.Type {
				case "text":
					text += b.Text
				case "image", "document":
					p, err := anthropicMedia(b)
					if err != nil {
						return nil, fmt.Errorf("messages[%d]: %w", i, err)
					}
					parts = append(parts, *p)
				case "tool_result":
					out, tparts, err := anthropicToolResult(b.Content)
					if err != nil {
						return nil, fmt.Errorf("messages[%d]: tool_result: %w", i, err)
					}
					c.Messages = append(c.Messages, model.Message{Role: model.RoleTool, Content: out, ToolCallID: b.ToolUseID, IsError: b.IsError, Parts: tparts})
				default:
					return nil, fmt.Errorf("messages[%d]: unsupported block %q", i, b.Type)
				}
			}
			if text != "" || len(parts) > 0 {
				c.Messages = append(c.Messages, model.Message{Role: model.RoleUser, Content: text, Parts: parts})
			}
		case "assistant":
			msg := model.Message{Role: model.RoleAssistant}
			for _, b := range bs {
				switch b.Type {
				case "text":
					msg.Content += b.Text
				case "tool_use":
					msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Input})
				default:
					return nil, fmt.Errorf("messages[%d]: unsupported block %q", i, b.Type)
				}
			}
			c.Messages = append(c.Messages, msg)
		default:
			return nil, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, model.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return c, nil
}

func anthropicStop(r *Reply) string {
	if r.Refusal != "" {
		return "refusal"
	}
	switch finishOf(r) {
	case "length":
		return "max_tokens"
	case "tool_calls":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

func anthropicUsage(u model.Usage) map[string]any {
	return map[string]any{
		"input_tokens": u.InputTokens - u.CachedInputTokens, "output_tokens": u.OutputTokens,
		"cache_read_input_tokens": u.CachedInputTokens, "cache_creation_input_tokens": u.CacheWriteTokens,
		"service_tier": "standard",
	}
}

func anthropicContent(r *Reply) []any {
	content := []any{}
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for _, tc := range r.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": json.RawMessage(tc.Arguments)})
	}
	return content
}

func (anthropicWire) Body(r *Reply) []byte {
	return []byte(mustJSON(map[string]any{
		"id": "msg_" + replyID(r), "type": "message", "role": "assistant", "model": "fake-model",
		"content": anthropicContent(r), "stop_reason": anthropicStop(r), "stop_sequence": nil, "usage": anthropicUsage(r.Usage),
	}))
}

func (anthropicWire) Events(r *Reply) []Event {
	ev := func(typ string, fields map[string]any) Event {
		fields["type"] = typ
		return Event{Name: typ, Data: mustJSON(fields)}
	}
	start := anthropicUsage(r.Usage)
	start["output_tokens"] = 1
	evs := []Event{
		ev("message_start", map[string]any{"message": map[string]any{
			"id": "msg_" + replyID(r), "type": "message", "role": "assistant", "model": "fake-model", "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": start,
		}}),
		ev("ping", map[string]any{}),
	}
	index := 0
	if r.Text != "" {
		evs = append(evs, ev("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "text", "text": ""}}))
		for _, t := range textChunks(r) {
			evs = append(evs, ev("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "text_delta", "text": t}}))
		}
		evs = append(evs, ev("content_block_stop", map[string]any{"index": index}))
		index++
	}
	for _, tc := range r.ToolCalls {
		evs = append(evs, ev("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}}))
		for _, a := range argChunks(tc.Arguments) {
			evs = append(evs, ev("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": a}}))
		}
		evs = append(evs, ev("content_block_stop", map[string]any{"index": index}))
		index++
	}
	final := anthropicUsage(r.Usage)
	return append(evs,
		ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": anthropicStop(r), "stop_sequence": nil}, "usage": final}),
		ev("message_stop", map[string]any{}),
	)
}

func anthropicErrorType(status int, code string) string {
	if code != "" {
		return code
	}
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func (anthropicWire) ErrorBody(status int, code, message string) []byte {
	if message == "" {
		message = http.StatusText(status)
		if status == 529 {
			message = "Overloaded"
		}
	}
	return []byte(mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": anthropicErrorType(status, code), "message": message}, "request_id": "req_fake"}))
}

func (anthropicWire) ErrorEvent(code, message string) Event {
	if code == "" {
		code = "overloaded_error"
	}
	if message == "" {
		message = "Overloaded"
	}
	return Event{Name: "error", Data: mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": code, "message": message}})}
}
