package openai

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

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

// chatParams builds the Chat Completions request for req.
func (m *Model) chatParams(req *model.Request, name string) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: name}
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, openai.SystemMessage(req.System))
	}
	for i := range req.Messages {
		msg := &req.Messages[i]
		switch msg.Role {
		case model.RoleUser:
			msgs = append(msgs, openai.UserMessage(msg.Content))
		case model.RoleTool:
			msgs = append(msgs, openai.ToolMessage(msg.Content, msg.ToolCallID))
		case model.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(msg.Content)
			}
			if len(msg.ToolCalls) > 0 {
				a.ToolCalls = make([]openai.ChatCompletionMessageToolCallUnionParam, len(msg.ToolCalls))
				for j, tc := range msg.ToolCalls {
					args := string(tc.Arguments)
					if args == "" {
						args = "{}"
					}
					a.ToolCalls[j] = openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
					}}
				}
			}
			msgs = append(msgs, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return p, m.badRequest(name, "message with unknown role "+string(msg.Role))
		}
	}
	p.Messages = msgs
	if len(req.Tools) > 0 {
		p.Tools = make([]openai.ChatCompletionToolUnionParam, len(req.Tools))
		for i, t := range req.Tools {
			tool, err := chatTool(t)
			if err != nil {
				return p, m.badRequest(name, "tool "+t.Name+": "+err.Error())
			}
			p.Tools[i] = tool
		}
	}
	if schema := m.schemaObject(req.ResultSchema); schema != nil {
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name: "result", Schema: json.RawMessage(req.ResultSchema), Strict: param.NewOpt(false),
		}}
	}
	if m.maxTokens > 0 {
		if m.provider == "openai" {
			p.MaxCompletionTokens = param.NewOpt(m.maxTokens)
		} else {
			p.MaxTokens = param.NewOpt(m.maxTokens)
		}
	}
	return p, nil
}

// chatTool is a tool definition of a chat request. Its JSON is encoded
// once and cached: the same definitions go out with every call of a run,
// and encoding their schemas is a good part of a request's cost.
func chatTool(t model.ToolDef) (openai.ChatCompletionToolUnionParam, error) {
	key := t.Name + "\x00" + t.Description + "\x00" + string(t.Parameters)
	if v, ok := toolCache.Load(key); ok {
		return v.(openai.ChatCompletionToolUnionParam), nil
	}
	if _, err := params(t.Parameters); err != nil { // a JSON object
		return openai.ChatCompletionToolUnionParam{}, err
	}
	fn := struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}{t.Name, t.Description, t.Parameters}
	if len(fn.Parameters) == 0 {
		fn.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	raw, err := json.Marshal(struct {
		Type     string `json:"type"`
		Function any    `json:"function"`
	}{"function", fn})
	if err != nil {
		return openai.ChatCompletionToolUnionParam{}, err
	}
	tool := openai.ChatCompletionToolUnionParam{OfFunction: &openai.ChatCompletionFunctionToolParam{}}
	param.SetJSON(raw, tool.OfFunction)
	if toolCount.Add(1) <= maxCachedParams {
		toolCache.Store(key, tool)
	}
	return tool, nil
}

var (
	toolCache sync.Map
	toolCount atomic.Int64
)

func (m *Model) generateChat(ctx context.Context, req *model.Request, name string, ro []option.RequestOption) (*model.Response, error) {
	p, err := m.chatParams(req, name)
	if err != nil {
		return nil, err
	}
	if req.OnDelta != nil {
		return m.streamChat(ctx, req, name, p, ro)
	}
	c, err := m.chat.New(ctx, p, ro...)
	if err != nil {
		return nil, m.classify(ctx, name, err)
	}
	if len(c.Choices) == 0 {
		return nil, &model.Error{Kind: model.KindServer, Provider: m.provider, Model: name, Message: "malformed response: no choices"}
	}
	ch := &c.Choices[0]
	out := &model.Response{
		Message:      model.Message{Role: model.RoleAssistant, Content: ch.Message.Content},
		Usage:        chatUsage(c.Usage),
		FinishReason: ch.FinishReason,
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, model.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
	}
	return m.finish(name, out, ch.Message.Refusal)
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
func (m *Model) streamChat(ctx context.Context, req *model.Request, name string, p openai.ChatCompletionNewParams, ro []option.RequestOption) (*model.Response, error) {
	p.StreamOptions.IncludeUsage = param.NewOpt(true)
	stream := m.chat.NewStreaming(ctx, p, ro...)
	defer stream.Close()
	var (
		text, refusal strings.Builder
		calls         []streamCall
		out           = &model.Response{Message: model.Message{Role: model.RoleAssistant}}
		done          bool
	)
	for stream.Next() {
		chunk := stream.Current()
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
