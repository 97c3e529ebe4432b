// Package anthropic is the [model.Model] provider for Anthropic's Messages
// API, built on the official SDK github.com/anthropics/anthropic-sdk-go.
//
// Importing the package registers the provider "anthropic": the model spec
// "anthropic:claude-sonnet-4-5" opens that model with the key in
// ANTHROPIC_API_KEY and the base URL in ANTHROPIC_BASE_URL (default
// https://api.anthropic.com). [New] builds a model directly.
//
// The SDK's own retries are off: a failure is returned at once as a
// classified [*model.Error] (429 rate limited, 529 overloaded and 5xx
// retryable) and the swarm runtime's retry policy decides.
package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/tidwall/gjson"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/internal/httpclient"
)

// Provider is the provider name in model specs and errors.
const Provider = "anthropic"

// DefaultMaxTokens is the output bound of a call when none is set: the
// Messages API requires one.
const DefaultMaxTokens = 8192

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com"

func init() {
	model.Register(Provider, func(name string) (model.Model, error) { return Open(name) })
}

// Open returns the model name on the API at $ANTHROPIC_BASE_URL (default
// [DefaultBaseURL]) with the key in $ANTHROPIC_API_KEY, which must be set.
func Open(name string) (*Model, error) {
	if name == "" {
		return nil, fmt.Errorf("%s: missing model name (use a spec such as %q)", Provider, "anthropic:claude-sonnet-4-5")
	}
	key := os.Getenv("ANTHROPIC_API_KEY")
	if key == "" {
		return nil, fmt.Errorf("%s: no API key: set ANTHROPIC_API_KEY", Provider)
	}
	opts := []Option{WithModel(name), WithAPIKey(key)}
	if base := os.Getenv("ANTHROPIC_BASE_URL"); base != "" {
		opts = append(opts, WithBaseURL(base))
	}
	return New(opts...)
}

// Option configures a [Model].
type Option func(*config)

type config struct {
	model, baseURL, apiKey string
	headers                [][2]string
	client                 *http.Client
	maxTokens              int64
	agentHeader            bool
}

// WithModel sets the model name used when a request names none.
func WithModel(name string) Option { return func(c *config) { c.model = name } }

// WithBaseURL sets the API's base URL (default [DefaultBaseURL]).
func WithBaseURL(url string) Option { return func(c *config) { c.baseURL = url } }

// WithAPIKey sets the API key (sent as x-api-key).
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithHeader adds a header to every request.
func WithHeader(key, value string) Option {
	return func(c *config) { c.headers = append(c.headers, [2]string{key, value}) }
}

// WithHTTPClient sets the HTTP client.
func WithHTTPClient(client *http.Client) Option { return func(c *config) { c.client = client } }

// WithMaxTokens sets max_tokens of each call (default [DefaultMaxTokens]).
func WithMaxTokens(n int64) Option { return func(c *config) { c.maxTokens = n } }

// WithAgentHeader sends the calling agent's id and the run's id in the
// X-Swarm-Agent and X-Swarm-Run headers.
func WithAgentHeader() Option { return func(c *config) { c.agentHeader = true } }

// Model is an Anthropic model. It is safe for concurrent use.
type Model struct {
	name        string
	maxTokens   int64
	agentHeader bool
	messages    anthropic.MessageService
}

// New returns a model with the given options. It reads no environment
// variables ([Open] and model specs do).
func New(opts ...Option) (*Model, error) {
	c := config{baseURL: DefaultBaseURL, maxTokens: DefaultMaxTokens}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.maxTokens <= 0 {
		return nil, fmt.Errorf("%s: max tokens must be positive, got %d", Provider, c.maxTokens)
	}
	if c.client == nil {
		c.client = httpclient.Default()
	}
	base := c.baseURL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	ro := []option.RequestOption{option.WithBaseURL(base), option.WithHTTPClient(c.client), option.WithMaxRetries(0)}
	if c.apiKey != "" {
		ro = append(ro, option.WithAPIKey(c.apiKey))
	}
	for _, h := range c.headers {
		ro = append(ro, option.WithHeader(h[0], h[1]))
	}
	return &Model{name: c.model, maxTokens: c.maxTokens, agentHeader: c.agentHeader, messages: anthropic.NewMessageService(ro...)}, nil
}

