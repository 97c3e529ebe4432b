package openai

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/swarmrt/swarm/model"
)

// responsesParams builds the Responses API request for req. Nothing is
// stored server-side: the whole conversation is sent on every call, as the
// runtime's journal is the source of truth.
func (m *Model) responsesParams(req *model.Request, name string) (responses.ResponseNewParams, error) {
	p := responses.ResponseNewParams{Model: name, Store: param.NewOpt(false)}
	if req.System != "" {
		p.Instructions = param.NewOpt(req.System)
	}
	if err := model.CheckParts(m.provider, name, req.Messages); err != nil {
		return p, err
	}
	items := make(responses.ResponseInputParam, 0, len(req.Messages))
	for i := range req.Messages {
		msg := &req.Messages[i]
		switch msg.Role {
		case model.RoleUser:
			if len(msg.Parts) == 0 {
				items = append(items, responses.ResponseInputItemParamOfMessage(msg.Content, responses.EasyInputMessageRoleUser))
				continue
			}
			content, err := m.inputContent(name, i, msg)
			if err != nil {
				return p, err
			}
			items = append(items, responses.ResponseInputItemParamOfMessage(content, responses.EasyInputMessageRoleUser))
		case model.RoleAssistant:
			if len(msg.Parts) > 0 {
				return p, model.Unsupported(m.provider, name, i, 0, &msg.Parts[0], "an assistant message takes no parts")
			}
			if msg.Content != "" {
				items = append(items, responses.ResponseInputItemParamOfMessage(msg.Content, responses.EasyInputMessageRoleAssistant))
			}
			for _, tc := range msg.ToolCalls {
				args := string(tc.Arguments)
				if args == "" {
					args = "{}"
				}
				items = append(items, responses.ResponseInputItemParamOfFunctionCall(args, tc.ID, tc.Name))
			}
		case model.RoleTool:
			item := responses.ResponseInputItemParamOfFunctionCallOutput(msg.Content)
			if len(msg.Parts) > 0 {
				output, err := m.outputContent(name, i, msg)
				if err != nil {
					return p, err
				}
				item = responses.ResponseInputItemParamOfFunctionCallOutput(output)
			}
			item.OfFunctionCallOutput.CallID = param.NewOpt(msg.ToolCallID)
			items = append(items, item)
		default:
			return p, m.badRequest(name, "message with unknown role "+string(msg.Role))
		}
	}
	p.Input.OfInputItemList = items
	for _, t := range req.Tools {
		schema, err := params(t.Parameters)
		if err != nil {
			return p, m.badRequest(name, "tool "+t.Name+": "+err.Error())
		}
		tool := responses.ToolParamOfFunction(t.Name, schema, false)
		if t.Description != "" {
			tool.OfFunction.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, tool)
	}
	if schema := m.schemaObject(req.ResultSchema); schema != nil {
		p.Text.Format.OfJSONSchema = &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "result", Schema: schema, Strict: param.NewOpt(false)}
	}
	if m.maxTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(m.maxTokens)
	}
	return p, nil
}

func (m *Model) generateResponses(ctx context.Context, req *model.Request, name string, ro []option.RequestOption) (*model.Response, error) {
	p, err := m.responsesParams(req, name)
	if err != nil {
		return nil, err
	}
	if req.OnDelta == nil {
		r, err := m.responses.New(ctx, p, ro...)
		if err != nil {
			return nil, m.classify(ctx, name, err)
		}
		return m.responseOf(name, r)
	}
	stream := m.responses.NewStreaming(ctx, p, ro...)
	defer stream.Close()
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			if ev.Delta != "" {
				req.OnDelta(model.Delta{Text: ev.Delta})
			}
		case "response.completed", "response.incomplete":
			r := ev.Response
			return m.responseOf(name, &r)
		case "response.failed":
			return nil, streamError(m.provider, name, []byte(ev.RawJSON()), nil)
		case "error":
			return nil, streamError(m.provider, name, []byte(`{"error":`+ev.RawJSON()+`}`), nil)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, m.classify(ctx, name, err)
	}
	return nil, model.Truncated(m.provider, name, "response.completed")
}

