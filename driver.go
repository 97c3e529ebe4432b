package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Strategy is a kind of run: what a run does, written as straight-line Go
// over the durable primitives of a [Driver]. Give a swarm one in
// Spec.Strategy; its run is then driven by Drive instead of the model's
// tool-calling loop.
//
// Drive returns the run's result as JSON (a JSON string for a swarm whose
// result is text), which the runtime checks against the swarm's result
// type and journals as the run's end. Its error decides the run's end
// otherwise:
//
//   - an error wrapping [ErrAwaiting] (from Await, or a delegation whose
//     child waits for a human): the run pauses and is released; Drive runs
//     again when the answer arrives;
//   - a [*Failure]: the run fails with its reason;
//   - the context's error or a failure of the journal: the run is
//     interrupted and continues on a later drive, here or on another
//     process;
//   - any other error: the run fails with the error's text.
//
// # The rules of replay
//
// Drive runs again from its start after every crash, restart, pause and
// recovery. Each primitive looks its step key up in the journal first: a
// step with a recorded outcome returns that outcome and does nothing else,
// so a Drive that follows the rules continues at the first step without
// one and never redoes a completed step. The rules:
//
//  1. Step keys are a function of the run's input and of what earlier
//     primitives returned: never of the clock, a random number, map
//     iteration order or anything else outside the journal. Use Record for
//     any such value, and for any decision made from one.
//  2. Each key names one step. A key is one or more segments separated by
//     "/"; the runtime adds its own segments below it ("<key>/model",
//     "<key>/tool/<id>"), and "start" and "end" are its own.
//  3. Side effects belong inside primitives: a Go function with effects
//     runs inside Record (at least once, like a tool: use IdempotencyKey).
//
// Every primitive counts toward the run tree's limits and budgets: model
// calls (Config.MaxModelCalls), tool executions and recorded functions
// (Config.MaxToolCalls), tokens, cost and wall time. A strategy that
// loops is bounded by them even if it forgets its own bound, and ends in a
// failure that names the limit.
type Strategy interface {
	Drive(ctx context.Context, d *Driver) (json.RawMessage, error)
}

// ErrAwaiting is wrapped by the error of a primitive whose answer is not
// in the journal yet (a human's, or a child run's that waits for one): the
// run pauses when Drive returns it. A strategy passes it up, or, in a
// branch of Parallel, lets the other branches go on.
var ErrAwaiting = errors.New("awaiting an answer")

// Failure is an error that fails the run with Reason when Drive returns
// it. Delegations that fail return one too, so that a strategy can tell a
// failed step (which it may handle) from an interruption (which it must
// return).
type Failure struct {
	Reason string
	// abort: the failure ends the whole run even if the strategy goes
	// on (a limit or budget of the run tree was reached).
	abort bool
}

func (f *Failure) Error() string { return f.Reason }

// Ends reports whether the failure ends the run whatever the strategy
// does: a limit or budget of the run tree was reached, or a guardrail
// tripped. A strategy returns such a failure instead of handling it as a
// failed step.
func (f *Failure) Ends() bool { return f.abort }

// Question is what a run asks a human in Await.
type Question struct {
	// Reason is the question (shown as the pause's reason).
	Reason string
	// Context is what the human needs to answer it.
	Context string
	// Kind names the kind of question for user interfaces (for example
	// "input" for a form whose JSON schema is Context).
	Kind string
}

// Driver is a run being driven by its [Strategy]: the durable primitives a
// strategy is written in. It is safe for concurrent use by the branches of
// Parallel.
type Driver struct {
	r *runner
	// ap, when set, is the agent the Driver's steps act as (see As);
	// else the run's orchestrator.
	ap *agentPlan
	// turn is the turn the Driver's steps belong to (see AtTurn).
	turn int
	// checking: the Driver only describes a run to Checker.Check.
	checking bool
}

// seamStrategy runs a public Strategy on the engine's runner.
type seamStrategy struct{ s Strategy }