// Name returns the model's default model name.
func (m *Model) Name() string { return m.name }

// params builds the Messages API request. Consecutive tool results become
// tool_result blocks of one user message, as the API requires after a
// response with parallel tool use.
func (m *Model) params(req *model.Request, name string) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(name), MaxTokens: m.maxTokens}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	if err := model.CheckParts(Provider, name, req.Messages); err != nil {
		return p, err
	}
	msgs := make([]anthropic.MessageParam, 0, len(req.Messages))
	for i := range req.Messages {
		msg := &req.Messages[i]
		var role anthropic.MessageParamRole
		var blocks []anthropic.ContentBlockParamUnion
		switch msg.Role {
		case model.RoleUser:
			role, blocks = anthropic.MessageParamRoleUser, []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(msg.Content)}
			if len(msg.Parts) > 0 {
				if msg.Content == "" {
					blocks = blocks[:0]
				}
				for j := range msg.Parts {
					b, err := partBlock(name, i, j, &msg.Parts[j])
					if err != nil {
						return p, err
					}
					blocks = append(blocks, b)
				}
			}
		case model.RoleTool:
			role, blocks = anthropic.MessageParamRoleUser, []anthropic.ContentBlockParamUnion{anthropic.NewToolResultBlock(msg.ToolCallID, msg.Content, msg.IsError)}
			if len(msg.Parts) > 0 {
				tr := blocks[0].OfToolResult
				if msg.Content == "" {
					tr.Content = tr.Content[:0]
				}
				for j := range msg.Parts {
					b, err := partBlock(name, i, j, &msg.Parts[j])
					if err != nil {
						return p, err
					}
					tr.Content = append(tr.Content, anthropic.ToolResultBlockParamContentUnion{OfText: b.OfText, OfImage: b.OfImage, OfDocument: b.OfDocument})
				}
			}
		case model.RoleAssistant:
			if len(msg.Parts) > 0 {
				return p, model.Unsupported(Provider, name, i, 0, &msg.Parts[0], "an assistant message takes no parts")
			}
			role = anthropic.MessageParamRoleAssistant
			if msg.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(msg.Content))
			}
			for _, tc := range msg.ToolCalls {
				args := tc.Arguments
				if !json.Valid(args) {
					args = json.RawMessage("{}")
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, args, tc.Name))
			}
			if len(blocks) == 0 {
				blocks = []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock("(empty)")}
			}
		default:
			return p, &model.Error{Kind: model.KindBadRequest, Provider: Provider, Model: name, Message: "message with unknown role " + string(msg.Role)}
		}
		// Merge into the previous message of the same role: the API wants
		// roles to alternate.
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
		} else {
			msgs = append(msgs, anthropic.MessageParam{Role: role, Content: blocks})
		}
	}
	p.Messages = msgs
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return p, &model.Error{Kind: model.KindBadRequest, Provider: Provider, Model: name, Message: "tool " + t.Name + ": " + err.Error()}
		}
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return p, nil
}

