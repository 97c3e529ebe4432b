// Package scripted provides a scripted [model.Model] for tests and offline
// demos: every agent answers from a fixed list of steps instead of a language
// model.
//
// The response to a request is a pure function of its Agent and Call: it is
// step number req.Call of script[req.Agent]. Because Call is derived from the
// run's durable journal, a run that crashes and recovers continues its script
// where it stopped, and one [Model] serves any number of concurrent runs, each
// with its own position in every agent's script.
//
// Scripts are written in Go with [New] or in YAML with [Load] and [Parse]:
//
//	planner:                      # agent or swarm id; its responses are consumed in order
//	  - tool_calls:
//	      - {name: handoff_to_weather, arguments: {request: "weekend forecast"}}
//	  - text: '{"activity": "hiking"}'
//	    usage: {input_tokens: 120, output_tokens: 9}
//	weather:
//	  - text: "Sunny, 22C"
//	    delay: 150ms
//	  - error: rate_limited        # also server_error, timeout, ...
//
// Importing the package registers the provider "scripted", so the model spec
// "scripted:PATH" opens the script file PATH with [model.Open].
package scripted

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/swarmrt/swarm/model"
)

// Provider is the provider name of the scripted model, as used in model specs
// ("scripted:PATH") and in the Provider field of its errors.
const Provider = "scripted"

func init() {
	model.Register(Provider, func(name string) (model.Model, error) {
		if name == "" {
			return nil, fmt.Errorf("scripted: missing script path (use a model spec such as %q)", "scripted:script.yaml")
		}
		return Load(name)
	})
}

// Script maps an agent or swarm id (the [model.Request] Agent) to the steps it
// answers with, in order: the request with Call n gets step n.
type Script map[string][]Step

// Step is one scripted response.
//
// A step answers with Text and/or ToolCalls, or, when Error is set, fails with
// a [*model.Error] of that kind. A zero Step answers with an empty message.
type Step struct {
	// Text is the content of the assistant message.
	Text string
	// ToolCalls are the tool calls of the assistant message.
	ToolCalls []ToolCall
	// Usage is reported as the response's usage. When it is zero, a
	// deterministic estimate is reported instead (about four characters per
	// token of the request and the response). Calls is always reported as 1.
	Usage model.Usage
	// Delay is how long to wait before answering (or failing).
	Delay time.Duration
	// Error, when set, makes the step fail with this [model.Kind], such as
	// "rate_limited", "server_error", "timeout", "auth", "bad_request" or
	// "context_too_long".
	Error string
	// ResponseID and Model are reported as the response's ID and Model,
	// as a provider reports them (none when empty).
	ResponseID, Model string
	// ExpectParts are parts the request must hold, in any of its messages,
	// with their bytes loaded: a step asserts that an attachment or a
	// tool's image reached the model. A request missing one fails with a
	// non-retryable [*model.Error] of kind [model.KindBadRequest] naming it.
	ExpectParts []ExpectPart
}

// ExpectPart describes a part a request must hold. Empty fields match
// anything; a part matches when all set fields do.
type ExpectPart struct {
	Type      model.PartType
	MediaType string
	Name      string
	// MinBytes is the least number of bytes the part holds.
	MinBytes int
}

func (e ExpectPart) matches(p *model.Part) bool {
	return (e.Type == "" || p.Type == e.Type) && (e.MediaType == "" || p.MediaType == e.MediaType) &&
		(e.Name == "" || p.Name == e.Name) && len(p.Data)+len(p.Text) >= e.MinBytes
}

func (e ExpectPart) String() string {
	return fmt.Sprintf("{type %q, media_type %q, name %q, min_bytes %d}", e.Type, e.MediaType, e.Name, e.MinBytes)
}

// missingPart returns the first expectation no part of req meets.
func missingPart(req *model.Request, expect []ExpectPart) (ExpectPart, bool) {
next:
	for _, e := range expect {
		for i := range req.Messages {
			for j := range req.Messages[i].Parts {
				if e.matches(&req.Messages[i].Parts[j]) {
					continue next
				}
			}
		}
		return e, true
	}
	return ExpectPart{}, false
}

// ToolCall is one scripted tool call.
type ToolCall struct {
	// ID is the call's id. When empty it is "call_<agent>_<call>_<i>", where
	// call is the step's index and i the tool call's index in the step.
	ID string
	// Name is the tool's name.
	Name string
	// Arguments are marshalled to JSON, except that a json.RawMessage, a
	// []byte or a string is used verbatim as the JSON text, even if it is not
	// valid JSON (which lets a script exercise argument validation). Nil
	// means "{}".
	Arguments any
}

