package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/modeltest"
)

// sdkBody encodes req through the SDK's own request params, the reference
// chatBody must agree with.
func sdkBody(t *testing.T, m *Model, req *model.Request, name string, stream bool) []byte {
	t.Helper()
	p := openai.ChatCompletionNewParams{Model: name}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(msg.Content))
		case model.RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(msg.Content, msg.ToolCallID))
		case model.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(msg.Content)
			}
			for _, tc := range msg.ToolCalls {
				args := string(tc.Arguments)
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args}}})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, td := range req.Tools {
		var params map[string]any
		if err := json.Unmarshal(td.Parameters, &params); err != nil {
			t.Fatal(err)
		}
		fn := shared.FunctionDefinitionParam{Name: td.Name, Parameters: params}
		if td.Description != "" {
			fn.Description = param.NewOpt(td.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if len(req.ResultSchema) > 0 {
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name: "result", Schema: req.ResultSchema, Strict: param.NewOpt(false)}}
	}
	if m.maxTokens > 0 {
		p.MaxCompletionTokens = param.NewOpt(m.maxTokens)
	}
	if stream {
		p.StreamOptions.IncludeUsage = param.NewOpt(true)
	}
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if stream {
		b = append(b[:len(b)-1], `,"stream":true}`...)
	}
	return b
}

func TestChatBodyMatchesSDK(t *testing.T) {
	m, err := New(WithModel("m"), WithMaxTokens(100))
	if err != nil {
		t.Fatal(err)
	}
	odd := "quote \" backslash \\ newline \n tab \t nul \x00 bell \x07 <html> & é 世界 \u2028 \u2029 bad \xff\xfe end"
	req := &model.Request{
		System: "You are the orchestrator. " + odd,
		Messages: []model.Message{
			{Role: model.RoleUser, Content: odd},
			{Role: model.RoleAssistant, Content: "thinking", ToolCalls: []model.ToolCall{
				{ID: "c1", Name: "handoff_to_specialist", Arguments: json.RawMessage(`{"request":"` + strings.ReplaceAll(odd, "\n", `\n`) + `"}`)},
				{ID: "c2", Name: "lookup"},
			}},
			{Role: model.RoleTool, ToolCallID: "c1", Content: "42"},
			{Role: model.RoleTool, ToolCallID: "c2", Content: ""},
			{Role: model.RoleAssistant, Content: ""},
		},
		Tools: []model.ToolDef{
			{Name: "handoff_to_specialist", Description: "A specialist.", Parameters: json.RawMessage("{\"type\": \"object\",\n \"properties\": {\"request\": {\"type\": \"string\"}}}")},
			{Name: "lookup", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"` + "<&>" + `"}}}`)},
		},
		ResultSchema: json.RawMessage(`{"type": "object", "properties": {"answer": {"type": "string"}}}`),
	}
	for _, stream := range []bool{false, true} {
		got, err := m.chatBody(req, "m", stream)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(got) {
			t.Fatalf("stream %v: invalid JSON: %s", stream, got)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(sdkBody(t, m, req, "m", stream), &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("stream %v: body differs from the SDK's encoding:\n got %s\nwant %s", stream, got, sdkBody(t, m, req, "m", stream))
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "a\"b\\c", "\x00\x01\x1f\x7f", "\n\r\t", "é世界🙂", "\u2028\u2029", "\xff", "a\xc3", "<>&"} {
		got := appendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q: %s is not a JSON string: %v", s, got, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if !utf8.ValidString(s) {
			want = string([]rune(s)) // each bad byte becomes U+FFFD, as encoding/json does
		}
		if back != want {
			t.Errorf("%q: round trip gave %q, want %q", s, back, want)
		}
		std, _ := json.Marshal(s)
		if strings.ContainsAny(s, "<>&") {
			continue // encoding/json escapes HTML characters; a request body need not
		}
		if string(got) != string(std) {
			t.Errorf("%q: got %s, encoding/json gives %s", s, got, std)
		}
	}
}

// countingConn counts the writes to a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// A request goes out in one write: headers and body together, streamed or
// not.
func TestChatRequestOneWrite(t *testing.T) {
	srv := modeltest.NewServer(modeltest.OpenAIChat, func(*modeltest.Call) (modeltest.Reply, modeltest.Fault) {
		return modeltest.Reply{Text: "hi"}, modeltest.Fault{}
	})
	defer srv.Close()
	var writes atomic.Int64
	var d net.Dialer
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		return countingConn{c, &writes}, err
	}}}
	defer client.CloseIdleConnections()
	m, err := New(WithBaseURL(srv.URL), WithHTTPClient(client), WithModel("m"), WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, stream := range []bool{false, true} {
		req := &model.Request{System: "s", Messages: []model.Message{{Role: model.RoleUser, Content: strings.Repeat("x", 2000)}}}
		if stream {
			req.OnDelta = func(model.Delta) {}
		}
		before := writes.Load()
		resp, err := m.Generate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Message.Content != "hi" {
			t.Fatalf("stream %v: answer %q", stream, resp.Message.Content)
		}
		if n := writes.Load() - before; n != 1 {
			t.Errorf("stream %v: the request took %d writes, want 1", stream, n)
		}
	}
}

// A loaded blob's base64 is encoded once per model and reused, keyed by
// its hash; bytes without a blob are encoded every time.
func TestBlobEncodingCached(t *testing.T) {
	m, err := New(WithModel("m"))
	if err != nil {
		t.Fatal(err)
	}
	img := []byte("\x89PNG\r\n\x1a\nimage bytes")
	p := model.Part{Type: model.PartImage, MediaType: "image/png", Data: img, Blob: strings.Repeat("ab", 32), Size: int64(len(img))}
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "look", Parts: []model.Part{p}}}}
	first, err := m.chatBody(req, "m", false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(first), base64.StdEncoding.EncodeToString(img)) {
		t.Fatalf("body %s lacks the image", first)
	}
	img[len(img)-1] = '!' // the same hash names the same bytes: the cached encoding is used
	second, _ := m.chatBody(req, "m", false)
	if string(second) != string(first) {
		t.Error("the blob's base64 was encoded again")
	}
	req.Messages[0].Parts[0].Blob = ""
	third, _ := m.chatBody(req, "m", false)
	if !strings.Contains(string(third), base64.StdEncoding.EncodeToString(img)) {
		t.Error("bytes without a blob were not encoded afresh")
	}
}