// partBlock is a part as a content block: text; an image (base64 of
// image/jpeg, image/png, image/gif or image/webp, or a URL); a document
// (base64 of application/pdf, text/plain as text, or a PDF's URL), titled
// with the file's name. The Messages API takes no audio. The blocks it
// returns are also valid in a tool_result's content.
func partBlock(name string, i, j int, p *model.Part) (anthropic.ContentBlockParamUnion, error) {
	switch p.Type {
	case model.PartText:
		return anthropic.NewTextBlock(p.Text), nil
	case model.PartImage:
		if p.URL != "" && !strings.HasPrefix(p.URL, "data:") {
			return anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: p.URL}), nil
		}
		data, mt, err := partData(p)
		if err != nil {
			return anthropic.ContentBlockParamUnion{}, model.Unsupported(Provider, name, i, j, p, err.Error())
		}
		switch mt {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
		default:
			return anthropic.ContentBlockParamUnion{}, model.Unsupported(Provider, name, i, j, p, "the Messages API takes images of type image/jpeg, image/png, image/gif or image/webp")
		}
		return anthropic.NewImageBlockBase64(mt, base64.StdEncoding.EncodeToString(data)), nil
	case model.PartFile:
		var doc anthropic.DocumentBlockParam
		if p.URL != "" && !strings.HasPrefix(p.URL, "data:") {
			doc.Source.OfURL = &anthropic.URLPDFSourceParam{URL: p.URL}
		} else {
			data, mt, err := partData(p)
			if err != nil {
				return anthropic.ContentBlockParamUnion{}, model.Unsupported(Provider, name, i, j, p, err.Error())
			}
			switch {
			case mt == "application/pdf":
				doc.Source.OfBase64 = &anthropic.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(data)}
			case mt == "text/plain" && utf8.Valid(data):
				doc.Source.OfText = &anthropic.PlainTextSourceParam{Data: string(data)}
			default:
				return anthropic.ContentBlockParamUnion{}, model.Unsupported(Provider, name, i, j, p, "the Messages API takes documents of type application/pdf or text/plain (UTF-8)")
			}
		}
		if p.Name != "" {
			doc.Title = param.NewOpt(p.Name)
		}
		return anthropic.ContentBlockParamUnion{OfDocument: &doc}, nil
	}
	return anthropic.ContentBlockParamUnion{}, model.Unsupported(Provider, name, i, j, p, "the Messages API takes text, images and documents, not "+string(p.Type))
}

// partData returns a part's bytes and bare media type, decoding a data: URL.
func partData(p *model.Part) ([]byte, string, error) {
	data, mt := p.Data, p.MediaType
	if len(data) == 0 {
		rest, ok := strings.CutPrefix(p.URL, "data:")
		meta, enc, found := strings.Cut(rest, ",")
		if !ok || !found || !strings.HasSuffix(meta, ";base64") {
			return nil, "", errors.New("a data: URL must be base64")
		}
		var err error
		if data, err = base64.StdEncoding.DecodeString(enc); err != nil {
			return nil, "", fmt.Errorf("data: URL: %w", err)
		}
		mt = strings.TrimSuffix(meta, ";base64")
	}
	mt, _, _ = strings.Cut(mt, ";")
	return data, strings.ToLower(strings.TrimSpace(mt)), nil
}

// inputSchema splits a JSON schema into the SDK's input schema.
func inputSchema(raw json.RawMessage) (anthropic.ToolInputSchemaParam, error) {
	var s anthropic.ToolInputSchemaParam
	if len(raw) == 0 {
		return s, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return s, fmt.Errorf("parameters are not a JSON object: %w", err)
	}
	s.Properties = obj["properties"]
	if req, ok := obj["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	delete(obj, "properties")
	delete(obj, "required")
	delete(obj, "type")
	if len(obj) > 0 {
		s.ExtraFields = obj
	}
	return s, nil
}

// Generate answers req, streaming text to req.OnDelta when it is set.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req == nil {
		return nil, &model.Error{Kind: model.KindBadRequest, Provider: Provider, Model: m.name, Message: "nil request"}
	}
	name := req.Model
	if name == "" {
		name = m.name
	}
	if name == "" {
		return nil, &model.Error{Kind: model.KindBadRequest, Provider: Provider, Message: "no model name: use a spec such as anthropic:claude-sonnet-4-5"}
	}
	p, err := m.params(req, name)
	if err != nil {
		return nil, err
	}
	var ro []option.RequestOption
	if m.agentHeader {
		ro = []option.RequestOption{option.WithHeader("X-Swarm-Agent", req.Agent), option.WithHeader("X-Swarm-Run", req.RunID)}
	}
	if req.OnDelta == nil {
		msg, err := m.messages.New(ctx, p, ro...)
		if err != nil {
			return nil, classify(ctx, name, err)
		}
		return convert(name, msg)
	}
	stream := m.messages.NewStreaming(ctx, p, ro...)
	defer stream.Close()
	var msg anthropic.Message
	stopped := false
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, &model.Error{Kind: model.KindServer, Provider: Provider, Model: name, Message: "malformed stream: " + err.Error(), Err: err}
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				req.OnDelta(model.Delta{Text: ev.Delta.Text})
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, classify(ctx, name, err)
	}
	if !stopped {
		return nil, model.Truncated(Provider, name, "message_stop")
	}
	return convert(name, &msg)
}

