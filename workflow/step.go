package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/strategy"
)

// Step is a typed part of a workflow that turns an In into an Out, durably:
// a node (an agent, a swarm, a Go function, a human) or a composition of
// steps. Steps are values: the methods that adjust one return a copy.
type Step[In, Out any] struct {
	name string
	kind string
	// flat: the step adds no key segment of its own (a sequence).
	flat     bool
	run      func(ctx context.Context, x *exec, key string, in In) (Out, error)
	targets  []swarm.Handoff
	err      error
	retries  int
	timeout  time.Duration
	optional bool
	describe func() []string // the keyed names at this level, for the duplicate check
	// inner is the shape of the steps inside this one, below key.
	inner func(key, parent string) []ShapeNode
	// shape adds what the step's kind tells of its own node of the shape
	// (a loop's bound, a join).
	shape func(n *ShapeNode)
	// limited makes the step again with a limit on its branches at once
	// (nil: the step has no branches).
	limited func(n int) Step[In, Out]
}

// Name is the step's name, the last segment of its key ("" for an unnamed
// sequence).
func (s Step[In, Out]) Name() string {
	if s.flat {
		return ""
	}
	return s.name
}

// Named returns a copy of s under name: its key's last segment. A
// sequence made by [Then] has no key of its own until it is named (and
// then its steps' keys are below it).
func (s Step[In, Out]) Named(name string) Step[In, Out] {
	s.name, s.flat, s.describe = name, false, nil
	if err := checkName(name); err != nil && s.err == nil {
		s.err = err
	}
	return s
}

// Retry returns a copy of s that runs again, up to n more times, when it
// fails (a *strategy.Failure: a failed agent or swarm, a Go function's error,
// a timeout). Each attempt has keys of its own, the attempt number after a
// "~" ("fetch~2"), so a recovered run knows which attempt it was at. An
// interruption or a wait for a human is not a failure and is not retried,
// nor is a failure that ends the run (strategy.Failure.Ends: a limit, a
// budget, a tripped guardrail).
func (s Step[In, Out]) Retry(n int) Step[In, Out] {
	if n < 0 && s.err == nil {
		s.err = fmt.Errorf("step %s: retries must not be negative, got %d", s.name, n)
	}
	if s.flat && s.err == nil {
		s.err = errors.New("a sequence needs a name (Named) before it can be retried")
	}
	s.retries = n
	return s
}

// Timeout returns a copy of s whose every attempt fails when it has not
// finished d after it started. The deadline is journaled when the attempt
// starts (a recovered run waits only for what is left of it), and so is
// the decision, timed out or not, so that a replay agrees with it. The
// clock runs while the workflow is paused for a human: once a deadline
// has passed, what the attempt does after the answer runs with a context
// that is done, and an attempt that then fails has timed out.
func (s Step[In, Out]) Timeout(d time.Duration) Step[In, Out] {
	if d <= 0 && s.err == nil {
		s.err = fmt.Errorf("step %s: timeout must be positive, got %s", s.name, d)
	}
	if s.flat && s.err == nil {
		s.err = errors.New("a sequence needs a name (Named) before it can have a timeout")
	}
	s.timeout = d
	return s
}

// Limit returns a copy of s, a [ForEach] step, that runs at most n of
// its elements at a time, whatever swarm.Config.MaxParallel is (a
// [Parallel] step and a graph's join take theirs in Join.Limit).
func (s Step[In, Out]) Limit(n int) Step[In, Out] {
	switch {
	case s.limited == nil:
		s.err = errors.Join(s.err, fmt.Errorf("step %s: only a for-each step has a limit (a parallel step or a graph's join takes it in Join.Limit)", s.name))
	case n < 1:
		s.err = errors.Join(s.err, fmt.Errorf("step %s: limit must be at least 1, got %d", s.name, n))
	default:
		l := s.limited(n)
		s.run, s.shape = l.run, l.shape
	}
	return s
}