func (s seamStrategy) drive(ctx context.Context, r *runner) outcome {
	res, err := safely(func() (json.RawMessage, error) { return s.s.Drive(ctx, &Driver{r: r}) })
	if err == nil {
		out, verr := r.info.output(res)
		if verr != nil {
			return outcome{kind: failed, reason: "invalid result: " + verr.Error()}
		}
		return outcome{kind: completed, result: out}
	}
	var f *Failure
	switch {
	case errors.Is(err, ErrAwaiting):
		return outcome{kind: paused}
	case errors.As(err, &f):
		return outcome{kind: failed, reason: f.Reason, abort: f.abort}
	}
	if out, stop := stepFailed(ctx, err); stop {
		return out
	}
	return outcome{kind: failed, reason: err.Error()}
}

// safely runs fn, turning a panic into a *Failure that says where it was,
// so that a strategy's bug fails its run instead of the process.
func safely[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Failure{Reason: fmt.Sprintf("panic: %v\n%s", p, debug.Stack())}
		}
	}()
	return fn()
}

// RunID is the run's id.
func (d *Driver) RunID() string { return d.r.id }

// Input is the run's input as JSON.
func (d *Driver) Input() json.RawMessage { return d.r.input }

// Agent is the name of the run's orchestrator (the swarm's id), the agent
// that Model calls and Await and Record are attributed to.
func (d *Driver) Agent() string { return d.root().name }

// AtTurn returns a Driver whose steps belong to turn n of the run, for a
// strategy that counts its own rounds: their events carry Turn n, and the
// run's status shows it. d itself is unchanged.
func (d *Driver) AtTurn(n int) *Driver {
	c := *d
	c.turn = n
	return &c
}

// checkKey refuses a step key the runtime could not journal or uses
// itself, and any step of a Driver given to Checker.Check.
func (d *Driver) checkKey(key string) error {
	switch {
	case d.checking:
		return fmt.Errorf("%w: a strategy's Check runs no steps", ErrInvalid)
	case key == "" || key == "start" || key == "end":
		return fmt.Errorf("%w: step key %q is reserved or empty", ErrInvalid, key)
	case strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") || strings.Contains(key, "//"):
		return fmt.Errorf("%w: step key %q has an empty segment", ErrInvalid, key)
	case len(key) > maxPathLen:
		return fmt.Errorf("%w: step key is %d bytes (at most %d)", ErrInvalid, len(key), maxPathLen)
	}
	return nil
}

// Model calls the orchestrator's model with msgs after its system prompt
// and offers it the orchestrator's tools; the response is journaled under
// key+"/model". Retries, guardrails, compaction, usage and the model call
// limit apply as in the tool-calling loop. A failure of the model (after
// its retries) is returned as a [*Failure].
func (d *Driver) Model(ctx context.Context, key string, msgs []model.Message) (*model.Response, error) {
	if err := d.checkKey(key); err != nil {
		return nil, err
	}
	return d.ModelStep(ctx, key, msgs, Step{})
}

// stepError turns the error of a model step into what a primitive returns.
func (d *Driver) stepError(ctx context.Context, err error) error {
	out, stop := stepFailed(ctx, err)
	switch {
	case !stop:
		return &Failure{Reason: err.Error()}
	case out.kind == paused:
		return fmt.Errorf("%w: %w", ErrAwaiting, err)
	case out.kind == failed:
		return &Failure{Reason: out.reason, abort: out.abort}
	}
	return err
}

// ToolResult is the outcome of one tool call run by Tools.
type ToolResult struct {
	// Output is the tool's output (an error message when IsError).
	Output  string
	IsError bool
	// Parts are the tool's parts (see AttachParts), by reference: give
	// them to the model with Output, in the tool message.
	Parts []model.Part
}

// Tools runs calls, the tool calls of the response Model journaled under
// key (which announced them), in parallel, each outcome journaled under
// key+"/tool/<call id>": the orchestrator's tools,
// handoffs to agents (their own loop, nested under the call's key) and to
// swarms (child runs).
// The built-in tools complete, pause and fail are the tool-calling loop's:
// a strategy that wants them reads the calls itself (or sets
// Spec.NoBuiltins so they are not offered).
func (d *Driver) Tools(ctx context.Context, key string, calls []model.ToolCall) ([]ToolResult, error) {
	_, out, err := d.runCalls(ctx, "Tools", key, calls, false)
	return out, err
}

