package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/swarmrt/swarm/model"
)

// Generate answers req through the Chat Completions or the Responses API,
// streaming text to req.OnDelta when it is set.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req == nil {
		return nil, &model.Error{Kind: model.KindBadRequest, Provider: m.provider, Model: m.name, Err: errNilRequest}
	}
	name := m.modelName(req)
	if name == "" {
		return nil, m.badRequest(name, "no model name: use a spec such as "+m.provider+":MODEL")
	}
	var ro []option.RequestOption
	if m.agentHeader {
		ro = []option.RequestOption{option.WithHeader("X-Swarm-Agent", req.Agent), option.WithHeader("X-Swarm-Run", req.RunID)}
	}
	if m.api == Responses {
		return m.generateResponses(ctx, req, name, ro)
	}
	return m.generateChat(ctx, req, name, ro)
}

// chatCompletion is the part of a Chat Completions response the model
// reads, decoded with encoding/json rather than the SDK's reflective
// decoder, for the same reason as [Model.chatBody].
type chatCompletion struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   string `json:"content"`
			Refusal   string `json:"refusal"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

func (m *Model) generateChat(ctx context.Context, req *model.Request, name string, ro []option.RequestOption) (*model.Response, error) {
	body, err := m.chatBody(req, name, req.OnDelta != nil)
	if err != nil {
		return nil, err
	}
	if req.OnDelta != nil {
		return m.streamChat(ctx, req, name, body, ro)
	}
	raw, err := m.postChat(ctx, req, name, body)
	if err != nil {
		return nil, err
	}
	var c chatCompletion
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, &model.Error{Kind: model.KindServer, Provider: m.provider, Model: name, Message: "malformed response: " + err.Error()}
	}
	if len(c.Choices) == 0 {
		return nil, &model.Error{Kind: model.KindServer, Provider: m.provider, Model: name, Message: "malformed response: no choices"}
	}
	ch := &c.Choices[0]
	u := &c.Usage
	out := &model.Response{
		Message: model.Message{Role: model.RoleAssistant, Content: ch.Message.Content},
		Usage: model.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
			CachedInputTokens: u.PromptTokensDetails.CachedTokens, ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens},
		FinishReason: ch.FinishReason,
		ID:           c.ID,
		Model:        c.Model,
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: arguments(tc.Function.Arguments)})
	}
	return m.finish(name, out, ch.Message.Refusal)
}

// maxErrorBody bounds what is read of an error response's body.
const maxErrorBody = 64 << 10

// postChat sends a Chat Completions request with body and returns the
// response's body. It calls net/http itself rather than the SDK's service,
// whose request building (options, default headers, middleware) had cost
// a fifth of a round's CPU; it sends what the service sends for this
// model's options (the key, the configured headers, the agent headers),
// retries nothing (the runtime retries), and classifies failures as
// classify does.
func (m *Model) postChat(ctx context.Context, req *model.Request, name string, body []byte) ([]byte, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.chatURL, bytes.NewReader(body))
	if err != nil {
		return nil, m.badRequest(name, err.Error())
	}
	hreq.Header = m.header.Clone()
	if m.agentHeader {
		hreq.Header.Set("X-Swarm-Agent", req.Agent)
		hreq.Header.Set("X-Swarm-Run", req.RunID)
	}
	res, err := m.client.Do(hreq)
	if err != nil {
		return nil, model.TransportError(ctx, m.provider, name, err)
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		e := gjson.GetBytes(b, "error")
		code, msg := e.Get("code").String(), e.Get("message").String()
		if code == "" {
			code = e.Get("type").String()
		}
		if !e.IsObject() {
			msg = strings.TrimSpace(string(b))
		}
		cause := fmt.Errorf("POST %q: %s", m.chatURL, res.Status)
		return nil, model.HTTPError(m.provider, name, res.StatusCode, res.Header, code, msg, cause)
	}
	var buf bytes.Buffer
	if res.ContentLength > 0 && res.ContentLength < 64<<20 {
		buf.Grow(int(res.ContentLength))
	}
	if _, err := buf.ReadFrom(res.Body); err != nil {
		return nil, model.TransportError(ctx, m.provider, name, err)
	}
	return buf.Bytes(), nil
}

// post sends a Chat Completions request with body through the SDK's
// service, the response going to into: a *[]byte, or a **http.Response to
// stream it. The service's params are left empty (marshalling them costs
// little) and body replaces them.
func (m *Model) post(ctx context.Context, body []byte, into any, ro []option.RequestOption) error {
	ro = append(ro, option.WithRequestBody("application/json", body), option.WithResponseBodyInto(into), inMemoryBody(body))
	_, err := m.chat.New(ctx, openai.ChatCompletionNewParams{}, ro...)
	return err
}

// inMemoryBody hands net/http the request body as the in-memory reader it
// is. The SDK wraps every body in a closer of its own, which hides that
// from net/http: it then flushes the headers before copying the body, two
// writes to the connection per request instead of one (golang/go#22088).
func inMemoryBody(body []byte) option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		req.Body = io.NopCloser(bytes.NewReader(body))
		return next(req)
	})
}

// arguments are a tool call's arguments: the JSON text of the string the
// API sends, or, from a server that sends the object itself, that object.
func arguments(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || raw[0] != '"' {
		if string(raw) == "null" {
			return nil
		}
		return raw
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return raw
	}
	return json.RawMessage(s)
}

// finish turns refusals and content-filter stops without output into
// classified errors and fills in the usage's call count.
func (m *Model) finish(name string, out *model.Response, refusal string) (*model.Response, error) {
	out.Usage.Calls = 1
	empty := out.Message.Content == "" && len(out.Message.ToolCalls) == 0
	if refusal != "" && empty {
		return nil, &model.Error{Kind: model.KindRefused, Provider: m.provider, Model: name, Message: "the model refused: " + refusal}
	}
	if out.FinishReason == "content_filter" && empty {
		return nil, &model.Error{Kind: model.KindRefused, Provider: m.provider, Model: name, Message: "the response was blocked by the content filter"}
	}
	return out, nil
}

func chatUsage(u openai.CompletionUsage) model.Usage {
	return model.Usage{
		InputTokens:       u.PromptTokens,
		OutputTokens:      u.CompletionTokens,
		CachedInputTokens: u.PromptTokensDetails.CachedTokens,
		ReasoningTokens:   u.CompletionTokensDetails.ReasoningTokens,
	}
}

// streamChat streams a chat completion, passing text deltas to req.OnDelta
// and assembling the message, including tool calls whose arguments arrive
// split across chunks.
func (m *Model) streamChat(ctx context.Context, req *model.Request, name string, body []byte, ro []option.RequestOption) (*model.Response, error) {
	var res *http.Response
	err := m.post(ctx, body, &res, ro)
	stream := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), err)
	defer stream.Close()
	var (
		text, refusal strings.Builder
		calls         []streamCall
		out           = &model.Response{Message: model.Message{Role: model.RoleAssistant}}
		done          bool
	)
	for stream.Next() {
		chunk := stream.Current()
		if out.ID == "" {
			out.ID, out.Model = chunk.ID, chunk.Model
		}
		if chunk.JSON.Usage.Valid() {
			out.Usage = chatUsage(chunk.Usage)
		}
		for i := range chunk.Choices {
			c := &chunk.Choices[i]
			if c.Index != 0 {
				continue
			}
			if d := c.Delta.Content; d != "" {
				text.WriteString(d)
				req.OnDelta(model.Delta{Text: d})
			}
			refusal.WriteString(c.Delta.Refusal)
			for _, tc := range c.Delta.ToolCalls {
				calls = addCallDelta(calls, int(tc.Index), tc.ID, tc.Function.Name, tc.Function.Arguments)
			}
			if c.FinishReason != "" {
				out.FinishReason = c.FinishReason
				done = true
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, m.classify(ctx, name, err)
	}
	if !done {
		return nil, model.Truncated(m.provider, name, "its finish_reason")
	}
	out.Message.Content = text.String()
	out.Message.ToolCalls = assembleCalls(calls)
	return m.finish(name, out, refusal.String())
}

// streamCall is a tool call being assembled from stream deltas.
type streamCall struct {
	index    int
	id, name string
	args     []byte
}

// addCallDelta merges one tool call delta. Deltas of a call share its
// index; a delta carrying a new id at a used index starts another call (some
// compatible servers give every parallel call index 0).
func addCallDelta(calls []streamCall, index int, id, name, args string) []streamCall {
	at := -1
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].index == index {
			at = i
			break
		}
	}
	if at < 0 || (id != "" && calls[at].id != "" && calls[at].id != id) {
		calls = append(calls, streamCall{index: index})
		at = len(calls) - 1
	}
	c := &calls[at]
	if id != "" {
		c.id = id
	}
	if name != "" && name != c.name {
		c.name += name // split names are concatenated; repeated ones kept once
	}
	c.args = append(c.args, args...)
	return calls
}

func assembleCalls(calls []streamCall) []model.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]model.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = model.ToolCall{ID: c.id, Name: c.name, Arguments: json.RawMessage(c.args)}
	}
	return out
}
