package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// ResumeTool is the name of the tool that answers a paused run.
const ResumeTool = "resume"

// ResultURITemplate is the URI template of run results served as resources.
const ResultURITemplate = "swarm://runs/{id}/result"

const resultURIPrefix, resultURISuffix = "swarm://runs/", "/result"

// Options configures an MCP server of a runtime.
type Options struct {
	// Name is the server name announced to clients (default "swarm").
	Name string
	// Version is the server version announced to clients (default "dev").
	Version string
	// Logger receives the server's operational messages (default: discard).
	Logger *slog.Logger
	// TaskWait is how long a tools/call from a client that declares the
	// Tasks extension waits for its run before answering with a task
	// (default [DefaultTaskWait]; negative: at once). It applies to
	// [NewHTTPHandler] and [Serve], which serve the extension.
	TaskWait time.Duration
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "swarm"
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.TaskWait == 0 {
		o.TaskWait = DefaultTaskWait
	}
	return o
}

// Outcome is the structured content of a swarm tool's result: where the run
// stands once it paused or ended.
type Outcome struct {
	RunID string      `json:"run_id"`
	Swarm string      `json:"swarm"`
	State swarm.State `json:"state"`
	// Result is the run's result, when it completed.
	Result json.RawMessage `json:"result,omitempty"`
	// Reason explains a paused, failed or stopped run.
	Reason string `json:"reason,omitempty"`
	// Context is what a paused run gave the human to decide.
	Context string `json:"context,omitempty"`
	// Pause identifies a paused run's pause (the sequence number of its
	// paused event); give it to the resume tool so that the answer applies
	// to this pause only.
	Pause int64 `json:"pause,omitempty"`
}

// server serves one runtime's swarms over MCP.
type server struct {
	rt   *swarm.Runtime
	log  *slog.Logger
	defs map[string]swarm.Definition
	// wrapped marks swarms whose input is not an object and travels as the
	// "input" property of the tool's arguments.
	wrapped map[string]bool
	// taskWait is Options.TaskWait; tasks, whether the server answers
	// with tasks (only where tasks/* is served).
	taskWait time.Duration
	tasks    bool
	impl     *sdk.Implementation
}

// NewServer returns an MCP server on which every swarm registered with rt
// (when NewServer is called) is a tool named after the swarm id:
//
//   - its input schema is the swarm's input schema when that describes an
//     object; any other input (text, for one) is the property "input" of the
//     arguments object;
//   - calling it starts a run and waits until the run pauses or ends. Its
//     structured content is an [Outcome] whose result follows the swarm's
//     result schema; a failed or stopped run is an error result; a paused
//     run is a result that gives the run id and the reason, to be answered
//     with the resume tool;
//   - a client that sends a progress token receives a progress
//     notification per journaled event of the run.
//
// The tool "resume" ({run_id, message, pause}) answers a paused run and
// waits again; with pause (the outcome's pause) it answers that pause only
// and is refused if the run no longer waits at it. The resource template swarm://runs/{id}/result reads a run's
// status and result as JSON, and each swarm is a prompt carrying its
// instructions (rendered for the optional "input" argument).
//
// Every request is checked with [auth.Check] against the caller's
// principal (see [NewHTTPHandler]); listings show only the swarms the caller
// may use. Over stdio there is no principal and everything is allowed.
func NewServer(rt *swarm.Runtime, opts Options) (*sdk.Server, error) {
	srv, _, err := newServer(rt, opts, false)
	return srv, err
}