// runCalls runs calls under key for Tools (merge false) and Round (merge
// true: the round's results are journaled with its end). The built-in
// tools are refused when the run's agent is offered them, and always by
// Tools.
func (d *Driver) runCalls(ctx context.Context, what, key string, calls []model.ToolCall, merge bool) (*round, []ToolResult, error) {
	if err := d.checkKey(key); err != nil {
		return nil, nil, err
	}
	r, ap := d.r, d.root()
	if ap.builtins || !merge {
		for _, c := range calls {
			if c.Name == toolComplete || c.Name == toolPause || c.Name == toolFail {
				return nil, nil, fmt.Errorf("%w: %s cannot run the built-in tool %q", ErrInvalid, what, c.Name)
			}
		}
	}
	rd := &round{ap: ap, tkey: key, turn: d.turn, merge: merge}
	results := r.execCalls(ctx, rd, calls)
	if err := d.below(ctx, results); err != nil {
		return nil, nil, err
	}
	out := make([]ToolResult, len(results))
	for i, res := range results {
		out[i] = ToolResult{Output: res.output, IsError: res.isError, Parts: res.parts}
	}
	return rd, out, nil
}

// below returns what stops the strategy in results: an interruption, a
// limit reached below, or a pause below (recorded here).
func (d *Driver) below(ctx context.Context, results []callResult) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	out, stop := d.r.below(ctx, d.root(), results, store.Update{Turn: d.turn})
	switch {
	case !stop:
		return nil
	case out.kind == interrupted:
		return out.err
	case out.kind == paused:
		return ErrAwaiting
	}
	return &Failure{Reason: out.reason, abort: out.abort}
}

// Delegate hands request to target, one of Roster, and returns its
// answer: an agent runs its own tool-calling loop (steps nested under
// key), a swarm runs as a child run (waiting for it holds no lease when it
// pauses; for a swarm whose input is not text, request is its JSON input,
// and the answer is its JSON result). The delegation is journaled as a handoff under key+"/tool/next"
// and counts toward the nesting depth limit. A target that fails returns a
// [*Failure].
func (d *Driver) Delegate(ctx context.Context, key, target, request string) (string, error) {
	if err := d.checkKey(key); err != nil {
		return "", err
	}
	res := d.r.delegate(ctx, d.root(), key, d.turn, target, request)
	if err := d.below(ctx, []callResult{res}); err != nil {
		return "", err
	}
	if res.isError {
		return "", &Failure{Reason: strings.TrimPrefix(res.output, "error: ")}
	}
	return res.output, nil
}

// Await asks a human q and returns the answer once the journal holds it.
// Until then the run pauses: Await journals the question under key (once)
// and returns an error wrapping [ErrAwaiting], which the strategy returns;
// no goroutine waits and the run holds no lease. A resume of the run is
// the answer; Drive then runs again and Await returns it.
func (d *Driver) Await(ctx context.Context, key string, q Question) (string, error) {
	msg, _, err := d.AwaitParts(ctx, key, q)
	return msg, err
}

// AwaitParts is Await returning also the parts the answer carries (a
// user's message sent with [WithMessageParts]), large ones by reference
// as the journal holds them: a strategy puts them on the model.Message it
// gives the model (model steps load the bytes) and hands them on with
// [WithConversationParts]. A replay returns the same parts.
func (d *Driver) AwaitParts(ctx context.Context, key string, q Question) (string, []model.Part, error) {
	if err := d.checkKey(key); err != nil {
		return "", nil, err
	}
	if q.Reason == "" {
		return "", nil, fmt.Errorf("%w: a question needs a reason", ErrInvalid)
	}
	r := d.r
	pause := Event{Type: EventPaused, Key: key, Agent: r.plan.root.name, Turn: d.turn, Reason: q.Reason, Context: q.Context, Kind: q.Kind}
	msg, parts, ok, err := r.await(ctx, d.root(), pause, d.asUpdate(store.Update{Turn: d.turn}))
	switch {
	case err != nil:
		return "", nil, err
	case !ok:
		return "", nil, ErrAwaiting
	}
	return msg, parts, nil
}