// Optional returns a copy of s whose failure, as a branch of a
// [Parallel] step joining All, leaves its output out of the join instead
// of failing the step: the failure policy of one branch (Join.Tolerate
// sets it for every branch).
func (s Step[In, Out]) Optional() Step[In, Out] {
	s.optional = true
	return s
}

// keyed returns the names s takes at its parent's level.
func (s Step[In, Out]) keyed() []string {
	if s.describe != nil {
		return s.describe()
	}
	return []string{s.name}
}

// checkName refuses a name that cannot be a key segment or could be taken
// for a round or visit number.
func checkName(name string) error {
	if name == "" {
		return errors.New("a step needs a name")
	}
	if name == "start" || name == "end" {
		return fmt.Errorf("step name %q is the runtime's own key", name)
	}
	if err := model.CheckName(name); err != nil {
		return fmt.Errorf("step %w", err)
	}
	if strings.Trim(name, "0123456789") == "" {
		return fmt.Errorf("step name %q is only digits (keys use numbers for rounds and visits)", name)
	}
	return nil
}

// join appends a segment to a key.
func join(prefix, seg string) string {
	if prefix == "" {
		return seg
	}
	return prefix + "/" + seg
}

// exec runs s below prefix: its key is prefix/name (prefix itself for a
// sequence), with its retries and timeout.
func (s Step[In, Out]) exec(ctx context.Context, x *exec, prefix string, in In) (Out, error) {
	if s.flat {
		return s.run(ctx, x, prefix, in)
	}
	key := join(prefix, s.name)
	for attempt := 1; ; attempt++ {
		k := key
		if attempt > 1 {
			k += "~" + strconv.Itoa(attempt)
		}
		out, err := node(ctx, x, k, s.kind, func(ctx context.Context) (Out, error) {
			if s.timeout > 0 {
				return timed(ctx, x, k, s.timeout, func(ctx context.Context) (Out, error) { return s.run(ctx, x, k, in) })
			}
			return s.run(ctx, x, k, in)
		})
		if err == nil {
			finished(ctx, s.name, out)
			return out, nil
		}
		var f *strategy.Failure
		if attempt > s.retries || !errors.As(err, &f) || f.Ends() || ctx.Err() != nil {
			return out, err
		}
	}
}

// timed runs fn with a journaled deadline dur after key first started,
// and journals whether it timed out under key+"/timeout": a replay that
// finds the decision reads it instead of racing the clock again.
func timed[Out any](ctx context.Context, x *exec, key string, dur time.Duration, fn func(ctx context.Context) (Out, error)) (Out, error) {
	var zero Out
	dkey := key + "/timeout"
	if _, ok, err := x.d.Recorded(dkey); err != nil {
		return zero, err // it timed out
	} else if ok {
		return fn(ctx) // it finished in time: its steps replay
	}
	v, err := x.d.Record(ctx, key+"/deadline", "workflow.deadline", func(context.Context) (json.RawMessage, error) {
		return json.Marshal(time.Now().Add(dur))
	})
	if err != nil {
		return zero, err
	}
	var until time.Time
	if err := json.Unmarshal(v, &until); err != nil {
		return zero, fmt.Errorf("step %s: recorded deadline: %w", key, err)
	}
	tctx, cancel := context.WithDeadline(ctx, until)
	out, err := fn(tctx)
	expired := tctx.Err() != nil && ctx.Err() == nil
	cancel()
	var f *strategy.Failure
	switch {
	case err != nil && expired:
		_, err = x.d.Record(ctx, dkey, "workflow.timeout", func(context.Context) (json.RawMessage, error) {
			return nil, fmt.Errorf("step %s timed out after %s", key, dur)
		})
		return zero, err
	case err == nil || errors.As(err, &f):
		if _, rerr := x.d.Record(ctx, dkey, "workflow.timeout", func(context.Context) (json.RawMessage, error) {
			return json.RawMessage("false"), nil
		}); rerr != nil {
			return zero, rerr
		}
	}
	return out, err
}

