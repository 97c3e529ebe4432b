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

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// seamDriver is a run being driven by its strategy: the engine side of
// the durable primitives package strategy documents (strategy.Driver
// forwards each of its methods here). It is safe for concurrent use by
// the branches of Parallel.
type seamDriver struct {
	r *runner
	// ap, when set, is the agent the driver's steps act as (see As);
	// else the run's orchestrator.
	ap *agentPlan
	// turn is the turn the driver's steps belong to (see AtTurn).
	turn int
	// checking: the driver only describes a run to a strategy's Check.
	checking bool
}

// seamStrategy runs a strategy of package strategy on the engine's runner.
type seamStrategy struct{ s seam.Driven }

// longLived reports whether the plan's runs take up outside work again
// and again (see strategy.LongLived).
func (p *plan) longLived() bool {
	s, ok := p.strategy.(seamStrategy)
	return ok && s.s.LongLived()
}

func (s seamStrategy) drive(ctx context.Context, r *runner) outcome {
	r.deferPause = true
	res, err := safely(func() (json.RawMessage, error) { return s.s.Drive(ctx, &seamDriver{r: r}) })
	if err == nil {
		if reason, ok := r.swallowed(); ok {
			return outcome{kind: failed, reason: fmt.Sprintf("the strategy returned a result while the run awaited an answer (%s): "+
				"Drive must return the error wrapping strategy.ErrAwaiting that the step which asked returned, and the run pauses", reason)}
		}
		out, verr := r.info.output(res)
		if verr != nil {
			return outcome{kind: failed, reason: "invalid result: " + verr.Error()}
		}
		return outcome{kind: completed, result: out}
	}
	if errors.Is(err, seam.ErrAwaiting) {
		return outcome{kind: paused}
	}
	if reason, final, ok := seam.FailureOf(err); ok {
		return outcome{kind: failed, reason: reason, abort: final}
	}
	if out, stop := stepFailed(ctx, err); stop {
		return out
	}
	return outcome{kind: failed, reason: err.Error()}
}

// safely runs fn, turning a panic into a *seam.Failure that says where it was,
// so that a strategy's bug fails its run instead of the process.
func safely[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = seam.NewFailure(fmt.Sprintf("panic: %v\n%s", p, debug.Stack()), false)
		}
	}()
	return fn()
}

// RunID implements strategy.Driver.RunID.
func (d *seamDriver) RunID() string { return d.r.id }

// Input implements strategy.Driver.Input.
func (d *seamDriver) Input() json.RawMessage { return d.r.input }

// Agent implements strategy.Driver.Agent.
func (d *seamDriver) Agent() string { return d.root().name }

// AtTurn implements strategy.Driver.AtTurn.
func (d *seamDriver) AtTurn(n int) any {
	c := *d
	c.turn = n
	return &c
}