// Record runs fn once and journals what it returned under key (an event of
// type EventRecorded, with kind in its Kind), so that a replay gets the
// same value without running fn: a strategy's own decisions, values from
// the clock or a random number, and Go functions with effects. An error
// of fn is journaled too and returned as a [*Failure] on every replay,
// unless it is an interruption (the context's error), which is not
// journaled. fn's context carries the step's IdempotencyKey, and a panic
// in fn is its failure. Each run of fn counts as a tool execution toward
// the run tree's limit.
func (d *Driver) Record(ctx context.Context, key, kind string, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	if err := d.checkKey(key); err != nil {
		return nil, err
	}
	r := d.r
	if v, ok, err := d.Recorded(key); ok || err != nil {
		return v, err
	}
	if err := d.takeTool(ctx); err != nil {
		return nil, err
	}
	v, ferr := safely(func() (json.RawMessage, error) { return fn(WithCallKey(ctx, r.id, key)) })
	ev := Event{Type: EventRecorded, Key: key, Agent: d.Agent(), Kind: kind}
	switch {
	case ferr != nil && ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case ferr != nil:
		ev.IsError, ev.Output = true, ferr.Error()
	case len(v) == 0:
		v = json.RawMessage("null")
		fallthrough
	default:
		if !json.Valid(v) {
			return nil, fmt.Errorf("%w: step %s: recorded value is not JSON", ErrInvalid, key)
		}
		ev.Result = v
	}
	if _, err := r.record(ctx, ev, store.Update{}); err != nil {
		return nil, err
	}
	if ferr != nil {
		var f *Failure
		if errors.As(ferr, &f) {
			return nil, f
		}
		return nil, &Failure{Reason: ferr.Error()}
	}
	return ev.Result, nil
}

// takeTool takes one tool execution from the run tree's limit.
func (d *Driver) takeTool(ctx context.Context) error {
	r := d.r
	if r.budget == nil || r.budget.ToolCalls <= 0 || r.lifted.Load() {
		return nil
	}
	ok, err := r.take(ctx, toolCall)
	switch {
	case err != nil:
		return err
	case !ok:
		return &Failure{Reason: "budget exceeded: " + r.budget.reached(toolCall), abort: true}
	}
	return nil
}

// Parallel runs fn for branches 0 to n-1 at once (at most
// Config.MaxParallel at a time) and returns each branch's error, nil
// for those that succeeded. Each branch is durable by its keys: give every
// branch keys of its own (key+"/"+strconv.Itoa(i)). A branch that awaits
// an answer does not stop the others; the run pauses once Drive returns
// ErrAwaiting, and on the drive after the answer the finished branches
// return their recorded outcomes at once. Parallel returns early only when
// ctx ends.
func (d *Driver) Parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) []error {
	errs := make([]error, n)
	sem := make(chan struct{}, max(d.r.rt.cfg.MaxParallel, 1))
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			for j := i; j < n; j++ {
				errs[j] = context.Cause(ctx)
			}
			wg.Wait()
			return errs
		}
		wg.Go(func() {
			defer func() { <-sem }()
			_, errs[i] = safely(func() (struct{}, error) { return struct{}{}, fn(ctx, i) })
		})
	}
	wg.Wait()
	return errs
}

// Sleep waits until dur after the first time the run reached key: the
// deadline is recorded, so a run recovered elsewhere waits only for what
// is left of it (and not at all once it has passed). The run keeps its
// lease while it sleeps.
func (d *Driver) Sleep(ctx context.Context, key string, dur time.Duration) error {
	v, err := d.Record(ctx, key, "timer", func(context.Context) (json.RawMessage, error) {
		return json.Marshal(time.Now().Add(dur))
	})
	if err != nil {
		return err
	}
	var until time.Time
	if err := json.Unmarshal(v, &until); err != nil {
		return fmt.Errorf("step %s: recorded deadline: %w", key, err)
	}
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
