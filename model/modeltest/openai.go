package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/swarmrt/swarm/model"
)

// OpenAIChat is OpenAI's Chat Completions API (POST /chat/completions),
// also spoken by every OpenAI-compatible server.
var OpenAIChat Wire = openAIChat{}

type openAIChat struct{}

func (openAIChat) Name() string { return "openai-chat" }
func (openAIChat) Path() string { return "/chat/completions" }

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream         bool `json:"stream"`
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	MaxTokens           int64 `json:"max_tokens"`
	MaxCompletionTokens int64 `json:"max_completion_tokens"`
}

func (openAIChat) Decode(body []byte) (*Call, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	c := &Call{Model: req.Model, Stream: req.Stream, MaxTokens: max(req.MaxTokens, req.MaxCompletionTokens)}
	for i, m := range req.Messages {
		text, parts, err := readContent(m.Content, chatItem(m.Role == "user"))
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		switch m.Role {
		case "system", "developer":
			c.System += text
		case "user":
			c.Messages = append(c.Messages, model.Message{Role: model.RoleUser, Content: text, Parts: parts})
		case "assistant":
			msg := model.Message{Role: model.RoleAssistant, Content: text}
			for _, tc := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
			}
			c.Messages = append(c.Messages, msg)
		case "tool":
			c.Messages = append(c.Messages, model.Message{Role: model.RoleTool, Content: text, ToolCallID: m.ToolCallID})
		default:
			return nil, fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, model.ToolDef{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type == "json_schema" {
		c.ResultSchema = rf.JSONSchema.Schema
	}
	return c, nil
}

func chatUsage(u model.Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":             u.InputTokens,
		"completion_tokens":         u.OutputTokens,
		"total_tokens":              u.InputTokens + u.OutputTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedInputTokens, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
}

func (openAIChat) Body(r *Reply) []byte {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
	if r.Text != "" {
		msg["content"] = r.Text
	}
	if r.Refusal != "" {
		msg["refusal"] = r.Refusal
	}
	if len(r.ToolCalls) > 0 {
		calls := make([]any, len(r.ToolCalls))
		for i, tc := range r.ToolCalls {
			calls[i] = map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": string(tc.Arguments)}}
		}
		msg["tool_calls"] = calls
	}
	return []byte(mustJSON(map[string]any{
		"id": "chatcmpl-" + replyID(r), "object": "chat.completion", "created": 1700000000, "model": "fake-model",
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finishOf(r)}},
		"usage":              chatUsage(r.Usage),
		"system_fingerprint": "fp_fake",
	}))
}

func (openAIChat) Events(r *Reply) []Event {
	id := "chatcmpl-" + replyID(r)
	chunk := func(delta map[string]any, finish any) Event {
		return Event{Data: mustJSON(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": "fake-model", "system_fingerprint": "fp_fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		})}
	}
	evs := []Event{chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)}
	for _, t := range textChunks(r) {
		evs = append(evs, chunk(map[string]any{"content": t}, nil))
	}
	for _, t := range chunks(r.Refusal, 8) {
		evs = append(evs, chunk(map[string]any{"refusal": t}, nil))
	}
	for i, tc := range r.ToolCalls {
		evs = append(evs, chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
		for _, a := range argChunks(tc.Arguments) {
			evs = append(evs, chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": a}}}}, nil))
		}
	}
	evs = append(evs, chunk(map[string]any{}, finishOf(r)))
	evs = append(evs, Event{Data: mustJSON(map[string]any{
		"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": "fake-model", "choices": []any{}, "usage": chatUsage(r.Usage),
	})})
	return append(evs, Event{Data: "[DONE]"})
}

// openAIErrorType is the error type OpenAI reports with a status.
func openAIErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func (openAIChat) ErrorBody(status int, code, message string) []byte {
	return openAIError(status, code, message)
}

func openAIError(status int, code, message string) []byte {
	if message == "" {
		message = http.StatusText(status)
	}
	var c any
	if code != "" {
		c = code
	}
	return []byte(mustJSON(map[string]any{"error": map[string]any{"message": message, "type": openAIErrorType(status), "param": nil, "code": c}}))
}

func (openAIChat) ErrorEvent(code, message string) Event {
	if code == "" {
		code = "server_error"
	}
	if message == "" {
		message = "The server had an error while processing your request."
	}
	return Event{Data: mustJSON(map[string]any{"error": map[string]any{"message": message, "type": code, "param": nil, "code": code}})}
}
