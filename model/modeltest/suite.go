package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm/model"
)

// Config describes a provider to [Run].
type Config struct {
	// Wire is the API the provider speaks.
	Wire Wire
	// New returns the provider under test calling the API at baseURL with
	// client, with the model name "test-model" and no retries of its own.
	New func(baseURL string, client *http.Client) model.Model
	// StructuredOutput says that the provider sends Request.ResultSchema.
	StructuredOutput bool
	// ToolErrors says that the API carries Message.IsError of tool results.
	ToolErrors bool
	// ContextTooLong is the fault a server of this API answers a prompt
	// longer than the context window with.
	ContextTooLong Fault
	// CacheWrites says that the API reports cache writes.
	CacheWrites bool
	// Parts, when set, says what parts the API takes; the suite then
	// sends images, files and audio and checks that they arrive as the
	// vendor documents them, and that parts the API cannot take fail
	// with [model.ErrUnsupportedPart] before any request.
	Parts *Parts
}

// Parts describes the parts an API takes: every API of the suite takes
// images (bytes and URLs) and PDF files in user messages and in tool
// results.
type Parts struct {
	// Audio: the API takes wav audio in a user message.
	Audio bool
	// ToolMediaAsUser: the API takes only text in a tool message, so the
	// images and files of tool results travel in a user message after
	// them (Chat Completions).
	ToolMediaAsUser bool
}

// Run checks that the provider of cfg speaks cfg.Wire correctly: text,
// parallel tool calls with arguments split across chunks, usage, refusals,
// finish reasons, the request it sends, every kind of error, malformed and
// truncated streams, dropped connections, and cancellation without leaking
// goroutines. Every case runs streamed (with Request.OnDelta) and not.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	for _, stream := range []bool{false, true} {
		mode := "plain"
		if stream {
			mode = "stream"
		}
		t.Run(mode, func(t *testing.T) { run(t, cfg, stream) })
	}
}

// fixture is a server answering with the reply and fault the test sets.
type fixture struct {
	srv    *Server
	client *http.Client
	m      model.Model
	reply  Reply
	fault  Fault
}

func newFixture(t *testing.T, cfg Config) *fixture {
	f := &fixture{}
	f.srv = NewServer(cfg.Wire, func(*Call) (Reply, Fault) { return f.reply, f.fault })
	f.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	f.m = cfg.New(f.srv.URL, f.client)
	t.Cleanup(func() {
		f.client.CloseIdleConnections()
		f.srv.Close()
	})
	return f
}

func (f *fixture) call(ctx context.Context, req *model.Request, stream bool) (*model.Response, []string, error) {
	var deltas []string
	if stream {
		req.OnDelta = func(d model.Delta) { deltas = append(deltas, d.Text) }
	}
	resp, err := f.m.Generate(ctx, req)
	return resp, deltas, err
}

