package modeltest

import (
	"encoding/json"
	"fmt"

	"github.com/swarmrt/swarm/model"
)

// OpenAIResponses is OpenAI's Responses API (POST /responses).
var OpenAIResponses Wire = openAIResponses{}

type openAIResponses struct{}

func (openAIResponses) Name() string { return "openai-responses" }
func (openAIResponses) Path() string { return "/responses" }

func (openAIResponses) Decode(body []byte) (*Call, error) {
	var req struct {
		Model        string `json:"model"`
		Instructions string `json:"instructions"`
		Input        []struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Output    json.RawMessage `json:"output"`
		} `json:"input"`
		Tools []struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"tools"`
		Stream bool `json:"stream"`
		Text   struct {
			Format struct {
				Type   string          `json:"type"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"text"`
		MaxOutputTokens int64 `json:"max_output_tokens"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	c := &Call{Model: req.Model, System: req.Instructions, Stream: req.Stream, MaxTokens: req.MaxOutputTokens}
	for i, it := range req.Input {
		switch {
		case it.Type == "function_call":
			call := model.ToolCall{ID: it.CallID, Name: it.Name, Arguments: json.RawMessage(it.Arguments)}
			if n := len(c.Messages); n > 0 && c.Messages[n-1].Role == model.RoleAssistant {
				c.Messages[n-1].ToolCalls = append(c.Messages[n-1].ToolCalls, call)
			} else {
				c.Messages = append(c.Messages, model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{call}})
			}
		case it.Type == "function_call_output":
			out, parts, err := readContent(it.Output, responsesItem)
			if err != nil {
				return nil, fmt.Errorf("input[%d]: %w", i, err)
			}
			c.Messages = append(c.Messages, model.Message{Role: model.RoleTool, Content: out, ToolCallID: it.CallID, Parts: parts})
		case it.Type == "message" || it.Type == "":
			text, parts, err := readContent(it.Content, responsesItem)
			if err != nil {
				return nil, fmt.Errorf("input[%d]: %w", i, err)
			}
			switch it.Role {
			case "system", "developer":
				c.System += text
			case "user", "assistant":
				c.Messages = append(c.Messages, model.Message{Role: model.Role(it.Role), Content: text, Parts: parts})
			default:
				return nil, fmt.Errorf("input[%d]: unknown role %q", i, it.Role)
			}
		default:
			return nil, fmt.Errorf("input[%d]: unsupported item type %q", i, it.Type)
		}
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, model.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if req.Text.Format.Type == "json_schema" {
		c.ResultSchema = req.Text.Format.Schema
	}
	return c, nil
}

func responsesUsage(u model.Usage) map[string]any {
	return map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CachedInputTokens},
		"output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
	}
}

// responseItems renders a reply's output items.
func responseItems(r *Reply) []any {
	var items []any
	if r.Text != "" || r.Refusal != "" {
		var content []any
		if r.Text != "" {
			content = append(content, map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}, "logprobs": []any{}})
		}
		if r.Refusal != "" {
			content = append(content, map[string]any{"type": "refusal", "refusal": r.Refusal})
		}
		items = append(items, map[string]any{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": content})
	}
	for i, tc := range r.ToolCalls {
		items = append(items, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", i), "call_id": tc.ID, "name": tc.Name, "arguments": string(tc.Arguments), "status": "completed"})
	}
	return items
}

func responseObject(r *Reply, status string, output []any) map[string]any {
	obj := map[string]any{
		"id": "resp_" + replyID(r), "object": "response", "created_at": 1700000000, "status": status, "model": "fake-model",
		"output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "error": nil, "incomplete_details": nil,
	}
	if output == nil {
		obj["output"] = []any{}
	}
	if status != "in_progress" {
		obj["usage"] = responsesUsage(r.Usage)
	}
	switch finishOf(r) {
	case "length":
		obj["status"], obj["incomplete_details"] = "incomplete", map[string]any{"reason": "max_output_tokens"}
	case "content_filter":
		obj["status"], obj["incomplete_details"] = "incomplete", map[string]any{"reason": "content_filter"}
	}
	if status == "in_progress" {
		obj["status"] = status
	}
	return obj
}

func (openAIResponses) Body(r *Reply) []byte {
	return []byte(mustJSON(responseObject(r, "completed", responseItems(r))))
}

func (openAIResponses) Events(r *Reply) []Event {
	seq := 0
	ev := func(typ string, fields map[string]any) Event {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return Event{Name: typ, Data: mustJSON(fields)}
	}
	evs := []Event{ev("response.created", map[string]any{"response": responseObject(r, "in_progress", nil)})}
	out := 0
	if r.Text != "" {
		evs = append(evs, ev("response.output_item.added", map[string]any{"output_index": out, "item": map[string]any{"type": "message", "id": "msg_1", "status": "in_progress", "role": "assistant", "content": []any{}}}))
		for _, t := range textChunks(r) {
			evs = append(evs, ev("response.output_text.delta", map[string]any{"item_id": "msg_1", "output_index": out, "content_index": 0, "delta": t, "logprobs": []any{}}))
		}
		evs = append(evs, ev("response.output_text.done", map[string]any{"item_id": "msg_1", "output_index": out, "content_index": 0, "text": r.Text, "logprobs": []any{}}))
		out++
	}
	for i, tc := range r.ToolCalls {
		id := fmt.Sprintf("fc_%d", i)
		evs = append(evs, ev("response.output_item.added", map[string]any{"output_index": out, "item": map[string]any{"type": "function_call", "id": id, "call_id": tc.ID, "name": tc.Name, "arguments": "", "status": "in_progress"}}))
		for _, a := range argChunks(tc.Arguments) {
			evs = append(evs, ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": out, "delta": a}))
		}
		evs = append(evs, ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": out, "arguments": string(tc.Arguments)}))
		out++
	}
	final := "response.completed"
	if f := finishOf(r); f == "length" || f == "content_filter" {
		final = "response.incomplete"
	}
	return append(evs, ev(final, map[string]any{"response": responseObject(r, "completed", responseItems(r))}))
}

func (openAIResponses) ErrorBody(status int, code, message string) []byte {
	return openAIError(status, code, message)
}

func (openAIResponses) ErrorEvent(code, message string) Event {
	if code == "" {
		code = "server_error"
	}
	if message == "" {
		message = "The server had an error while processing your request."
	}
	return Event{Name: "error", Data: mustJSON(map[string]any{"type": "error", "code": code, "message": message, "param": nil, "sequence_number": 1})}
}