// exec is one drive of a workflow.
type exec struct {
	d      *strategy.Driver
	tracer trace.Tracer
	id     string
}

// node runs fn as the node at key, in a span of its own when the
// workflow's span is recorded.
func node[Out any](ctx context.Context, x *exec, key, kind string, fn func(ctx context.Context) (Out, error)) (Out, error) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return fn(ctx)
	}
	ctx, span := x.tracer.Start(ctx, "workflow_node "+key, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("swarm.workflow.node", key),
		attribute.String("swarm.workflow.node.kind", kind),
	))
	out, err := fn(ctx)
	endSpan(span, err)
	return out, err
}

// endSpan ends span with the status err gives it: a failure is an error,
// a wait for a human or an interruption is not.
func endSpan(span trace.Span, err error) {
	var f *strategy.Failure
	switch {
	case errors.As(err, &f):
		span.SetStatus(codes.Error, f.Reason)
	case errors.Is(err, strategy.ErrAwaiting):
		span.SetAttributes(attribute.Bool("swarm.workflow.awaiting", true))
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// strategy runs a workflow's step as the strategy of its swarm.
type wfStrategy[In, Out any] struct {
	id    string
	step  Step[In, Out]
	shape []ShapeNode
}

// tracerName is the instrumentation scope of the workflow spans.
const tracerName = "github.com/swarmrt/swarm/workflow"

// Drive decodes the run's input, runs the step and returns its output.
func (s *wfStrategy[In, Out]) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	// The run's span is in ctx when the runtime traces: its provider is
	// the runtime's (a no-op one otherwise).
	tracer := trace.SpanFromContext(ctx).TracerProvider().Tracer(tracerName)
	ctx, span := tracer.Start(ctx, "invoke_workflow "+s.id, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_workflow"),
		attribute.String("gen_ai.workflow.name", s.id),
		attribute.String("gen_ai.conversation.id", d.RunID()),
	))
	out, err := s.drive(ctx, &exec{d: d, tracer: tracer, id: s.id})
	endSpan(span, err)
	return out, err
}

func (s *wfStrategy[In, Out]) drive(ctx context.Context, x *exec) (json.RawMessage, error) {
	in, err := decode[In](x.d.Input())
	if err != nil {
		return nil, &strategy.Failure{Reason: "workflow " + s.id + ": input: " + err.Error()}
	}
	if err := recordNodes(ctx, x.d, s.shape); err != nil {
		return nil, err
	}
	ctx, _ = inScope(ctx)
	out, err := s.step.exec(ctx, x, "", in)
	if err != nil {
		return nil, err
	}
	return encode(out)
}

// New makes a swarm definition whose runs run step: its strategy is the
// workflow, its handoffs every agent and swarm a node of step names (so
// that the runtime knows them), and it offers no built-in tools. A
// mistake in step's composition (a duplicate name, a bad bound, an edge
// to an unknown node) is returned.
func New[In, Out any](id, description string, step Step[In, Out], opts ...Option) (*swarm.Swarm[In, Out], error) {
	if step.err != nil {
		return nil, fmt.Errorf("%w: workflow %s: %w", swarm.ErrInvalid, id, step.err)
	}
	if step.run == nil {
		return nil, fmt.Errorf("%w: workflow %s: an empty step", swarm.ErrInvalid, id)
	}
	targets, err := dedupe(step.targets)
	if err != nil {
		return nil, fmt.Errorf("%w: workflow %s: %w", swarm.ErrInvalid, id, err)
	}
	st := &wfStrategy[In, Out]{id: id, step: step, shape: step.nodes("", "")}
	def := swarm.Define[In, Out](id, description, func(In) swarm.Spec {
		spec := swarm.Spec{Strategy: strategy.Of(st), Handoffs: slices.Clone(targets), NoBuiltins: true}
		for _, o := range opts {
			o(&spec)
		}
		return spec
	})
	shapes.Store(swarm.Definition(def), Shape{ID: id, Nodes: st.shape})
	return def, nil
}