// Text returns a step answering with the text s.
func Text(s string) Step { return Step{Text: s} }

// Tools returns a step answering with the given tool calls.
func Tools(calls ...ToolCall) Step { return Step{ToolCalls: calls} }

// CallTool returns a tool call of the named tool; args are marshalled as
// described for [ToolCall] Arguments.
func CallTool(name string, args any) ToolCall { return ToolCall{Name: name, Arguments: args} }

// Fail returns a step failing with a [*model.Error] of the given kind.
func Fail(kind model.Kind) Step { return Step{Error: string(kind)} }

// Option configures a [Model].
type Option func(*config)

type config struct {
	noBookkeeping bool
	noDelays      bool
}

// WithoutBookkeeping disables the per-run record of served steps behind
// [Model.Served] and [Model.Unconsumed], saving its (small) cost and memory.
func WithoutBookkeeping() Option { return func(c *config) { c.noBookkeeping = true } }

// WithoutDelays ignores the Delay of every step, so that a script written for
// a demo runs at full speed in tests.
func WithoutDelays() Option { return func(c *config) { c.noDelays = true } }

// Model is a scripted [model.Model]. It is safe for concurrent use by any
// number of runs.
type Model struct {
	cfg    config
	agents map[string]*agentScript
	names  []string // agent ids, sorted; index = agentScript.index
	known  string   // names, quoted and joined, for error messages
	source string   // the script file's path, when loaded from one
	runs   *tracker // nil without bookkeeping
}

type agentScript struct {
	index int
	steps []compiled
}

// compiled is a Step prepared for serving: everything that does not depend on
// the request is computed once.
type compiled struct {
	text      string
	chunks    []string // text split for streaming
	calls     []model.ToolCall
	argBytes  int // total length of the calls' arguments
	usage     model.Usage
	outTokens int64 // estimated output tokens, used when usage is zero
	delay     time.Duration
	kind      model.Kind // non-empty for an error step
	invalid   string     // non-empty when the step itself is malformed
	finish    string
	id, model string // the response's ID and Model
	expect    []ExpectPart
}

// New returns a model answering from script. The script is copied: later
// changes to it do not affect the model. A malformed step (see
// [Script.Validate]) does not stop New; serving it fails with a
// non-retryable [*model.Error].
func New(script Script, opts ...Option) *Model {
	m := &Model{agents: make(map[string]*agentScript, len(script))}
	for _, o := range opts {
		if o != nil {
			o(&m.cfg)
		}
	}
	for name := range script {
		m.names = append(m.names, name)
	}
	slices.Sort(m.names)
	quoted := make([]string, len(m.names))
	for i, name := range m.names {
		quoted[i] = strconv.Quote(name)
		steps := make([]compiled, len(script[name]))
		for j, s := range script[name] {
			steps[j] = compile(name, j, s)
		}
		m.agents[name] = &agentScript{index: i, steps: steps}
	}
	m.known = strings.Join(quoted, ", ")
	if m.known == "" {
		m.known = "none"
	}
	if !m.cfg.noBookkeeping {
		m.runs = newTracker()
	}
	return m
}

