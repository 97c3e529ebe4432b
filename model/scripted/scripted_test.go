package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
)

func generate(t *testing.T, m model.Model, run, agent string, call int) *model.Response {
	t.Helper()
	resp, err := m.Generate(context.Background(), &model.Request{RunID: run, Agent: agent, Call: call})
	if err != nil {
		t.Fatalf("Generate(%s, %s, %d): %v", run, agent, call, err)
	}
	return resp
}

func TestGoAPI(t *testing.T) {
	type point struct {
		X int `json:"x"`
	}
	m := scripted.New(scripted.Script{
		"planner": {
			scripted.Tools(
				scripted.CallTool("search", map[string]any{"q": "go"}),
				scripted.CallTool("raw", json.RawMessage(`{"a":1}`)),
				scripted.CallTool("str", `{"b":2}`),
				scripted.CallTool("none", nil),
				scripted.CallTool("struct", point{X: 3}),
				scripted.ToolCall{ID: "mine", Name: "explicit", Arguments: []byte(`not json`)},
			),
			scripted.Text("done"),
			{Text: "thinking", ToolCalls: []scripted.ToolCall{scripted.CallTool("x", nil)}},
			scripted.Fail(model.KindAuth),
		},
	})
	var _ model.Model = m

	resp := generate(t, m, "r1", "planner", 0)
	want := []model.ToolCall{
		{ID: "call_planner_0_0", Name: "search", Arguments: json.RawMessage(`{"q":"go"}`)},
		{ID: "call_planner_0_1", Name: "raw", Arguments: json.RawMessage(`{"a":1}`)},
		{ID: "call_planner_0_2", Name: "str", Arguments: json.RawMessage(`{"b":2}`)},
		{ID: "call_planner_0_3", Name: "none", Arguments: json.RawMessage(`{}`)},
		{ID: "call_planner_0_4", Name: "struct", Arguments: json.RawMessage(`{"x":3}`)},
		{ID: "mine", Name: "explicit", Arguments: json.RawMessage(`not json`)},
	}
	if !reflect.DeepEqual(resp.Message.ToolCalls, want) {
		t.Errorf("tool calls:\n got %s\nwant %s", show(resp.Message.ToolCalls), show(want))
	}
	if resp.Message.Role != model.RoleAssistant || resp.Message.Content != "" || resp.FinishReason != "tool_calls" {
		t.Errorf("message = %+v, finish %q", resp.Message, resp.FinishReason)
	}

	resp = generate(t, m, "r1", "planner", 1)
	if resp.Message.Content != "done" || len(resp.Message.ToolCalls) != 0 || resp.FinishReason != "stop" {
		t.Errorf("step 1 = %+v, finish %q", resp.Message, resp.FinishReason)
	}

	resp = generate(t, m, "r1", "planner", 2)
	if resp.Message.Content != "thinking" || len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].ID != "call_planner_2_0" {
		t.Errorf("step 2 = %+v", resp.Message)
	}

	_, err := m.Generate(context.Background(), &model.Request{RunID: "r1", Agent: "planner", Call: 3})
	if model.KindOf(err) != model.KindAuth {
		t.Errorf("step 3: err = %v, want kind auth", err)
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestResponsesAreCopies(t *testing.T) {
	m := scripted.New(scripted.Script{"a": {scripted.Tools(scripted.CallTool("t", map[string]int{"n": 1}), scripted.CallTool("u", nil))}})
	r1 := generate(t, m, "r", "a", 0)
	r1.Message.ToolCalls[0].Arguments[2] = 'X'
	r1.Message.ToolCalls[0].Arguments = append(r1.Message.ToolCalls[0].Arguments, "junk"...)
	r1.Message.ToolCalls[1].Name = "changed"
	r2 := generate(t, m, "r", "a", 0)
	if got := string(r2.Message.ToolCalls[0].Arguments); got != `{"n":1}` {
		t.Errorf("arguments after caller mutation = %s", got)
	}
	if got := string(r2.Message.ToolCalls[1].Arguments); got != `{}` {
		t.Errorf("second arguments after caller mutation = %s", got)
	}
	if r2.Message.ToolCalls[1].Name != "u" {
		t.Errorf("name after caller mutation = %s", r2.Message.ToolCalls[1].Name)
	}
}

func TestScriptIsCopied(t *testing.T) {
	s := scripted.Script{"a": {scripted.Text("one")}}
	m := scripted.New(s)
	s["a"][0].Text = "changed"
	s["b"] = []scripted.Step{scripted.Text("x")}
	if got := generate(t, m, "r", "a", 0).Message.Content; got != "one" {
		t.Errorf("content = %q after changing the script", got)
	}
	if _, err := m.Generate(context.Background(), &model.Request{Agent: "b"}); err == nil {
		t.Error("agent added after New is served")
	}
}

func TestDeterministic(t *testing.T) {
	m := scripted.New(scripted.Script{
		"a": {scripted.Text("a0"), scripted.Tools(scripted.CallTool("t", map[string]any{"k": []int{1, 2}})), scripted.Text("a2")},
		"b": {scripted.Text("b0"), scripted.Text("b1")},
	})
	// The same (Agent, Call) always gets the same response, in any order and
	// in any run: a recovered run replays or continues exactly.
	first := generate(t, m, "r1", "a", 1)
	for _, run := range []string{"r1", "r2", "r1"} {
		generate(t, m, run, "a", 2)
		generate(t, m, run, "a", 0)
		if got := generate(t, m, run, "a", 1); !reflect.DeepEqual(got, first) {
			t.Errorf("run %s: a/1 = %+v, want %+v", run, got, first)
		}
	}

	// Many concurrent runs, each with its own position in each script.
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			run := fmt.Sprintf("run-%d", i)
			for call, want := range []string{"a0", "", "a2"} {
				resp, err := m.Generate(context.Background(), &model.Request{RunID: run, Agent: "a", Call: call})
				if err != nil || resp.Message.Content != want {
					errs <- fmt.Errorf("%s a/%d: %v %v", run, call, resp, err)
					return
				}
			}
			if i%2 == 0 {
				for call, want := range []string{"b0", "b1"} {
					resp, err := m.Generate(context.Background(), &model.Request{RunID: run, Agent: "b", Call: call})
					if err != nil || resp.Message.Content != want {
						errs <- fmt.Errorf("%s b/%d: %v %v", run, call, resp, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range 100 {
		run := fmt.Sprintf("run-%d", i)
		want := map[string]int{}
		if i%2 == 1 {
			want["b"] = 2
		}
		if got := m.Unconsumed(run); !reflect.DeepEqual(got, want) {
			t.Errorf("Unconsumed(%s) = %v, want %v", run, got, want)
		}
	}
}

func TestDelay(t *testing.T) {
	const d = 50 * time.Millisecond
	m := scripted.New(scripted.Script{"a": {{Text: "slow", Delay: d}, {Error: "timeout", Delay: d}}})

	start := time.Now()
	resp := generate(t, m, "r", "a", 0)
	if el := time.Since(start); el < d {
		t.Errorf("answered after %v, want at least %v", el, d)
	}
	if resp.Message.Content != "slow" {
		t.Errorf("content = %q", resp.Message.Content)
	}

	start = time.Now()
	_, err := m.Generate(context.Background(), &model.Request{RunID: "r", Agent: "a", Call: 1})
	if el := time.Since(start); el < d || model.KindOf(err) != model.KindTimeout {
		t.Errorf("error step: %v after %v", err, el)
	}

	// Cancellation during the delay.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	slow := scripted.New(scripted.Script{"a": {{Text: "never", Delay: time.Hour}}})
	start = time.Now()
	_, err = slow.Generate(ctx, &model.Request{RunID: "c", Agent: "a"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("cancellation took %v", el)
	}
	if got := slow.Unconsumed("c"); got["a"] != 1 {
		t.Errorf("a cancelled step counts as served: Unconsumed = %v", got)
	}

	// Deadline.
	ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel2()
	_, err = slow.Generate(ctx, &model.Request{RunID: "c", Agent: "a"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: err = %v, want context.DeadlineExceeded", err)
	}

	// A context already done fails even a step without delay.
	done, cancel3 := context.WithCancel(context.Background())
	cancel3()
	if _, err := scripted.New(scripted.Script{"a": {scripted.Text("x")}}).Generate(done, &model.Request{Agent: "a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("done context: err = %v", err)
	}

	// WithoutDelays.
	fast := scripted.New(scripted.Script{"a": {{Text: "quick", Delay: time.Hour}}}, scripted.WithoutDelays())
	if got := generate(t, fast, "r", "a", 0).Message.Content; got != "quick" {
		t.Errorf("WithoutDelays content = %q", got)
	}
}

func TestErrorKinds(t *testing.T) {
	cases := []struct {
		kind      string
		retryable bool
	}{
		{"rate_limited", true},
		{"server_error", true},
		{"timeout", true},
		{"connection", true},
		{"auth", false},
		{"bad_request", false},
		{"context_too_long", false},
		{"invalid_output", false},
		{"other", false},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			script := scripted.Script{"weather": {{Error: c.kind}}}
			m := scripted.New(script)
			if err := script.Validate(); err != nil {
				t.Fatal(err)
			}
			resp, err := m.Generate(context.Background(), &model.Request{RunID: "r", Agent: "weather"})
			if resp != nil || err == nil {
				t.Fatalf("got %v, %v; want an error", resp, err)
			}
			if k := model.KindOf(err); k != model.Kind(c.kind) || k.Retryable() != c.retryable {
				t.Errorf("KindOf = %q (retryable %v), want %q (%v)", k, k.Retryable(), c.kind, c.retryable)
			}
			var me *model.Error
			if !errors.As(err, &me) || me.Provider != "scripted" || me.Model != "weather" || me.Message == "" {
				t.Errorf("error = %#v", err)
			}
			if m.Unconsumed("r")["weather"] != 0 {
				t.Error("an answered error step is not counted as served")
			}
		})
	}
}

func TestUnknownAgentAndExhausted(t *testing.T) {
	m := scripted.New(scripted.Script{"a": {scripted.Text("x"), scripted.Text("y")}, "b": {}})
	cases := []struct {
		agent string
		call  int
		want  []string
	}{
		// Messages count calls from 1.
		{"nobody", 0, []string{`agent "nobody"`, "call 1:", `"a", "b"`}},
		{"a", 2, []string{`agent "a"`, "call 3:", "exhausted", "the script has 2 steps"}},
		{"a", 7, []string{`agent "a"`, "call 8:", "2 steps"}},
		{"a", -1, []string{`agent "a"`, "call 0:"}},
		{"b", 0, []string{`agent "b"`, "call 1:", "0 steps"}},
	}
	for _, c := range cases {
		_, err := m.Generate(context.Background(), &model.Request{RunID: "r", Agent: c.agent, Call: c.call})
		var me *model.Error
		if !errors.As(err, &me) {
			t.Fatalf("%s/%d: err = %v, want *model.Error", c.agent, c.call, err)
		}
		if me.Kind != model.KindOther || me.Kind.Retryable() || me.Provider != "scripted" || me.Model != c.agent {
			t.Errorf("%s/%d: error = %#v", c.agent, c.call, me)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s/%d: error %q does not mention %q", c.agent, c.call, err, w)
			}
		}
	}
	if _, err := m.Generate(context.Background(), nil); err == nil {
		t.Error("nil request: no error")
	}
}

func TestStreaming(t *testing.T) {
	long := "The weekend looks sunny with light winds from the west and highs of 22C."
	m := scripted.New(scripted.Script{"a": {
		scripted.Text(long),
		scripted.Text("Sunny"),
		scripted.Text("Sunny, 22C"),
		scripted.Tools(scripted.CallTool("t", nil)),
		{Text: "calling a tool now", ToolCalls: []scripted.ToolCall{scripted.CallTool("t", nil)}},
		scripted.Text("  leading and trailing  "),
	}})
	for call, c := range []struct {
		text      string
		minDeltas int
	}{{long, 4}, {"Sunny", 1}, {"Sunny, 22C", 2}, {"", 0}, {"calling a tool now", 2}, {"  leading and trailing  ", 2}} {
		var deltas []string
		resp, err := m.Generate(context.Background(), &model.Request{Agent: "a", Call: call, OnDelta: func(d model.Delta) {
			deltas = append(deltas, d.Text)
		}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(deltas, ""); got != c.text || resp.Message.Content != c.text {
			t.Errorf("call %d: deltas %q concatenate to %q, content %q; want %q", call, deltas, got, resp.Message.Content, c.text)
		}
		if len(deltas) < c.minDeltas || len(deltas) > 4 {
			t.Errorf("call %d: %d deltas %q, want %d to 4", call, len(deltas), deltas, c.minDeltas)
		}
		for _, d := range deltas {
			if d == "" {
				t.Errorf("call %d: empty delta in %q", call, deltas)
			}
		}
	}
}

func TestUsage(t *testing.T) {
	m := scripted.New(scripted.Script{"a": {
		{Text: "x", Usage: model.Usage{InputTokens: 120, OutputTokens: 9}},
		scripted.Text("twelve chars"),                                           // 12 chars: 3 tokens
		scripted.Tools(scripted.CallTool("t", json.RawMessage(`{"abc":1234}`))), // 12 bytes: 3 tokens
		scripted.Text(""),
	}})
	req := &model.Request{Agent: "a", System: "0123456789", Messages: []model.Message{
		{Role: model.RoleUser, Content: "hello"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{Name: "t", Arguments: json.RawMessage(`{}`)}}},
		{Role: model.RoleTool, Name: "t", Content: "ok"},
	}} // 10 + 5 + 1+2 + 1+2 = 21 chars: 6 tokens
	for call, want := range []model.Usage{
		{InputTokens: 120, OutputTokens: 9, Calls: 1},
		{InputTokens: 6, OutputTokens: 3, Calls: 1},
		{InputTokens: 6, OutputTokens: 3, Calls: 1},
		{InputTokens: 6, OutputTokens: 0, Calls: 1},
	} {
		req.Call = call
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != want {
			t.Errorf("call %d: usage = %+v, want %+v", call, resp.Usage, want)
		}
	}
}

func TestValidate(t *testing.T) {
	good := scripted.Script{"a": {scripted.Text("x"), scripted.Fail(model.KindRateLimited), {}}}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate(good) = %v", err)
	}
	bad := scripted.Script{"a": {
		scripted.Text("fine"),
		{Error: "teapot"},
		{Error: "timeout", Text: "both"},
		scripted.Tools(scripted.CallTool("", nil)),
		scripted.Tools(scripted.CallTool("t", func() {})),
		{Text: "x", Delay: -time.Second},
		{Text: "x", Usage: model.Usage{InputTokens: -1}},
	}}
	err := bad.Validate()
	if err == nil {
		t.Fatal("Validate(bad) = nil")
	}
	for _, w := range []string{`step 1: unknown error kind "teapot"`, "step 2: an error step", "step 3: tool call 0 has no name", "step 4: tool call 0 (t): arguments", "step 5: negative delay", "step 6: negative usage"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate error %q does not mention %q", err, w)
		}
	}
	m := scripted.New(bad)
	generate(t, m, "r", "a", 0)
	for call := 1; call < len(bad["a"]); call++ {
		_, err := m.Generate(context.Background(), &model.Request{RunID: "r", Agent: "a", Call: call})
		if model.KindOf(err) != model.KindOther || !strings.Contains(err.Error(), "invalid step") {
			t.Errorf("call %d: err = %v, want a non-retryable invalid step error", call, err)
		}
	}
}

func TestUnconsumed(t *testing.T) {
	m := scripted.New(scripted.Script{
		"planner": {scripted.Text("p0"), scripted.Text("p1")},
		"weather": {scripted.Text("w0"), scripted.Fail(model.KindRateLimited), scripted.Text("w2")},
	})
	if got, want := m.Unconsumed("r1"), map[string]int{"planner": 2, "weather": 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("before: %v, want %v", got, want)
	}
	generate(t, m, "r1", "planner", 0)
	generate(t, m, "r1", "weather", 0)
	m.Generate(context.Background(), &model.Request{RunID: "r1", Agent: "weather", Call: 1})
	if got, want := m.Unconsumed("r1"), map[string]int{"planner": 1, "weather": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("midway: %v, want %v", got, want)
	}
	// A recovered run continues where it stopped: only the highest call
	// counts, so the steps served before the crash stay consumed.
	recovered := scripted.New(scripted.Script{
		"planner": {scripted.Text("p0"), scripted.Text("p1")},
		"weather": {scripted.Text("w0"), scripted.Fail(model.KindRateLimited), scripted.Text("w2")},
	})
	generate(t, recovered, "r1", "planner", 1)
	generate(t, recovered, "r1", "weather", 2)
	if got := recovered.Unconsumed("r1"); len(got) != 0 || got == nil {
		t.Errorf("after recovery: %v, want an empty map", got)
	}
	generate(t, m, "r1", "weather", 2)
	generate(t, m, "r1", "planner", 1)
	generate(t, m, "r1", "planner", 0) // replaying an earlier call changes nothing
	if got := m.Unconsumed("r1"); len(got) != 0 {
		t.Errorf("after: %v, want empty", got)
	}
	generate(t, m, "r2", "planner", 0)
	want := []scripted.Served{
		{RunID: "r1", Agent: "planner", Steps: 2},
		{RunID: "r1", Agent: "weather", Steps: 3},
		{RunID: "r2", Agent: "planner", Steps: 1},
	}
	if got := m.Served(); !reflect.DeepEqual(got, want) {
		t.Errorf("Served = %+v, want %+v", got, want)
	}
	m.Forget("r1")
	if got := m.Served(); !reflect.DeepEqual(got, want[2:]) {
		t.Errorf("Served after Forget = %+v", got)
	}
	if got := m.Unconsumed("r1"); !reflect.DeepEqual(got, map[string]int{"planner": 2, "weather": 3}) {
		t.Errorf("Unconsumed after Forget = %v", got)
	}

	off := scripted.New(scripted.Script{"a": {scripted.Text("x")}}, scripted.WithoutBookkeeping())
	generate(t, off, "r", "a", 0)
	if off.Served() != nil {
		t.Error("Served without bookkeeping is not nil")
	}
	if got := off.Unconsumed("r"); got["a"] != 1 {
		t.Errorf("Unconsumed without bookkeeping = %v, want every step", got)
	}
	off.Forget("r")
}

func TestExpectParts(t *testing.T) {
	s, err := scripted.Parse([]byte(`
vision:
  - expect_parts: [{type: image, media_type: image/png, min_bytes: 3}]
    text: "A chart."
`))
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(s)
	req := &model.Request{Agent: "vision", Messages: []model.Message{{Role: model.RoleUser, Content: "what is it?"}}}
	if _, err := m.Generate(context.Background(), req); model.KindOf(err) != model.KindBadRequest || !strings.Contains(err.Error(), "no part matching") {
		t.Fatalf("without the image: err = %v, want a bad request naming the missing part", err)
	}
	req.Messages = append(req.Messages, model.Message{Role: model.RoleTool, ToolCallID: "c", Parts: []model.Part{model.Image("image/png", []byte{1, 2})}})
	if _, err := m.Generate(context.Background(), req); err == nil {
		t.Fatal("an image of 2 bytes met min_bytes 3")
	}
	req.Messages[1].Parts[0].Data = []byte{1, 2, 3}
	resp, err := m.Generate(context.Background(), req)
	if err != nil || resp.Message.Content != "A chart." {
		t.Fatalf("with the image: %v, %v", resp, err)
	}
	if _, err := scripted.Parse([]byte("a:\n  - expect_parts: [{type: video}]\n    text: x\n")); err == nil || !strings.Contains(err.Error(), "unknown type") {
		t.Errorf("unknown type: %v", err)
	}
}