// responseOf converts a finished response.
func (m *Model) responseOf(name string, r *responses.Response) (*model.Response, error) {
	if r.Status == "failed" {
		return nil, streamError(m.provider, name, []byte(`{"error":`+r.Error.RawJSON()+`}`), nil)
	}
	out := &model.Response{
		Message: model.Message{Role: model.RoleAssistant},
		Usage: model.Usage{
			InputTokens:       r.Usage.InputTokens,
			OutputTokens:      r.Usage.OutputTokens,
			CachedInputTokens: r.Usage.InputTokensDetails.CachedTokens,
			ReasoningTokens:   r.Usage.OutputTokensDetails.ReasoningTokens,
		},
		FinishReason: "stop",
		ID:           r.ID,
		Model:        string(r.Model),
	}
	var text, refusal strings.Builder
	for _, item := range r.Output {
		switch item.Type {
		case "message":
			for _, c := range item.Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refusal.WriteString(c.Refusal)
				}
			}
		case "function_call":
			out.Message.ToolCalls = append(out.Message.ToolCalls, model.ToolCall{ID: item.CallID, Name: item.Name, Arguments: json.RawMessage(item.Arguments.OfString)})
		}
	}
	out.Message.Content = text.String()
	switch {
	case r.Status == "incomplete" && r.IncompleteDetails.Reason == "content_filter":
		out.FinishReason = "content_filter"
	case r.Status == "incomplete":
		out.FinishReason = "length"
	case len(out.Message.ToolCalls) > 0:
		out.FinishReason = "tool_calls"
	}
	return m.finish(name, out, refusal.String())
}

// inputContent is a user message with parts as Responses input content:
// its text, then input_text, input_image (a URL or a data: URL) and
// input_file (file_data as a data: URL, or file_url) items. The Responses
// API takes no audio input.
func (m *Model) inputContent(name string, i int, msg *model.Message) (responses.ResponseInputMessageContentListParam, error) {
	return responseParts(m, name, i, msg,
		func(text string) responses.ResponseInputContentUnionParam {
			return responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: text}}
		},
		func(url string) responses.ResponseInputContentUnionParam {
			return responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
				ImageURL: param.NewOpt(url), Detail: responses.ResponseInputImageDetailAuto}}
		},
		func(filename, data, url param.Opt[string]) responses.ResponseInputContentUnionParam {
			return responses.ResponseInputContentUnionParam{OfInputFile: &responses.ResponseInputFileParam{Filename: filename, FileData: data, FileURL: url}}
		})
}

// outputContent is a tool message with parts as a function_call_output's
// list of output items: its text, then input_text, input_image and
// input_file items, as for a user message.
func (m *Model) outputContent(name string, i int, msg *model.Message) (responses.ResponseFunctionCallOutputItemListParam, error) {
	return responseParts(m, name, i, msg,
		func(text string) responses.ResponseFunctionCallOutputItemUnionParam {
			return responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: text}}
		},
		func(url string) responses.ResponseFunctionCallOutputItemUnionParam {
			return responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{ImageURL: param.NewOpt(url)}}
		},
		func(filename, data, url param.Opt[string]) responses.ResponseFunctionCallOutputItemUnionParam {
			return responses.ResponseFunctionCallOutputItemUnionParam{OfInputFile: &responses.ResponseInputFileContentParam{Filename: filename, FileData: data, FileURL: url}}
		})
}

// responseParts turns a message's text and parts into Responses content
// items of type T, made by text, image and file.
func responseParts[T any](m *Model, name string, i int, msg *model.Message,
	text func(string) T, image func(url string) T, file func(filename, data, url param.Opt[string]) T) ([]T, error) {
	out := make([]T, 0, len(msg.Parts)+1)
	if msg.Content != "" {
		out = append(out, text(msg.Content))
	}
	for j := range msg.Parts {
		p := &msg.Parts[j]
		switch p.Type {
		case model.PartText:
			out = append(out, text(p.Text))
		case model.PartImage:
			out = append(out, image(p.DataURL()))
		case model.PartFile:
			var data, url param.Opt[string]
			if len(p.Data) > 0 || strings.HasPrefix(p.URL, "data:") {
				data = param.NewOpt(p.DataURL())
			} else {
				url = param.NewOpt(p.URL)
			}
			out = append(out, file(param.NewOpt(fileName(p)), data, url))
		default:
			return nil, model.Unsupported(m.provider, name, i, j, p, "the Responses API takes text, images and files, not "+string(p.Type))
		}
	}
	return out, nil
}

// fileName is a file part's name, "file" when it has none.
func fileName(p *model.Part) string {
	if p.Name == "" {
		return "file"
	}
	return p.Name
}