// Validate reports the malformed steps of s: an unknown error kind, an error
// step that also has text or tool calls, a tool call without a name or with
// arguments that cannot be marshalled, a negative delay or usage.
func (s Script) Validate() error {
	var errs []string
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for i, step := range s[name] {
			if c := compile(name, i, step); c.invalid != "" {
				errs = append(errs, fmt.Sprintf("agent %q step %d: %s", name, i, c.invalid))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("scripted: invalid script: %s", strings.Join(errs, "; "))
	}
	return nil
}

// kinds are the accepted values of Step.Error.
var kinds = []model.Kind{
	model.KindRateLimited, model.KindServer, model.KindTimeout, model.KindConnection,
	model.KindAuth, model.KindBadRequest, model.KindContextLength,
	model.KindInvalidOutput, model.KindRefused, model.KindOther,
}

func checkKind(s string) (model.Kind, error) {
	if k := model.Kind(s); slices.Contains(kinds, k) {
		return k, nil
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return "", fmt.Errorf("unknown error kind %q (want one of %s)", s, strings.Join(names, ", "))
}

func compile(agent string, index int, s Step) compiled {
	c := compiled{text: s.Text, usage: s.Usage, delay: s.Delay, finish: "stop", id: s.ResponseID, model: s.Model, expect: slices.Clone(s.ExpectParts)}
	invalid := func(format string, args ...any) compiled {
		return compiled{invalid: fmt.Sprintf(format, args...)}
	}
	if s.Delay < 0 {
		return invalid("negative delay %s", s.Delay)
	}
	if u := s.Usage; u.InputTokens < 0 || u.OutputTokens < 0 || u.CachedInputTokens < 0 || u.ReasoningTokens < 0 || u.Calls < 0 {
		return invalid("negative usage")
	}
	if s.Error != "" {
		k, err := checkKind(s.Error)
		if err != nil {
			return invalid("%s", err.Error())
		}
		if s.Text != "" || len(s.ToolCalls) > 0 {
			return invalid("an error step cannot also have text or tool calls")
		}
		c.kind = k
		return c
	}
	if len(s.ToolCalls) > 0 {
		c.finish = "tool_calls"
		c.calls = make([]model.ToolCall, len(s.ToolCalls))
		for i, tc := range s.ToolCalls {
			if tc.Name == "" {
				return invalid("tool call %d has no name", i)
			}
			args, err := marshalArgs(tc.Arguments)
			if err != nil {
				return invalid("tool call %d (%s): arguments: %v", i, tc.Name, err)
			}
			id := tc.ID
			if id == "" {
				id = "call_" + agent + "_" + strconv.Itoa(index) + "_" + strconv.Itoa(i)
			}
			c.calls[i] = model.ToolCall{ID: id, Name: tc.Name, Arguments: args}
			c.argBytes += len(args)
		}
	}
	c.chunks = chunk(s.Text)
	c.outTokens = tokens(len(s.Text) + c.argBytes)
	return c
}

// marshalArgs turns tool call arguments into JSON text.
func marshalArgs(args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		return slices.Clone(a), nil
	case []byte:
		return slices.Clone(a), nil
	case string:
		return json.RawMessage(a), nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// chunk splits text at spaces into at most four pieces of similar length,
// for streaming. The pieces concatenate to text.
func chunk(text string) []string {
	if text == "" {
		return nil
	}
	var chunks []string
	start := 0
	for k := 1; k < 4; k++ {
		target := len(text) * k / 4
		if target < start {
			continue
		}
		sp := strings.IndexByte(text[target:], ' ')
		if sp < 0 {
			break
		}
		end := target + sp + 1 // keep the space with the earlier piece
		if end >= len(text) {
			break
		}
		if end > start {
			chunks = append(chunks, text[start:end])
			start = end
		}
	}
	return append(chunks, text[start:])
}

// tokens estimates the token count of n characters, rounding up.
func tokens(n int) int64 { return int64((n + 3) / 4) }

// Generate answers req with step req.Call of the script of req.Agent.
//
// It waits for the step's Delay (returning early, with an error wrapping
// ctx.Err(), when ctx is done), streams the step's text to req.OnDelta in a
// few pieces when it is set, and returns the step's message. An error step
// returns a [*model.Error] of its kind. An agent without a script, a Call
// past the end of the agent's script and a malformed step return a
// [*model.Error] of kind [model.KindOther], which is not retryable. Error
// messages count calls from 1 (Call 0 is "call 1").
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req == nil {
		return nil, &model.Error{Kind: model.KindBadRequest, Provider: Provider, Message: "nil request"}
	}
	if err := ctx.Err(); err != nil {
		return nil, m.ctxErr(req, err)
	}
	a := m.agents[req.Agent]
	if a == nil {
		return nil, m.fail(req, model.KindOther, fmt.Sprintf("agent %q call %d: %s has no steps for this agent (it scripts %s)", req.Agent, req.Call+1, m.name(), m.known))
	}
	if req.Call < 0 || req.Call >= len(a.steps) {
		return nil, m.fail(req, model.KindOther, fmt.Sprintf("agent %q call %d: script exhausted: %s has %s for this agent", req.Agent, req.Call+1, m.name(), plural(len(a.steps), "step")))
	}
	s := &a.steps[req.Call]
	if s.invalid != "" {
		return nil, m.fail(req, model.KindOther, fmt.Sprintf("agent %q call %d: invalid step of %s: %s", req.Agent, req.Call+1, m.name(), s.invalid))
	}
	if s.delay > 0 && !m.cfg.noDelays {
		t := time.NewTimer(s.delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, m.ctxErr(req, ctx.Err())
		case <-t.C:
		}
	}
	if m.runs != nil {
		m.runs.record(req.RunID, a.index, len(m.names), req.Call)
	}
	if s.kind != "" {
		return nil, m.fail(req, s.kind, fmt.Sprintf("scripted failure at call %d", req.Call+1))
	}
	if e, missing := missingPart(req, s.expect); missing {
		return nil, m.fail(req, model.KindBadRequest, fmt.Sprintf("agent %q call %d: the request holds no part matching %s", req.Agent, req.Call+1, e))
	}
	if req.OnDelta != nil {
		for _, c := range s.chunks {
			req.OnDelta(model.Delta{Text: c})
		}
	}

	resp := &model.Response{
		Message:      model.Message{Role: model.RoleAssistant, Content: s.text},
		Usage:        s.usage,
		FinishReason: s.finish,
		ID:           s.id,
		Model:        s.model,
	}
	if s.usage == (model.Usage{}) {
		resp.Usage = model.Usage{InputTokens: inputTokens(req), OutputTokens: s.outTokens}
	}
	resp.Usage.Calls = 1
	if len(s.calls) > 0 {
		// Hand out copies, so that a caller changing the response cannot
		// change the script: one slice for the calls, one buffer for all
		// their arguments.
		calls := make([]model.ToolCall, len(s.calls))
		buf := make([]byte, 0, s.argBytes)
		for i, tc := range s.calls {
			n := len(buf)
			buf = append(buf, tc.Arguments...)
			tc.Arguments = buf[n:len(buf):len(buf)]
			calls[i] = tc
		}
		resp.Message.ToolCalls = calls
	}
	return resp, nil
}

// inputTokens estimates the tokens of a request's prompt.
func inputTokens(req *model.Request) int64 {
	n := len(req.System)
	for i := range req.Messages {
		msg := &req.Messages[i]
		n += len(msg.Content) + len(msg.Name)
		for j := range msg.Parts {
			// An image or file counts as a fixed 1,000 characters (250
			// tokens), about what providers bill a small image.
			if p := &msg.Parts[j]; p.Type == model.PartText {
				n += len(p.Text)
			} else {
				n += 1000
			}
		}
		for j := range msg.ToolCalls {
			n += len(msg.ToolCalls[j].Name) + len(msg.ToolCalls[j].Arguments)
		}
	}
	return tokens(n)
}

// fail returns an error of the model: named after its script file when it
// was loaded from one ("model scripted:script.yaml: ..."), else after the
// agent asking.
func (m *Model) fail(req *model.Request, kind model.Kind, msg string) error {
	return &model.Error{Kind: kind, Provider: Provider, Model: cmp.Or(m.source, req.Agent), Message: msg}
}

// plural is "1 step", "2 steps".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// name names the script in messages.
func (m *Model) name() string {
	if m.source != "" {
		return m.source
	}
	return "the script"
}

func (m *Model) ctxErr(req *model.Request, err error) error {
	return fmt.Errorf("model %s:%s: call %d: %w", Provider, req.Agent, req.Call+1, err)
}

// Served describes how far one run has consumed one agent's script.
type Served struct {
	RunID string
	Agent string
	// Steps is one more than the highest Call answered: steps 0 to Steps-1
	// of the agent's script count as consumed.
	Steps int
}

// Served lists, sorted by run and agent, how far each run has consumed each
// agent's script. A step counts as served once it is answered (including
// with a scripted error); a request cancelled during its delay does not.
// Bookkeeping survives neither the process nor [Model.Forget]; but because
// only the highest Call is recorded, a recovered run that continues its
// script is accounted for correctly. Without bookkeeping, Served returns nil.
func (m *Model) Served() []Served {
	if m.runs == nil {
		return nil
	}
	var out []Served
	m.runs.each(func(runID string, r *runState) {
		for i := range r.next {
			if n := int(r.next[i].Load()); n > 0 {
				out = append(out, Served{RunID: runID, Agent: m.names[i], Steps: n})
			}
		}
	})
	slices.SortFunc(out, func(a, b Served) int {
		if c := strings.Compare(a.RunID, b.RunID); c != 0 {
			return c
		}
		return strings.Compare(a.Agent, b.Agent)
	})
	return out
}

// Unconsumed reports, for the run runID, how many steps of each agent's
// script were never served: it maps every agent with steps left to their
// number, and is empty (not nil) when the run consumed the whole script.
// Steps before the highest one served count as consumed (see [Model.Served]).
// Without bookkeeping nothing is recorded, so every step counts as
// unconsumed.
func (m *Model) Unconsumed(runID string) map[string]int {
	var r *runState
	if m.runs != nil {
		r = m.runs.get(runID)
	}
	out := make(map[string]int)
	for i, name := range m.names {
		left := len(m.agents[name].steps)
		if r != nil {
			left -= int(r.next[i].Load())
		}
		if left > 0 {
			out[name] = left
		}
	}
	return out
}

// Forget drops the bookkeeping of the run runID, to bound the memory of a
// long-lived model serving many runs.
func (m *Model) Forget(runID string) {
	if m.runs != nil {
		m.runs.forget(runID)
	}
}