// Option sets what a workflow's runs share with every swarm run beyond
// the workflow itself: guardrails, hooks, compaction.
type Option func(*swarm.Spec)

// WithGuardrails checks every agent the workflow runs with gs (see
// swarm.Spec.Guardrails).
func WithGuardrails(gs ...guardrail.Guardrail) Option {
	return func(s *swarm.Spec) { s.Guardrails = append(s.Guardrails, gs...) }
}

// WithHooks observes the workflow's run with h (see swarm.Spec.Hooks).
func WithHooks(h swarm.Hooks) Option { return func(s *swarm.Spec) { s.Hooks = h } }

// WithCompaction keeps the history of every agent the workflow runs
// within its model's context window (see swarm.Spec.Compaction).
func WithCompaction(c *compact.Config) Option { return func(s *swarm.Spec) { s.Compaction = c } }

// Define is [New] for workflows defined in Go code, where a mistake is a
// bug: it panics on one.
func Define[In, Out any](id, description string, step Step[In, Out], opts ...Option) *swarm.Swarm[In, Out] {
	def, err := New(id, description, step, opts...)
	if err != nil {
		panic(err)
	}
	return def
}

// dedupe returns hs with each target once, and refuses two different
// targets of one name.
func dedupe(hs []swarm.Handoff) ([]swarm.Handoff, error) {
	seen := map[string]swarm.Handoff{}
	var out []swarm.Handoff
	for _, h := range hs {
		name := h.Target()
		if prev, ok := seen[name]; ok {
			if !reflect.DeepEqual(prev, h) {
				return nil, fmt.Errorf("two different agents or swarms are named %q", name)
			}
			continue
		}
		seen[name] = h
		out = append(out, h)
	}
	return out, nil
}

// decode reads a step's value from JSON: a string from a JSON string or,
// when the JSON is not a string, from its text.
func decode[T any](raw json.RawMessage) (T, error) {
	var v T
	if len(raw) == 0 {
		return v, errors.New("no value")
	}
	if p, ok := any(&v).(*json.RawMessage); ok {
		*p = append(json.RawMessage(nil), raw...)
		return v, nil
	}
	if p, ok := any(&v).(*string); ok {
		if err := json.Unmarshal(raw, p); err != nil {
			*p = string(raw)
		}
		return v, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, err
	}
	return v, nil
}

// encode writes a step's value as JSON.
func encode[T any](v T) (json.RawMessage, error) {
	if raw, ok := any(v).(json.RawMessage); ok {
		if !json.Valid(raw) {
			return nil, errors.New("a value is not valid JSON")
		}
		return raw, nil
	}
	return json.Marshal(v)
}

// text is what an agent or a text swarm is asked: a string as it is, any
// other value as JSON.
func text[T any](v T) (string, error) {
	if s, ok := any(v).(string); ok {
		return s, nil
	}
	raw, err := encode(v)
	return string(raw), err
}

// parse reads an agent's or a swarm's answer as a T: a string as it is,
// any other type from the JSON in the answer (a fenced code block too); a
// json.RawMessage takes an answer that is not JSON as a JSON string.
func parse[T any](answer string) (T, error) {
	var v T
	if p, ok := any(&v).(*string); ok {
		*p = answer
		return v, nil
	}
	s := strings.TrimSpace(answer)
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		if _, body, ok := strings.Cut(rest, "\n"); ok {
			s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body), "```"))
		}
	}
	if _, ok := any(v).(json.RawMessage); ok && !json.Valid([]byte(s)) {
		raw, err := json.Marshal(answer)
		if err != nil {
			return v, err
		}
		return decode[T](raw)
	}
	return decode[T](json.RawMessage(s))
}