// newServer is NewServer; with tasks, the server declares the Tasks
// extension and answers tools/call with tasks (its caller serves tasks/*).
func newServer(rt *swarm.Runtime, opts Options, tasks bool) (*sdk.Server, *server, error) {
	if rt == nil {
		return nil, nil, errors.New("mcp: NewServer with a nil runtime")
	}
	opts = opts.withDefaults()
	impl := &sdk.Implementation{Name: opts.Name, Version: opts.Version}
	s := &server{rt: rt, log: opts.Logger, defs: map[string]swarm.Definition{}, wrapped: map[string]bool{}, taskWait: opts.TaskWait, tasks: tasks, impl: impl}
	defs := rt.Swarms()
	slices.SortFunc(defs, func(a, b swarm.Definition) int { return strings.Compare(a.ID(), b.ID()) })
	caps := &sdk.ServerCapabilities{
		Completions: &sdk.CompletionCapabilities{},
		Tools:       &sdk.ToolCapabilities{},
		Prompts:     &sdk.PromptCapabilities{},
		Resources:   &sdk.ResourceCapabilities{},
		Logging:     &sdk.LoggingCapabilities{},
	}
	if tasks {
		caps.AddExtension(TasksExtension, map[string]any{})
	}
	srv := sdk.NewServer(impl, &sdk.ServerOptions{
		Logger: opts.Logger,
		Instructions: "Each tool runs a swarm of agents to completion and returns its result. " +
			"A run that pauses for a human returns its run_id and reason; answer it with the resume tool. " +
			"Run results are also resources at " + ResultURITemplate + ".",
		CompletionHandler: s.complete,
		Capabilities:      caps,
	})
	for _, d := range defs {
		if d.ID() == ResumeTool {
			return nil, nil, fmt.Errorf("mcp: swarm %q has the name of the built-in resume tool", d.ID())
		}
		tool, wrapped, err := swarmTool(d)
		if err != nil {
			return nil, nil, fmt.Errorf("mcp: swarm %s: %w", d.ID(), err)
		}
		s.defs[d.ID()] = d
		s.wrapped[d.ID()] = wrapped
		srv.AddTool(tool, s.callSwarm)
		srv.AddPrompt(swarmPrompt(d), s.getPrompt)
	}
	srv.AddTool(&sdk.Tool{
		Name:        ResumeTool,
		Title:       "Resume a paused run",
		Description: "Answer a paused swarm run with a message and wait until it pauses again or ends.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"run_id":{"type":"string","description":"The id of the paused run."},` +
			`"message":{"type":"string","description":"The answer to the run's question."},` +
			`"pause":{"type":"integer","minimum":1,"description":"The pause answered (the paused outcome's pause): the answer is refused if the run no longer waits at it. Without it, the current pause is answered."}},` +
			`"required":["run_id","message"],"additionalProperties":false}`),
		OutputSchema: outcomeSchema(json.RawMessage(`{}`)),
	}, s.resume)
	srv.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "run-result",
		Title:       "Run result",
		Description: "The status of a swarm run and, once it completed, its result (JSON).",
		MIMEType:    "application/json",
		URITemplate: ResultURITemplate,
	}, s.readResult)
	srv.AddReceivingMiddleware(s.filterListings)
	if tasks {
		srv.AddReceivingMiddleware(s.taskCalls)
	}
	srv.AddReceivingMiddleware(typeResults)
	return srv, s, nil
}

// swarmTool describes swarm d as a tool.
func swarmTool(d swarm.Definition) (*sdk.Tool, bool, error) {
	in := d.InputSchema()
	var sc struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(in, &sc); err != nil {
		return nil, false, fmt.Errorf("input schema: %w", err)
	}
	wrapped := sc.Type != "object"
	if wrapped {
		in = json.RawMessage(`{"type":"object","properties":{"input":` + string(in) + `},"required":["input"],"additionalProperties":false}`)
	}
	desc := d.Description()
	if desc == "" {
		desc = "Runs the swarm " + d.ID() + "."
	}
	return &sdk.Tool{
		Name:         d.ID(),
		Description:  desc,
		InputSchema:  in,
		OutputSchema: outcomeSchema(d.ResultSchema()),
	}, wrapped, nil
}

// outcomeSchema is the schema of an Outcome whose result follows result.
func outcomeSchema(result json.RawMessage) json.RawMessage {
	if len(result) == 0 {
		result = json.RawMessage(`{}`)
	}
	return json.RawMessage(`{"type":"object","properties":{` +
		`"run_id":{"type":"string"},"swarm":{"type":"string"},` +
		`"state":{"type":"string","enum":["running","paused","completed","failed","stopped"]},` +
		`"result":` + string(result) + `,` +
		`"reason":{"type":"string"},"context":{"type":"string"},"pause":{"type":"integer"}},` +
		`"required":["run_id","swarm","state"]}`)
}

func swarmPrompt(d swarm.Definition) *sdk.Prompt {
	desc := d.Description()
	if desc == "" {
		desc = "Instructions of the swarm " + d.ID() + "."
	}
	return &sdk.Prompt{
		Name:        d.ID(),
		Description: desc,
		Arguments: []*sdk.PromptArgument{{
			Name:        "input",
			Description: "The swarm's input (text, or JSON for a swarm with structured input); the instructions are rendered for it.",
		}},
	}
}

// callerContext returns ctx carrying the principal the HTTP handler put in
// the request's token info, if any.
func callerContext(ctx context.Context, extra *sdk.RequestExtra) context.Context {
	if p := principalOf(extra); p != nil {
		return auth.WithPrincipal(ctx, p)
	}
	return ctx
}