// checkKey refuses a step key the runtime could not journal or uses
// itself, and any step of a Driver given to Checker.Check.
func (d *seamDriver) checkKey(key string) error {
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

// stepKind is a kind of primitive that takes a step under its key.
type stepKind uint8

const (
	kindModel    stepKind = iota + 1 // Model, ModelStep, Ask
	kindTools                        // Tools, Round
	kindDelegate                     // Delegate, DelegateParts
	kindAwait                        // Await, AwaitParts, AwaitMail
	kindRecord                       // Record, RecordEvent, Sleep
	kindGuard                        // CheckInput
)

// stepUse is a primitive that took a step's key in this drive.
type stepUse struct {
	what string // the primitive, as a strategy calls it
	kind stepKind
}

// takeStep claims key for primitive what, of kind, in this drive: the one
// place where the rule that each key names one step is kept, whatever the
// kinds of the primitives. A second primitive given the key of an earlier
// one in the same drive would be answered with the earlier one's outcome,
// journal beside it records a replay mistakes for its own, or fail to
// journal and leave the run for a later drive that meets the clash again,
// so it is refused, naming both. The one exception is a round: the tools
// of a model's response run under the model call's key (Model or
// ModelStep or Ask, then Tools or Round, once each). A replay is a drive
// of its own, which claims its keys afresh.
func (d *seamDriver) takeStep(key, what string, kind stepKind) error {
	if err := d.checkKey(key); err != nil {
		return err
	}
	r := d.r
	r.stepMu.Lock()
	defer r.stepMu.Unlock()
	uses := r.steps[key]
	if len(uses) > 0 && (len(uses) > 1 || uses[0].kind != kindModel || kind != kindTools) {
		return fmt.Errorf("%w: step key %q names two steps of the run (%s, then %s): each step needs a key of its own (only a model call and the tools of its response share one)",
			ErrInvalid, key, uses[len(uses)-1].what, what)
	}
	if r.steps == nil {
		r.steps = map[string][]stepUse{}
	}
	r.steps[key] = append(uses, stepUse{what, kind})
	return nil
}

// Model implements strategy.Driver.Model.
func (d *seamDriver) Model(ctx context.Context, key string, msgs []model.Message) (*model.Response, error) {
	return d.model(ctx, "Model", key, msgs, nil, 0, false)
}

// stepError turns the error of a model step into what a primitive returns.
func (d *seamDriver) stepError(ctx context.Context, err error) error {
	out, stop := stepFailed(ctx, err)
	switch {
	case !stop:
		return seam.NewFailure(err.Error(), false)
	case out.kind == paused:
		return fmt.Errorf("%w: %w", seam.ErrAwaiting, err)
	case out.kind == failed:
		return seam.NewFailure(out.reason, out.abort)
	}
	return err
}

// Tools implements strategy.Driver.Tools.
func (d *seamDriver) Tools(ctx context.Context, key string, calls []model.ToolCall) ([]seam.ToolResult, error) {
	_, out, err := d.runCalls(ctx, "Tools", key, calls, false)
	return out, err
}

// runCalls runs calls under key for Tools (merge false) and Round (merge
// true: the round's results are journaled with its end). The built-in
// tools are refused when the run's agent is offered them, and always by
// Tools.
func (d *seamDriver) runCalls(ctx context.Context, what, key string, calls []model.ToolCall, merge bool) (*round, []seam.ToolResult, error) {
	if err := d.takeStep(key, what, kindTools); err != nil {
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
	rd := &round{ap: ap, tkey: key, turn: d.turn, merge: merge, stamp: true}
	results := r.execCalls(ctx, rd, calls)
	if err := d.below(ctx, results); err != nil {
		return nil, nil, err
	}
	out := make([]seam.ToolResult, len(results))
	for i, res := range results {
		out[i] = seam.ToolResult{Output: res.output, IsError: res.isError, Parts: res.parts}
	}
	return rd, out, nil
}

// below returns what stops the strategy in results: an interruption, a
// limit reached below, or a pause below (recorded here).
func (d *seamDriver) below(ctx context.Context, results []callResult) error {
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
		return seam.ErrAwaiting
	}
	return seam.NewFailure(out.reason, out.abort)
}

// Delegate implements strategy.Driver.Delegate.
func (d *seamDriver) Delegate(ctx context.Context, key, target, request string) (string, error) {
	return d.delegate(ctx, "Delegate", key, target, request)
}

// delegate is Delegate as primitive what.
func (d *seamDriver) delegate(ctx context.Context, what, key, target, request string) (string, error) {
	if err := d.takeStep(key, what, kindDelegate); err != nil {
		return "", err
	}
	res := d.r.delegate(ctx, d.root(), key, d.turn, target, request)
	if err := d.below(ctx, []callResult{res}); err != nil {
		return "", err
	}
	if res.isError {
		return "", seam.NewFailure(strings.TrimPrefix(res.output, "error: "), false)
	}
	return res.output, nil
}

// AwaitParts implements strategy.Driver.AwaitParts.
func (d *seamDriver) AwaitParts(ctx context.Context, key string, q seam.Question) (string, []model.Part, error) {
	if err := d.takeStep(key, "Await", kindAwait); err != nil {
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
		return "", nil, seam.ErrAwaiting
	}
	return msg, parts, nil
}

// Record implements strategy.Driver.Record.
func (d *seamDriver) Record(ctx context.Context, key, kind string, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	return d.record(ctx, "Record", key, kind, fn)
}

// record is Record as primitive what.
func (d *seamDriver) record(ctx context.Context, what, key, kind string, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	if err := d.takeStep(key, what, kindRecord); err != nil {
		return nil, err
	}
	r := d.r
	if v, ok, err := d.Recorded(key); ok || err != nil {
		return v, err
	}
	if err := d.takeTool(ctx); err != nil {
		return nil, err
	}
	v, ferr := safely(func() (json.RawMessage, error) { return fn(r.withCall(ctx, key)) })
	ev := Event{Type: EventRecorded, Key: key, Agent: d.Agent(), Kind: kind, Turn: d.turn}
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
	if _, err := r.record(ctx, ev, store.Update{Turn: d.turn}); err != nil {
		return nil, err
	}
	if ferr != nil {
		if reason, final, ok := seam.FailureOf(ferr); ok {
			return nil, seam.NewFailure(reason, final)
		}
		return nil, seam.NewFailure(ferr.Error(), false)
	}
	return ev.Result, nil
}

// takeTool takes one tool execution from the run tree's limit.
func (d *seamDriver) takeTool(ctx context.Context) error {
	r := d.r
	if r.budget == nil || r.budget.ToolCalls <= 0 || r.lifted.Load() {
		return nil
	}
	ok, err := r.take(ctx, toolCall)
	switch {
	case err != nil:
		return err
	case !ok:
		return seam.NewFailure("budget exceeded: "+r.budget.reached(toolCall), true)
	}
	return nil
}

// Parallel implements strategy.Driver.Parallel.
func (d *seamDriver) Parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) []error {
	return d.ParallelLimit(ctx, n, 0, fn)
}

// ParallelLimit implements strategy.Driver.ParallelLimit.
func (d *seamDriver) ParallelLimit(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) []error {
	errs := make([]error, n)
	if limit <= 0 {
		limit = d.r.rt.cfg.MaxParallel
	}
	sem := make(chan struct{}, max(limit, 1))
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

// Sleep implements strategy.Driver.Sleep.
func (d *seamDriver) Sleep(ctx context.Context, key string, dur time.Duration) error {
	v, err := d.record(ctx, "Sleep", key, "timer", func(context.Context) (json.RawMessage, error) {
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