// convert turns a finished message into a response. Stop reasons map to
// OpenAI's words: end_turn and stop_sequence "stop", max_tokens and
// model_context_window_exceeded "length", tool_use "tool_calls"; a refusal
// without output is a [model.KindRefused] error; pause_turn is kept as is.
func convert(name string, msg *anthropic.Message) (*model.Response, error) {
	out := &model.Response{
		Message: model.Message{Role: model.RoleAssistant},
		Usage: model.Usage{
			InputTokens:       msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens,
			CachedInputTokens: msg.Usage.CacheReadInputTokens,
			CacheWriteTokens:  msg.Usage.CacheCreationInputTokens,
			OutputTokens:      msg.Usage.OutputTokens,
			Calls:             1,
		},
		ID:    msg.ID,
		Model: string(msg.Model),
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := b.Input
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			out.Message.ToolCalls = append(out.Message.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	out.Message.Content = text.String()
	switch msg.StopReason {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence, "":
		out.FinishReason = "stop"
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		out.FinishReason = "length"
	case anthropic.StopReasonToolUse:
		out.FinishReason = "tool_calls"
	case anthropic.StopReasonRefusal:
		if out.Message.Content == "" && len(out.Message.ToolCalls) == 0 {
			return nil, &model.Error{Kind: model.KindRefused, Provider: Provider, Model: name, Message: "the model refused to answer (stop_reason refusal)"}
		}
		out.FinishReason = "content_filter"
	default:
		out.FinishReason = string(msg.StopReason)
	}
	return out, nil
}

// classify maps an SDK error to a [*model.Error].
func classify(ctx context.Context, name string, err error) error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode >= 400 {
		var header http.Header
		if apiErr.Response != nil {
			header = apiErr.Response.Header
		}
		raw := apiErr.RawJSON()
		return model.HTTPError(Provider, name, apiErr.StatusCode, header, gjson.Get(raw, "error.type").String(), gjson.Get(raw, "error.message").String(), err)
	}
	if apiErr != nil { // an error event in a stream that began with 200
		return streamError(name, []byte(apiErr.RawJSON()), err)
	}
	const prefix = "received error while streaming: "
	if msg := err.Error(); strings.HasPrefix(msg, prefix) {
		return streamError(name, []byte(msg[len(prefix):]), err)
	}
	return model.TransportError(ctx, Provider, name, err)
}

// streamError classifies an error event sent mid-stream.
func streamError(name string, data []byte, err error) error {
	typ := gjson.GetBytes(data, "error.type").String()
	status := http.StatusInternalServerError
	switch typ {
	case "overloaded_error":
		status = 529
	case "rate_limit_error":
		status = http.StatusTooManyRequests
	case "invalid_request_error":
		status = http.StatusBadRequest
	case "authentication_error":
		status = http.StatusUnauthorized
	}
	me := model.HTTPError(Provider, name, status, nil, typ, gjson.GetBytes(data, "error.message").String(), err)
	me.Message = "error event in stream: " + me.Message
	return me
}