// CodeForbidden is the JSON-RPC error code of a request for a swarm the
// caller's token is not allowed.
const CodeForbidden = -32003

// check is auth.Check as a JSON-RPC error.
func check(ctx context.Context, swarmID string) error {
	if err := auth.Check(ctx, swarmID); err != nil {
		return &jsonrpc.Error{Code: CodeForbidden, Message: err.Error()}
	}
	return nil
}

func errorResult(format string, args ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// callSwarm is the handler of every swarm tool.
func (s *server) callSwarm(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	ctx = callerContext(ctx, req.Extra)
	runID, res, err := s.start(ctx, req.Params.Name, req.Params.Arguments)
	if err != nil || res != nil {
		return res, err
	}
	return s.await(ctx, req, runID, 0)
}

// start starts a run of swarm id for a tool call's arguments. A call
// refused for its arguments gets an error result instead of a run.
func (s *server) start(ctx context.Context, id string, args json.RawMessage) (string, *sdk.CallToolResult, error) {
	if err := check(ctx, id); err != nil {
		return "", nil, err
	}
	input, err := s.input(id, args)
	if err != nil {
		return "", errorResult("invalid arguments for swarm %s: %v", id, err), nil
	}
	runID, err := s.rt.Start(ctx, id, input)
	if err != nil {
		if errors.Is(err, swarm.ErrInvalidInput) {
			return "", errorResult("%v", err), nil
		}
		return "", nil, fmt.Errorf("start %s: %w", id, err)
	}
	s.log.Info("run started", "swarm", id, "run", runID)
	return runID, nil, nil
}

// input turns a tool's arguments into the swarm's JSON input.
func (s *server) input(id string, args json.RawMessage) (json.RawMessage, error) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if !s.wrapped[id] {
		return args, nil
	}
	var a struct {
		Input json.RawMessage `json:"input"`
	}
	// The tool's schema allows no other property: refuse one, naming it.
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("want an object with only the property \"input\": %w", err)
	}
	if len(a.Input) == 0 || string(a.Input) == "null" {
		return nil, errors.New(`missing the property "input"`)
	}
	return a.Input, nil
}

