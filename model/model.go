// Package model defines the interface between the swarm runtime and a language
// model: a request carrying a conversation and tool definitions, and a response
// carrying one assistant message and its token usage.
//
// Providers implement [Model] and register a factory with [Register] in an init
// function, the way database/sql drivers do; users pick one with a model spec
// such as "scripted:script.yaml" or "openai:gpt-4.1-mini" through [Open].
package model

import (
	"context"
	"encoding/json"
	"fmt"
)

// Role is the author of a message in a conversation.
type Role string

// The roles of a conversation. The system prompt travels in Request.System,
// never as a message.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one function call requested by the model.
type ToolCall struct {
	// ID identifies the call within its response; tool results refer to it.
	ID string `json:"id"`
	// Name is the tool's name as offered in Request.Tools.
	Name string `json:"name"`
	// Arguments is the JSON object the model produced. It may be invalid JSON:
	// the runtime validates it before any tool runs.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// toolCallJSON is the JSON form of a ToolCall whose Arguments are not valid
// JSON: their text as a JSON string, marked invalid.
type toolCallJSON struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Invalid   bool            `json:"invalid_arguments,omitempty"`
}

// MarshalJSON encodes the call as {"id", "name", "arguments"}. Arguments
// that are not valid JSON, which models do produce, cannot be embedded as
// they are: they are encoded as a JSON string holding their text, with
// "invalid_arguments": true, so that any call can be stored and read back.
// Valid arguments are written compact.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	w := toolCallJSON{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
		text, err := json.Marshal(string(c.Arguments))
		if err != nil {
			return nil, err
		}
		w.Arguments, w.Invalid = text, true
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON encodes: invalid arguments get back
// their text (invalid UTF-8 in it having become U+FFFD).
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var w toolCallJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = ToolCall{ID: w.ID, Name: w.Name, Arguments: w.Arguments}
	if w.Invalid {
		var text string
		if err := json.Unmarshal(w.Arguments, &text); err != nil {
			return fmt.Errorf("tool call %q: invalid_arguments without a string of arguments: %w", w.ID, err)
		}
		c.Arguments = json.RawMessage(text)
	}
	return nil
}

// Message is one entry of a conversation.
type Message struct {
	Role Role `json:"role"`
	// Content is the text of the message (for tool messages: the result).
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls of an assistant message.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool name of a tool message.
	Name string `json:"name,omitempty"`
	// IsError marks a tool message whose content describes a failure.
	IsError bool `json:"is_error,omitempty"`
	// Parts are images, files, audio and further text that follow Content:
	// a user's attachments, or what a tool returned besides its text (see
	// [Part]). Nil for a text-only message.
	Parts []Part `json:"parts,omitempty"`
}

// ToolDef describes a tool offered to the model.
type ToolDef struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of the arguments object.
	Parameters json.RawMessage `json:"parameters"`
}

// Request is one call to a model.
type Request struct {
	// Model is the provider-specific model name (for "openai:gpt-4.1" it is
	// "gpt-4.1"); empty means the provider's default.
	Model string
	// Agent is the id of the agent or swarm making the call.
	Agent string
	// RunID is the run the call belongs to.
	RunID string
	// Call counts the earlier calls made by Agent in this run, failed attempts
	// included, as recorded in the run's journal. It is stable across crash
	// and recovery, which is what makes scripted models deterministic.
	Call int
	// System is the system prompt.
	System string
	// Messages is the conversation so far.
	Messages []Message
	// Tools are the tools the model may call.
	Tools []ToolDef
	// ResultSchema, when set, is the JSON schema a final answer should
	// conform to; providers that support structured output may use it.
	ResultSchema json.RawMessage
	// OnDelta, when set, receives streamed text as it arrives. A provider
	// that cannot stream ignores it; the final Response is authoritative.
	OnDelta func(Delta)
}

// Delta is a piece of streamed output.
type Delta struct {
	Text string
}

// Usage counts tokens of one or more calls.
type Usage struct {
	InputTokens       int64 `json:"input_tokens,omitempty"`
	OutputTokens      int64 `json:"output_tokens,omitempty"`
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	ReasoningTokens   int64 `json:"reasoning_tokens,omitempty"`
	// CacheWriteTokens counts input tokens written to the provider's prompt
	// cache (Anthropic's cache creation), billed at their own rate. They are
	// not part of InputTokens.
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// Calls counts the model calls that produced a response.
	Calls int64 `json:"calls,omitempty"`
	// Cost is the price of the calls in US dollars, when known.
	Cost float64 `json:"cost,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		ReasoningTokens:   u.ReasoningTokens + v.ReasoningTokens,
		CacheWriteTokens:  u.CacheWriteTokens + v.CacheWriteTokens,
		Calls:             u.Calls + v.Calls,
		Cost:              u.Cost + v.Cost,
	}
}

// Response is a model's answer: one assistant message.
type Response struct {
	// Message has Role assistant; it holds text, tool calls or both.
	Message Message
	Usage   Usage
	// FinishReason is the provider's reason for stopping, when known.
	FinishReason string
	// ID is the provider's id of the response, when it gives one.
	ID string
	// Model is the model that answered as the provider names it (it may
	// be more precise than the requested one, a dated version), when known.
	Model string
}

// Model generates one assistant message for a conversation.
//
// Implementations must be safe for concurrent use, must honour ctx
// cancellation, and must report failures as errors (see [Error] for the
// classification the runtime's retry policy uses).
type Model interface {
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// Func adapts a function to the Model interface.
type Func func(ctx context.Context, req *Request) (*Response, error)

// Generate calls f.
func (f Func) Generate(ctx context.Context, req *Request) (*Response, error) { return f(ctx, req) }