func baseRequest() *model.Request {
	return &model.Request{Agent: "tester", RunID: "run-1", System: "You are terse.", Messages: []model.Message{{Role: model.RoleUser, Content: "Hi"}}}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

func run(t *testing.T, cfg Config, stream bool) {
	ctx := context.Background()
	before := runtime.NumGoroutine()

	if cfg.Parts != nil {
		t.Run("parts", func(t *testing.T) { runParts(t, cfg, stream) })
	}

	t.Run("text", func(t *testing.T) {
		f := newFixture(t, cfg)
		usage := model.Usage{InputTokens: 120, CachedInputTokens: 40, OutputTokens: 30, ReasoningTokens: 0}
		if cfg.CacheWrites {
			usage.CacheWriteTokens = 7
		}
		text := "Hello there, world: streamed in pieces — with ünïcode."
		f.reply = Reply{Text: text, Usage: usage, ID: "r42"}
		resp, deltas, err := f.call(ctx, baseRequest(), stream)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if !strings.HasSuffix(resp.ID, "r42") || resp.Model != "fake-model" {
			t.Errorf("response id %q and model %q, want the provider's (ending r42, fake-model)", resp.ID, resp.Model)
		}
		if resp.Message.Role != model.RoleAssistant || resp.Message.Content != text || len(resp.Message.ToolCalls) != 0 {
			t.Errorf("message = %+v, want assistant text %q", resp.Message, text)
		}
		if resp.FinishReason != "stop" {
			t.Errorf("finish reason = %q, want stop", resp.FinishReason)
		}
		want := usage
		want.Calls = 1
		if resp.Usage != want {
			t.Errorf("usage = %+v, want %+v", resp.Usage, want)
		}
		if stream {
			if len(deltas) < 2 || strings.Join(deltas, "") != text {
				t.Errorf("deltas = %q, want several pieces concatenating to %q", deltas, text)
			}
		} else if len(deltas) != 0 {
			t.Errorf("deltas without OnDelta: %q", deltas)
		}
	})

	t.Run("parallel tool calls", func(t *testing.T) {
		f := newFixture(t, cfg)
		calls := []model.ToolCall{
			{ID: "call_a", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris","days":[1,2]}`)},
			{ID: "call_b", Name: "calendar", Arguments: json.RawMessage(`{"who":"me","note":"a \"quoted\" word"}`)},
		}
		f.reply = Reply{Text: "Checking both.", ToolCalls: calls, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}
		resp, deltas, err := f.call(ctx, baseRequest(), stream)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if resp.FinishReason != "tool_calls" {
			t.Errorf("finish reason = %q, want tool_calls", resp.FinishReason)
		}
		if resp.Message.Content != "Checking both." {
			t.Errorf("content = %q", resp.Message.Content)
		}
		if len(resp.Message.ToolCalls) != 2 {
			t.Fatalf("tool calls = %+v, want 2", resp.Message.ToolCalls)
		}
		for i, c := range resp.Message.ToolCalls {
			if c.ID != calls[i].ID || c.Name != calls[i].Name || !jsonEqual(c.Arguments, calls[i].Arguments) {
				t.Errorf("tool call %d = %s %s %s, want %s %s %s", i, c.ID, c.Name, c.Arguments, calls[i].ID, calls[i].Name, calls[i].Arguments)
			}
		}
		if stream && strings.Join(deltas, "") != "Checking both." {
			t.Errorf("deltas = %q", deltas)
		}
	})

	t.Run("finish length", func(t *testing.T) {
		f := newFixture(t, cfg)
		f.reply = Reply{Text: "cut sh", Finish: "length"}
		resp, _, err := f.call(ctx, baseRequest(), stream)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if resp.FinishReason != "length" || resp.Message.Content != "cut sh" {
			t.Errorf("response = %q %q, want length and the partial text", resp.FinishReason, resp.Message.Content)
		}
	})

	t.Run("refusal", func(t *testing.T) {
		f := newFixture(t, cfg)
		f.reply = Reply{Refusal: "I can't help with that."}
		_, _, err := f.call(ctx, baseRequest(), stream)
		if model.KindOf(err) != model.KindRefused || model.KindOf(err).Retryable() {
			t.Errorf("refusal: err = %v (kind %s), want refused", err, model.KindOf(err))
		}
	})

	t.Run("request", func(t *testing.T) {
		f := newFixture(t, cfg)
		f.reply = Reply{Text: `{"ok":true}`}
		schema := json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)
		params := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"a city"}},"required":["city"],"additionalProperties":false}`)
		req := &model.Request{
			Agent: "tester", RunID: "run-1", System: "Be precise.",
			Messages: []model.Message{
				{Role: model.RoleUser, Content: "Weather in Paris and Rome?"},
				{Role: model.RoleAssistant, Content: "Looking.", ToolCalls: []model.ToolCall{
					{ID: "c1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
					{ID: "c2", Name: "weather", Arguments: json.RawMessage(`{"city":"Rome"}`)},
				}},
				{Role: model.RoleTool, ToolCallID: "c1", Name: "weather", Content: "sunny"},
				{Role: model.RoleTool, ToolCallID: "c2", Name: "weather", Content: "no such city", IsError: true},
			},
			Tools:        []model.ToolDef{{Name: "weather", Description: "Weather of a city", Parameters: params}},
			ResultSchema: schema,
		}
		if _, _, err := f.call(ctx, req, stream); err != nil {
			t.Fatalf("Generate: %v", err)
		}
		got := f.srv.Calls()
		if len(got) != 1 {
			t.Fatalf("%d calls, want 1", len(got))
		}
		c := got[0]
		if c.Model != "test-model" || c.System != "Be precise." || c.Stream != stream {
			t.Errorf("model %q system %q stream %v", c.Model, c.System, c.Stream)
		}
		if len(c.Messages) != 4 {
			t.Fatalf("messages = %+v, want 4", c.Messages)
		}
		if m := c.Messages[0]; m.Role != model.RoleUser || m.Content != "Weather in Paris and Rome?" {
			t.Errorf("user message = %+v", m)
		}
		if m := c.Messages[1]; m.Role != model.RoleAssistant || m.Content != "Looking." || len(m.ToolCalls) != 2 ||
			m.ToolCalls[1].ID != "c2" || m.ToolCalls[1].Name != "weather" || !jsonEqual(m.ToolCalls[1].Arguments, []byte(`{"city":"Rome"}`)) {
			t.Errorf("assistant message = %+v", m)
		}
		for i, want := range []model.Message{req.Messages[2], req.Messages[3]} {
			m := c.Messages[2+i]
			if m.Role != model.RoleTool || m.ToolCallID != want.ToolCallID || m.Content != want.Content {
				t.Errorf("tool result %d = %+v, want %+v", i, m, want)
			}
			if cfg.ToolErrors && m.IsError != want.IsError {
				t.Errorf("tool result %d is_error = %v, want %v", i, m.IsError, want.IsError)
			}
		}
		if len(c.Tools) != 1 || c.Tools[0].Name != "weather" || c.Tools[0].Description != "Weather of a city" || !jsonEqual(c.Tools[0].Parameters, params) {
			t.Errorf("tools = %+v", c.Tools)
		}
		if cfg.StructuredOutput && !jsonEqual(c.ResultSchema, schema) {
			t.Errorf("result schema = %s, want %s", c.ResultSchema, schema)
		}
		if !cfg.StructuredOutput && len(c.ResultSchema) != 0 {
			t.Errorf("result schema sent with structured output off: %s", c.ResultSchema)
		}
	})

	// A kind of "" means any retryable kind.
	errCases := []struct {
		name  string
		fault Fault
		kind  model.Kind
		after float64
	}{
		{"401", Fault{Status: 401, Message: "Incorrect API key provided"}, model.KindAuth, 0},
		{"403", Fault{Status: 403}, model.KindAuth, 0},
		{"400", Fault{Status: 400, Message: "Invalid value for 'temperature'"}, model.KindBadRequest, 0},
		{"404", Fault{Status: 404, Message: "The model does not exist"}, model.KindBadRequest, 0},
		{"context too long", cfg.ContextTooLong, model.KindContextLength, 0},
		{"408", Fault{Status: 408}, model.KindTimeout, 0},
		{"429 retry-after", Fault{Status: 429, RetryAfter: "7", Message: "Rate limit reached"}, model.KindRateLimited, 7},
		{"500", Fault{Status: 500}, model.KindServer, 0},
		{"503", Fault{Status: 503}, model.KindServer, 0},
		{"529 overloaded", Fault{Status: 529, Code: "overloaded_error", Message: "Overloaded"}, model.KindServer, 0},
		{"502 html", Fault{Status: 502, Body: "<html><body>Bad Gateway</body></html>"}, model.KindServer, 0},
		{"malformed", Fault{Malformed: true}, "", 0},
		{"dropped connection", Fault{Drop: true}, model.KindConnection, 0},
	}
	if stream {
		errCases = append(errCases,
			struct {
				name  string
				fault Fault
				kind  model.Kind
				after float64
			}{"cut stream", Fault{CutAfter: 3}, model.KindConnection, 0},
			struct {
				name  string
				fault Fault
				kind  model.Kind
				after float64
			}{"error event", Fault{ErrorEvent: true}, model.KindServer, 0},
		)
	}
	for _, tc := range errCases {
		t.Run("error "+tc.name, func(t *testing.T) {
			f := newFixture(t, cfg)
			f.reply = Reply{Text: "this answer is long enough to be sent in several pieces", ToolCalls: []model.ToolCall{{ID: "x", Name: "t", Arguments: json.RawMessage(`{"a":1}`)}}}
			f.fault = tc.fault
			resp, _, err := f.call(ctx, baseRequest(), stream)
			if err == nil {
				t.Fatalf("no error, response %+v", resp)
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T) is not a *model.Error", err, err)
			}
			if tc.kind == "" && !me.Kind.Retryable() {
				t.Errorf("kind = %s, want a retryable kind (error: %v)", me.Kind, err)
			}
			if tc.kind != "" && me.Kind != tc.kind {
				t.Errorf("kind = %s, want %s (error: %v)", me.Kind, tc.kind, err)
			}
			if me.RetryAfter != tc.after {
				t.Errorf("retry after = %v, want %v", me.RetryAfter, tc.after)
			}
			if msg := err.Error(); !strings.Contains(msg, "test-model") || me.Provider == "" || !strings.Contains(msg, me.Provider) {
				t.Errorf("error %q does not name the provider and the model", msg)
			}
		})
	}

	if stream {
		t.Run("cancel mid-stream", func(t *testing.T) {
			f := newFixture(t, cfg)
			f.reply = Reply{Text: "one two three four five six seven eight nine ten"}
			f.fault = Fault{StallAfter: 4}
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			req := baseRequest()
			req.OnDelta = func(model.Delta) { cancel() }
			_, err := f.m.Generate(cctx, req)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want one wrapping context.Canceled", err)
			}
		})
		t.Run("deadline mid-stream", func(t *testing.T) {
			f := newFixture(t, cfg)
			f.reply = Reply{Text: "one two three four five six seven eight nine ten"}
			f.fault = Fault{StallAfter: 4}
			dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			_, _, err := f.call(dctx, baseRequest(), true)
			if k := model.KindOf(err); k != model.KindTimeout {
				t.Errorf("err = %v (kind %s), want timeout", err, k)
			}
		})
	}

	// Every connection and handler is gone: the goroutine count returns
	// to where it was.
	var now int
	for range 200 {
		if now = runtime.NumGoroutine(); now <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("goroutines: %d before, %d after: a stream or connection leaked", before, now)
}