// resume is the handler of the resume tool.
func (s *server) resume(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	ctx = callerContext(ctx, req.Extra)
	var a struct {
		RunID   string `json:"run_id"`
		Message string `json:"message"`
		Pause   int64  `json:"pause"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &a); err != nil || a.RunID == "" || a.Pause < 0 {
		return errorResult(`invalid arguments: want {"run_id": "...", "message": "...", "pause": N (optional)}`), nil
	}
	st, err := s.rt.Status(ctx, a.RunID)
	if errors.Is(err, swarm.ErrNotFound) {
		return errorResult("no run %q", a.RunID), nil
	}
	if err != nil {
		return nil, err
	}
	if err := check(ctx, st.Swarm); err != nil {
		return nil, err
	}
	if st.State != swarm.StatePaused {
		res := outcomeResult(st)
		res.IsError = true
		res.Content = []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("run %s is %s, not paused: nothing to resume", st.ID, st.State)}}
		return res, nil
	}
	var opts []swarm.ResumeOption
	if a.Pause != 0 {
		opts = append(opts, swarm.AtPause(a.Pause))
	}
	if err := s.rt.Resume(ctx, a.RunID, a.Message, opts...); err != nil {
		if errors.Is(err, swarm.ErrPauseNotCurrent) {
			return errorResult("run %s no longer waits at pause %d (answered already, or paused again since): nothing applied", a.RunID, a.Pause), nil
		}
		if errors.Is(err, swarm.ErrInvalidState) {
			return errorResult("run %s cannot be resumed: %v", a.RunID, err), nil
		}
		return nil, err
	}
	s.log.Info("run resumed", "swarm", st.Swarm, "run", a.RunID)
	return s.await(ctx, req, a.RunID, st.LastSeq)
}

// await waits until run id pauses or ends, sending progress notifications
// for its events after seq after when the client asked for them.
func (s *server) await(ctx context.Context, req *sdk.CallToolRequest, id string, after int64) (*sdk.CallToolResult, error) {
	var done chan struct{}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		done = make(chan struct{})
		go func() {
			defer close(done)
			s.progress(pctx, req.Session, token, id, after)
		}()
	}
	st, err := s.rt.Wait(ctx, id)
	if done != nil {
		if err == nil {
			// Let the notifications of the run's last events go out
			// before the result.
			t := time.NewTimer(progressGrace)
			select {
			case <-done:
			case <-t.C:
			}
			t.Stop()
		}
		cancel()
		<-done
	}
	if err != nil {
		return nil, fmt.Errorf("wait for run %s (it goes on; read %s%s%s): %w", id, resultURIPrefix, id, resultURISuffix, err)
	}
	return s.outcome(ctx, st), nil
}

// progressGrace bounds how long a result waits for the progress
// notifications of the events before it.
const progressGrace = 2 * time.Second

// progress notifies the client of each journaled event of run id.
func (s *server) progress(ctx context.Context, ss *sdk.ServerSession, token any, id string, after int64) {
	for ev, err := range s.rt.Events(ctx, id, after) {
		if err != nil {
			return
		}
		if ev.Seq == 0 {
			continue
		}
		msg := describeEvent(ev)
		if err := ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(ev.Seq), Message: msg}); err != nil {
			return
		}
		if ev.Type == swarm.EventPaused {
			return
		}
	}
}

func describeEvent(ev swarm.Event) string {
	switch ev.Type {
	case swarm.EventToolCall:
		return fmt.Sprintf("%s calls %s", ev.Agent, ev.Tool)
	case swarm.EventToolResult:
		return fmt.Sprintf("%s got the result of %s", ev.Agent, ev.Tool)
	case swarm.EventHandoffStarted:
		return fmt.Sprintf("%s hands off to %s", ev.Agent, ev.Target)
	case swarm.EventHandoffReturned:
		return fmt.Sprintf("%s got the answer of %s", ev.Agent, ev.Target)
	case swarm.EventTurnCompleted:
		return fmt.Sprintf("%s finished turn %d of %d", ev.Agent, ev.Turn, ev.MaxTurns)
	case swarm.EventPaused, swarm.EventFailed, swarm.EventStopped:
		return fmt.Sprintf("%s: %s", ev.Type, ev.Reason)
	}
	return string(ev.Type)
}

// outcomeResult maps a run's status to a tool result.
func outcomeResult(st swarm.Status) *sdk.CallToolResult {
	out := Outcome{RunID: st.ID, Swarm: st.Swarm, State: st.State, Result: st.Result, Reason: st.Reason, Context: st.Context, Pause: st.Pause}
	var text string
	res := &sdk.CallToolResult{StructuredContent: out}
	switch st.State {
	case swarm.StateCompleted:
		text = string(st.Result)
		var s string
		if json.Unmarshal(st.Result, &s) == nil {
			text = s
		}
	case swarm.StatePaused:
		text = fmt.Sprintf("Run %s is paused: %s", st.ID, st.Reason)
		if st.Context != "" {
			text += "\nContext: " + st.Context
		}
		text += fmt.Sprintf("\nTo continue, call the %s tool with {\"run_id\": %q, \"pause\": %d, \"message\": \"<your answer>\"}.", ResumeTool, st.ID, st.Pause)
	case swarm.StateFailed:
		res.IsError = true
		text = fmt.Sprintf("Run %s failed: %s", st.ID, st.Reason)
	case swarm.StateStopped:
		res.IsError = true
		text = fmt.Sprintf("Run %s was stopped: %s", st.ID, st.Reason)
	default:
		text = fmt.Sprintf("Run %s is %s; read %s%s%s for its outcome.", st.ID, st.State, resultURIPrefix, st.ID, resultURISuffix)
	}
	res.Content = []sdk.Content{&sdk.TextContent{Text: text}}
	return res
}

// readResult reads swarm://runs/{id}/result.
func (s *server) readResult(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	ctx = callerContext(ctx, req.Extra)
	id, ok := strings.CutPrefix(uri, resultURIPrefix)
	if ok {
		id, ok = strings.CutSuffix(id, resultURISuffix)
	}
	if !ok || id == "" || strings.Contains(id, "/") {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	st, err := s.rt.Status(ctx, id)
	if errors.Is(err, swarm.ErrNotFound) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	if err := check(ctx, st.Swarm); err != nil {
		return nil, err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode status of %s: %w", id, err)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// getPrompt returns a swarm's instructions, rendered for the optional input.
func (s *server) getPrompt(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	id := req.Params.Name
	ctx = callerContext(ctx, req.Extra)
	d, ok := s.defs[id]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", id)}
	}
	if err := check(ctx, id); err != nil {
		return nil, err
	}
	arg, given := req.Params.Arguments["input"]
	var input json.RawMessage
	switch {
	case isTextSchema(d.InputSchema()):
		input, _ = json.Marshal(arg)
	case !given:
		input = json.RawMessage(`{}`)
	case !json.Valid([]byte(arg)):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %s: the input must be JSON matching %s", id, d.InputSchema())}
	default:
		input = json.RawMessage(arg)
	}
	text, err := s.rt.Instructions(id, input)
	if err != nil && given {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %s: %v", id, err)}
	}
	if err != nil || text == "" {
		// The instructions need a real input: the description stands in.
		text = d.Description()
	}
	msgs := []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: text}}}
	if given && arg != "" {
		msgs = append(msgs, &sdk.PromptMessage{Role: "user", Content: &sdk.TextContent{Text: arg}})
	}
	return &sdk.GetPromptResult{Description: d.Description(), Messages: msgs}, nil
}

func isTextSchema(schema json.RawMessage) bool {
	var sc struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(schema, &sc) == nil && sc.Type == "string"
}

// maxCompletions bounds the run ids offered as completions.
const maxCompletions = 100

// complete offers the ids of the newest runs the caller may read for the
// id of swarm://runs/{id}/result; other arguments have no completions.
func (s *server) complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	res := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}
	ref := req.Params.Ref
	if ref == nil || ref.Type != "ref/resource" || ref.URI != ResultURITemplate || req.Params.Argument.Name != "id" {
		return res, nil
	}
	ctx = callerContext(ctx, req.Extra)
	runs, err := s.rt.List(ctx, store.Filter{Limit: 4 * maxCompletions})
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if strings.HasPrefix(r.ID, req.Params.Argument.Value) && auth.Allowed(ctx, r.Swarm) {
			if len(res.Completion.Values) == maxCompletions {
				res.Completion.HasMore = true
				break
			}
			res.Completion.Values = append(res.Completion.Values, r.ID)
		}
	}
	return res, nil
}

// filterListings hides the tools and prompts of swarms the caller may not
// use.
func (s *server) filterListings(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		p := principalOf(req.GetExtra())
		if p == nil || p.All() {
			return res, nil
		}
		switch r := res.(type) {
		case *sdk.ListToolsResult:
			r.Tools = slices.DeleteFunc(r.Tools, func(t *sdk.Tool) bool {
				_, isSwarm := s.defs[t.Name]
				return isSwarm && !p.Allows(t.Name)
			})
		case *sdk.ListPromptsResult:
			r.Prompts = slices.DeleteFunc(r.Prompts, func(pr *sdk.Prompt) bool { return !p.Allows(pr.Name) })
		}
		return res, nil
	}
}

// outcome is outcomeResult with a completed run's result parts after its
// text: images as image content, audio as audio content, other files as
// embedded resources (swarm://runs/{id}/parts/{n}), and parts given by URL
// as resource links, each with its bytes loaded from the store.
func (s *server) outcome(ctx context.Context, st swarm.Status) *sdk.CallToolResult {
	res := outcomeResult(st)
	if st.State != swarm.StateCompleted || len(st.Parts) == 0 {
		return res
	}
	parts := st.Parts
	if b, ok := s.rt.Store().(store.Blobs); ok {
		msgs, err := store.LoadParts(ctx, b, st.ID, []model.Message{{Parts: parts}}, nil)
		if err != nil {
			return errorResult("run %s completed, but its result parts could not be read: %v", st.ID, err)
		}
		parts = msgs[0].Parts
	}
	for i, p := range parts {
		res.Content = append(res.Content, partContent(st.ID, i, p))
	}
	return res
}

// partContent is result part i of run id as MCP content.
func partContent(id string, i int, p model.Part) sdk.Content {
	switch {
	case p.Type == model.PartText:
		return &sdk.TextContent{Text: p.Text}
	case p.URL != "":
		name := p.Name
		if name == "" {
			name = string(p.Type) + "-" + strconv.Itoa(i+1)
		}
		return &sdk.ResourceLink{URI: p.URL, Name: name, MIMEType: p.MediaType}
	case p.Type == model.PartImage:
		return &sdk.ImageContent{Data: p.Data, MIMEType: p.MediaType}
	case p.Type == model.PartAudio:
		return &sdk.AudioContent{Data: p.Data, MIMEType: p.MediaType}
	}
	rc := &sdk.ResourceContents{URI: resultURIPrefix + id + "/parts/" + strconv.Itoa(i+1), MIMEType: p.MediaType, Blob: p.Data}
	if p.Name != "" {
		rc.Meta = sdk.Meta{"name": p.Name}
	}
	return &sdk.EmbeddedResource{Resource: rc}
}
