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
	"sync"

	"github.com/tidwall/gjson"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/strategy"
)

// Then is a sequence: a runs, and its output is b's input. A sequence
// adds no key segment of its own (its steps are keyed as if they stood
// where it stands) until it is [Step.Named]; the names of its steps must
// differ.
func Then[A, B, C any](a Step[A, B], b Step[B, C]) Step[A, C] {
	s := Step[A, C]{kind: "sequence", flat: true, err: errors.Join(a.err, b.err),
		targets: slices.Concat(a.targets, b.targets),
		run: func(ctx context.Context, x *exec, key string, in A) (C, error) {
			mid, err := a.exec(ctx, x, key, in)
			if err != nil {
				var zero C
				return zero, err
			}
			return b.exec(ctx, x, key, mid)
		}}
	names := slices.Concat(a.keyed(), b.keyed())
	s.describe = func() []string { return names }
	s.inner = func(key, parent string) []ShapeNode {
		return slices.Concat(a.nodes(key, parent), b.nodes(key, parent))
	}
	if s.err == nil {
		s.err = unique("a sequence", names)
	}
	return s
}

// Seq is a sequence of any length of steps that take and give one type:
// each step's output is the next one's input. It is [Then] written flat,
// with the same keys.
func Seq[T any](steps ...Step[T, T]) Step[T, T] {
	links := make([]Link, len(steps))
	for i, s := range steps {
		links[i] = s
	}
	return Chain[T, T](links...)
}

// Link is a step of any input and output types, for [Chain]: every
// [Step] is one.
type Link interface {
	link() link
}

// link is a step with its types erased.
type link struct {
	in, out reflect.Type
	step    Step[any, any]
}

func (s Step[In, Out]) link() link {
	return link{in: reflect.TypeFor[In](), out: reflect.TypeFor[Out](), step: Step[any, any]{
		name: s.name, kind: s.kind, flat: true, err: s.err, targets: s.targets,
		describe: s.keyed, inner: s.nodes,
		run: func(ctx context.Context, x *exec, prefix string, in any) (any, error) {
			return s.exec(ctx, x, prefix, as[In](in))
		}}}
}

// Chain is a sequence of any length of steps of any types, written flat:
// each step's output is the next one's input, as with nested [Then]s (and
// under the same keys). Go cannot check the types of a list of steps, so
// Chain checks them when it is made: a step whose input type does not
// take the output of the step before it, a first step that does not take
// In or a last one that does not give Out is the chain's error, naming the
// steps, which [New] returns. Where the steps share one type, [Seq] is
// checked by the compiler.
func Chain[In, Out any](steps ...Link) Step[In, Out] {
	s := Step[In, Out]{kind: "sequence", flat: true}
	if len(steps) == 0 {
		s.err = errors.New("workflow.Chain: no steps")
		return s
	}
	links := make([]link, len(steps))
	var names []string
	for i, st := range steps {
		if st == nil {
			s.err = errors.Join(s.err, fmt.Errorf("workflow.Chain: step %d is nil", i+1))
			return s
		}
		links[i] = st.link()
		s.err = errors.Join(s.err, links[i].step.err)
		s.targets = append(s.targets, links[i].step.targets...)
		names = append(names, links[i].step.keyed()...)
	}
	label := func(i int) string {
		if n := links[i].step.name; n != "" {
			return fmt.Sprintf("step %d (%s)", i+1, n)
		}
		return fmt.Sprintf("step %d", i+1)
	}
	if in := reflect.TypeFor[In](); !in.AssignableTo(links[0].in) {
		s.err = errors.Join(s.err, fmt.Errorf("workflow.Chain: %s takes %s, not the chain's input %s", label(0), links[0].in, in))
	}
	for i := 1; i < len(links); i++ {
		if !links[i-1].out.AssignableTo(links[i].in) {
			s.err = errors.Join(s.err, fmt.Errorf("workflow.Chain: %s takes %s, but %s gives %s", label(i), links[i].in, label(i-1), links[i-1].out))
		}
	}
	if last := links[len(links)-1]; !last.out.AssignableTo(reflect.TypeFor[Out]()) {
		s.err = errors.Join(s.err, fmt.Errorf("workflow.Chain: %s gives %s, not the chain's output %s", label(len(links)-1), last.out, reflect.TypeFor[Out]()))
	}
	if s.err == nil {
		s.err = unique("a sequence", names)
	}
	s.describe = func() []string { return names }
	s.inner = func(key, parent string) []ShapeNode {
		var out []ShapeNode
		for _, l := range links {
			out = append(out, l.step.nodes(key, parent)...)
		}
		return out
	}
	s.run = func(ctx context.Context, x *exec, key string, in In) (Out, error) {
		var v any = in
		for _, l := range links {
			var err error
			if v, err = l.step.exec(ctx, x, key, v); err != nil {
				var zero Out
				return zero, err
			}
		}
		return as[Out](v), nil
	}
	return s
}

// as is v, whose type Chain checked is assignable to T, as a T.
func as[T any](v any) T {
	if t, ok := v.(T); ok || v == nil {
		return t
	}
	return reflect.ValueOf(v).Convert(reflect.TypeFor[T]()).Interface().(T)
}

// unique refuses a name used twice among names.
func unique(what string, names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return fmt.Errorf("%s has two steps named %q (see Named)", what, n)
		}
		seen[n] = true
	}
	return nil
}

// JoinMode is how a [Parallel] step joins its branches.
type JoinMode int

const (
	// All waits for every branch.
	All JoinMode = iota
	// First takes the first branch to succeed and stops the others.
	First
	// Quorum takes the first Join.N branches to succeed and stops the
	// others.
	Quorum
)

// Join says how a [Parallel] step joins its branches and what a branch's
// failure does.
type Join struct {
	Mode JoinMode
	// N is the quorum (Mode Quorum): how many branches must succeed.
	N int
	// Limit is how many branches run at once, whatever
	// swarm.Config.MaxParallel is (0: MaxParallel).
	Limit int
	// Tolerate, with Mode All, leaves a failed branch's output out of the
	// join instead of failing the step (which then fails only when every
	// branch failed), as [Step.Optional] does for one branch. First and
	// Quorum always tolerate failures while enough branches may still
	// succeed.
	Tolerate bool
}

// Parallel runs its branches at once on the same input, each under its
// own key (parallel's key, then the branch's name), at most Join.Limit
// (else swarm.Config.MaxParallel) at a time, and joins them as join says. The
// output holds the outputs of the branches the join took, in the order
// of the branches. Which branches a First or Quorum join took (or that it
// failed) is journaled as a decision when it is made, and the branches it
// did not take are stopped: a recovered run replays the winners and does
// not start the others again. A branch that waits for a human does not
// stop the others; the workflow pauses once they are done.
func Parallel[In, Out any](name string, join Join, branches ...Step[In, Out]) Step[In, []Out] {
	s := Step[In, []Out]{name: name, kind: "parallel", err: checkName(name)}
	var names, bnames []string
	for _, b := range branches {
		s.err = errors.Join(s.err, b.err)
		s.targets = append(s.targets, b.targets...)
		names = append(names, b.keyed()...)
		bnames = append(bnames, b.Name())
	}
	if s.err == nil {
		s.err = unique("parallel "+name, names)
	}
	s.inner = func(key, parent string) []ShapeNode { return branchShapes(branches, key, parent) }
	s.shape = func(n *ShapeNode) { n.Join, n.Limit = join.String(), join.Limit }
	need := len(branches)
	switch join.Mode {
	case All:
	case First:
		need = 1
	case Quorum:
		need = join.N
	default:
		s.err = errors.Join(s.err, fmt.Errorf("parallel %s: unknown join mode %d", name, join.Mode))
	}
	if len(branches) == 0 || need < 1 || need > len(branches) {
		s.err = errors.Join(s.err, fmt.Errorf("parallel %s: wants %d of %d branches", name, need, len(branches)))
	}
	if join.Limit < 0 {
		s.err = errors.Join(s.err, fmt.Errorf("parallel %s: limit must not be negative, got %d", name, join.Limit))
	}
	s.run = func(ctx context.Context, x *exec, key string, in In) ([]Out, error) {
		b := branchSet[Out]{names: bnames, limit: join.Limit,
			optional: func(i int) bool { return branches[i].optional },
			run:      func(ctx context.Context, i int) (Out, error) { return branches[i].exec(ctx, x, key, in) }}
		if join.Mode == All {
			outs, _, err := all(ctx, x, key, b, join.Tolerate)
			return outs, err
		}
		outs, _, err := race(ctx, x, key, key+"/join", b, need)
		return outs, err
	}
	return s
}

// ForEach runs step on every element of its input, each under its own key
// (the element's index, from 0, under for-each's key), at most
// swarm.Config.MaxParallel at a time unless [Step.Limit] sets a limit of
// its own, and returns the outputs in order. Any failure fails the step,
// once every element is done.
func ForEach[In, Out any](name string, step Step[In, Out]) Step[[]In, []Out] {
	return forEach(name, step, 0)
}

// forEach is ForEach with a limit.
func forEach[In, Out any](name string, step Step[In, Out], limit int) Step[[]In, []Out] {
	err := errors.Join(checkName(name), step.err)
	return Step[[]In, []Out]{name: name, kind: "foreach", err: err, targets: step.targets, inner: step.nodes,
		limited: func(n int) Step[[]In, []Out] { return forEach(name, step, n) },
		shape:   func(n *ShapeNode) { n.Join, n.Limit = "all", limit },
		run: func(ctx context.Context, x *exec, key string, in []In) ([]Out, error) {
			out := make([]Out, len(in))
			errs := x.d.ParallelLimit(ctx, len(in), limit, func(ctx context.Context, i int) error {
				var err error
				ctx, _ = inScope(ctx)
				out[i], err = step.exec(ctx, x, key+"/"+strconv.Itoa(i), in[i])
				return err
			})
			if err := joined(ctx, key, errs, nil); err != nil {
				return nil, err
			}
			return out, nil
		}}
}

// branchSet is the branches a join waits for: their names (for reasons),
// which may fail without failing the join, how each runs, and how many run
// at once (0: swarm.Config.MaxParallel).
type branchSet[Out any] struct {
	names    []string
	optional func(i int) bool
	run      func(ctx context.Context, i int) (Out, error)
	limit    int
}

// name is branch i's name for a reason: its name, or its index.
func (b branchSet[Out]) name(i int) string {
	if i < len(b.names) && b.names[i] != "" {
		return b.names[i]
	}
	return strconv.Itoa(i)
}

// all runs every branch and waits for them; it returns the outputs of the
// branches it took and their indexes.
func all[Out any](ctx context.Context, x *exec, key string, b branchSet[Out], tolerate bool) ([]Out, []int, error) {
	n := len(b.names)
	outs := make([]Out, n)
	scopes := make([]*scope, n)
	errs := x.d.ParallelLimit(ctx, n, b.limit, func(ctx context.Context, i int) error {
		var err error
		ctx, scopes[i] = inScope(ctx)
		outs[i], err = b.run(ctx, i)
		return err
	})
	var failed []int
	for i, err := range errs {
		var f *strategy.Failure
		if (tolerate || b.optional != nil && b.optional(i)) && errors.As(err, &f) && !f.Ends() {
			failed = append(failed, i)
		}
	}
	if len(failed) < n {
		for _, i := range failed {
			errs[i] = nil
		}
	} else {
		failed = nil
	}
	if err := joined(ctx, key, errs, b.name); err != nil {
		return nil, nil, err
	}
	var out []Out
	var took []int
	for i, o := range outs {
		if !slices.Contains(failed, i) {
			out = append(out, o)
			took = append(took, i)
			scopeOf(ctx).merge(scopes[i])
		}
	}
	return out, took, nil
}

// joined is what the errors of parallel branches make of the step: an
// interruption first, then a wait for a human, then the failures. name
// names a branch in a reason (nil: its index).
func joined(ctx context.Context, key string, errs []error, name func(i int) string) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var awaiting error
	var reasons []string
	for i, err := range errs {
		var f *strategy.Failure
		switch {
		case err == nil:
		case errors.As(err, &f) && f.Ends():
			return err
		case errors.As(err, &f):
			n := strconv.Itoa(i)
			if name != nil {
				n = name(i)
			}
			reasons = append(reasons, n+": "+f.Reason)
		case errors.Is(err, strategy.ErrAwaiting):
			awaiting = err
		default:
			return err
		}
	}
	if awaiting != nil {
		return awaiting
	}
	if len(reasons) > 0 {
		return &strategy.Failure{Reason: fmt.Sprintf("step %s: %d of %d branches failed: %s", key, len(reasons), len(errs), strings.Join(reasons, "; "))}
	}
	return nil
}

// race runs the branches until need of them succeed, journals which did
// (or that too many failed) under jkey, and stops the others. It returns
// the winners' outputs and indexes, in branch order.
func race[Out any](ctx context.Context, x *exec, key, jkey string, b branchSet[Out], need int) ([]Out, []int, error) {
	n := len(b.names)
	raw, ok, err := x.d.Recorded(jkey)
	if err != nil {
		return nil, nil, err // the join failed
	}
	if ok {
		// Replay the winners only.
		var won []int
		if err := json.Unmarshal(raw, &won); err != nil {
			return nil, nil, fmt.Errorf("step %s: recorded join: %w", key, err)
		}
		slices.Sort(won)
		outs := make([]Out, len(won))
		scopes := make([]*scope, len(won))
		errs := x.d.ParallelLimit(ctx, len(won), b.limit, func(ctx context.Context, i int) error {
			if won[i] < 0 || won[i] >= n {
				return fmt.Errorf("%w: step %s: recorded branch %d of %d", swarm.ErrInvalid, key, won[i], n)
			}
			var err error
			ctx, scopes[i] = inScope(ctx)
			outs[i], err = b.run(ctx, won[i])
			return err
		})
		if err := joined(ctx, key, errs, nil); err != nil {
			return nil, nil, err
		}
		for _, sc := range scopes {
			scopeOf(ctx).merge(sc)
		}
		return outs, won, nil
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu      sync.Mutex
		won     []int
		failed  []string
		decided bool
		decErr  error
	)
	outs := make([]Out, n)
	scopes := make([]*scope, n)
	decide := func(v any, fail string) {
		decided = true
		stop()
		_, decErr = x.d.Record(ctx, jkey, "workflow.join", func(context.Context) (json.RawMessage, error) {
			if fail != "" {
				return nil, errors.New(fail)
			}
			return json.Marshal(v)
		})
	}
	errs := x.d.ParallelLimit(rctx, n, b.limit, func(ctx context.Context, i int) error {
		ctx, sc := inScope(ctx)
		out, err := b.run(ctx, i)
		mu.Lock()
		defer mu.Unlock()
		if decided {
			return nil
		}
		var f *strategy.Failure
		switch {
		case errors.As(err, &f) && f.Ends():
			return err // the run ends: no decision to journal
		case err == nil:
			outs[i], scopes[i] = out, sc
			won = append(won, i)
			if len(won) == need {
				slices.Sort(won) // outputs go in branch order, on every drive
				decide(won, "")
			}
		case errors.As(err, &f):
			failed = append(failed, b.name(i)+": "+f.Reason)
			if n-len(failed) < need {
				decide(nil, fmt.Sprintf("step %s: %d of %d branches failed, %d needed: %s", key, len(failed), n, need, strings.Join(failed, "; ")))
			}
		default:
			return err
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if decided {
		if decErr != nil {
			return nil, nil, decErr
		}
		out := make([]Out, 0, need)
		for _, i := range won {
			out = append(out, outs[i])
			scopeOf(ctx).merge(scopes[i])
		}
		return out, won, nil
	}
	if err := joined(ctx, key, errs, nil); err != nil {
		return nil, nil, err
	}
	return nil, nil, fmt.Errorf("step %s: the join ended undecided", key)
}

// Until says when a [Loop] is done: a Go predicate or an evaluator agent.
type Until[T any] struct {
	fn    func(T) bool
	agent *swarm.Agent
}

// UntilFunc ends a loop when done returns true for a round's output.
func UntilFunc[T any](done func(T) bool) Until[T] { return Until[T]{fn: done} }

// UntilAgent ends a loop when evaluator, given a round's output (text, or
// JSON), answers with DONE as its first word (in any case); any other
// answer goes on, and is the feedback of the next round: every agent and
// swarm node of that round gets it after its input ("Feedback on the
// previous round: ..."), and a Go function reads it with [Feedback]. Each
// verdict is journaled under the round's key +"/until", so a replay gives
// the next round the same feedback.
func UntilAgent[T any](evaluator *swarm.Agent) Until[T] { return Until[T]{agent: evaluator} }

// feedbackKey is the context key of a loop round's feedback.
type feedbackKey struct{}

// Feedback returns the feedback a [Loop]'s evaluator ([UntilAgent]) gave
// on the previous round, inside the round after it (the innermost loop's,
// when loops nest): why the output was not done yet. It is false in a
// loop's first round (unless an outer loop's round has feedback) and
// outside loops.
func Feedback(ctx context.Context) (string, bool) {
	f, ok := ctx.Value(feedbackKey{}).(string)
	return f, ok
}

// withFeedback is request with the feedback of the loop round ctx is in,
// if any, after it.
func withFeedback(ctx context.Context, request string) string {
	if f, ok := Feedback(ctx); ok {
		return request + "\n\nFeedback on the previous round: " + f
	}
	return request
}

// Loop runs body on its own output, round after round (each round's keys
// under the loop's key and the round's number, from 1), until until says
// the output is done, at most rounds rounds: after that the loop fails
// with a reason that names it and its bound.
func Loop[T any](name string, rounds int, until Until[T], body Step[T, T]) Step[T, T] {
	err := errors.Join(checkName(name), body.err)
	if rounds < 1 {
		err = errors.Join(err, fmt.Errorf("loop %s: rounds must be at least 1, got %d", name, rounds))
	}
	if until.fn == nil && until.agent == nil {
		err = errors.Join(err, fmt.Errorf("loop %s: no until (UntilFunc or UntilAgent)", name))
	}
	targets := body.targets
	if until.agent != nil {
		targets = append(slices.Clone(targets), swarm.ToAgent(until.agent))
	}
	return Step[T, T]{name: name, kind: "loop", err: err, targets: targets, inner: body.nodes,
		shape: func(n *ShapeNode) {
			n.Bound = rounds
			if until.agent != nil {
				n.Agent = until.agent.Name
			}
		},
		run: func(ctx context.Context, x *exec, key string, v T) (T, error) {
			rctx := ctx
			for i := 1; i <= rounds; i++ {
				rkey := key + "/" + strconv.Itoa(i)
				out, err := body.exec(rctx, x, rkey, v)
				if err != nil {
					return v, err
				}
				v = out
				done, feedback, err := until.done(ctx, x, rkey+"/until", v)
				if err != nil || done {
					return v, err
				}
				if until.agent != nil {
					rctx = context.WithValue(ctx, feedbackKey{}, feedback)
				}
			}
			return v, &strategy.Failure{Reason: fmt.Sprintf("loop %s: not done after %d rounds (its bound)", key, rounds)}
		}}
}

// done asks u whether v is done; an evaluator's answer is the feedback
// when it is not.
func (u Until[T]) done(ctx context.Context, x *exec, key string, v T) (bool, string, error) {
	if u.fn != nil {
		return u.fn(v), "", nil
	}
	req, err := text(v)
	if err != nil {
		return false, "", &strategy.Failure{Reason: "step " + key + ": " + err.Error()}
	}
	verdict, err := x.d.Delegate(ctx, key, u.agent.Name, req)
	if err != nil {
		return false, "", err
	}
	verdict = strings.TrimSpace(verdict)
	first, _, _ := strings.Cut(verdict, " ")
	return strings.EqualFold(strings.Trim(first, ".!:,"), "done"), verdict, nil
}

// Picker picks a [Route]'s next step: a Go function or a router agent.
type Picker[In any] struct {
	fn    func(In) string
	agent *swarm.Agent
	tries int
}

// PickFunc picks the route named by pick(in).
func PickFunc[In any](pick func(in In) string) Picker[In] { return Picker[In]{fn: pick} }

// PickAgent asks router which route to take, giving it the input and the
// routes' names: its answer (trimmed) must be one of them. A wrong answer
// is journaled like any other, and the router asked again with the reason,
// at most tries times in all (1 when tries is 0) before the route fails.
func PickAgent[In any](router *swarm.Agent, tries int) Picker[In] {
	return Picker[In]{agent: router, tries: max(tries, 1)}
}

// Route runs the one of routes that pick picks for its input (by the
// route's name), under the route's key. A pick that names no route fails
// the step.
func Route[In, Out any](name string, pick Picker[In], routes ...Step[In, Out]) Step[In, Out] {
	s := Step[In, Out]{name: name, kind: "route", err: checkName(name)}
	byName := map[string]Step[In, Out]{}
	var names []string
	for _, r := range routes {
		s.err = errors.Join(s.err, r.err)
		if r.flat && len(r.keyed()) != 1 {
			s.err = errors.Join(s.err, fmt.Errorf("route %s: a sequence needs a name (Named) to be a route", name))
		}
		s.targets = append(s.targets, r.targets...)
		byName[r.name] = r
		names = append(names, r.name)
	}
	if s.err == nil {
		s.err = unique("route "+name, names)
	}
	s.inner = func(key, parent string) []ShapeNode { return branchShapes(routes, key, parent) }
	if pick.agent != nil {
		s.shape = func(n *ShapeNode) { n.Agent = pick.agent.Name }
	}
	if len(routes) == 0 {
		s.err = errors.Join(s.err, fmt.Errorf("route %s: no routes", name))
	}
	if pick.fn == nil && pick.agent == nil {
		s.err = errors.Join(s.err, fmt.Errorf("route %s: no picker (PickFunc or PickAgent)", name))
	}
	if pick.agent != nil {
		s.targets = append(s.targets, swarm.ToAgent(pick.agent))
	}
	s.run = func(ctx context.Context, x *exec, key string, in In) (Out, error) {
		var zero Out
		choice, err := pick.pick(ctx, x, key, in, names)
		if err != nil {
			return zero, err
		}
		r, ok := byName[choice]
		if !ok {
			return zero, &strategy.Failure{Reason: fmt.Sprintf("route %s: no route %q (routes: %s)", key, choice, strings.Join(names, ", "))}
		}
		return r.exec(ctx, x, key, in)
	}
	return s
}

// pick returns the name of the route p picks.
func (p Picker[In]) pick(ctx context.Context, x *exec, key string, in In, names []string) (string, error) {
	if p.fn != nil {
		return p.fn(in), nil
	}
	req, err := text(in)
	if err != nil {
		return "", &strategy.Failure{Reason: "step " + key + ": " + err.Error()}
	}
	ask := req + "\n\nAnswer with exactly one of: " + strings.Join(names, ", ") + "."
	var answer string
	for i := 1; i <= p.tries; i++ {
		answer, err = x.d.Delegate(ctx, key+"/router/"+strconv.Itoa(i), p.agent.Name, ask)
		if err != nil {
			return "", err
		}
		answer = strings.Trim(strings.TrimSpace(answer), "\"'`.")
		if slices.Contains(names, answer) {
			return answer, nil
		}
		ask = fmt.Sprintf("%s\n\nAnswer with exactly one of: %s. Your answer %q is not one of them.", req, strings.Join(names, ", "), answer)
	}
	return "", &strategy.Failure{Reason: fmt.Sprintf("route %s: the router %s named no route in %d tries (last answer %q)", key, p.agent.Name, p.tries, answer)}
}

// Within runs step on a part of a larger value S, the state a workflow
// carries from step to step: get picks step's input out of the state and
// set puts its output back. Within adds no key segment and journals
// nothing of its own (get and set are plain Go, run again on every
// replay: they must be pure); the step keeps its name.
func Within[S, In, Out any](step Step[In, Out], get func(S) In, set func(S, Out) S) Step[S, S] {
	err := step.err
	if (get == nil || set == nil) && err == nil {
		err = fmt.Errorf("workflow.Within %s: get and set must not be nil", step.name)
	}
	names := step.keyed()
	return Step[S, S]{name: step.name, kind: step.kind, flat: true, err: err, targets: step.targets,
		describe: func() []string { return names }, inner: step.nodes,
		run: func(ctx context.Context, x *exec, prefix string, s S) (S, error) {
			out, err := step.exec(ctx, x, prefix, get(s))
			if err != nil {
				return s, err
			}
			return set(s, out), nil
		}}
}

// ForEachField is [ForEach] over the list at path (a GJSON path:
// "items", "order.lines"; "" for the whole input) of a JSON input: step
// runs on each element, and the output is the list of their outputs. An
// input without a list there fails the step, naming the path.
func ForEachField(name, path string, step Step[json.RawMessage, json.RawMessage]) Step[json.RawMessage, json.RawMessage] {
	return forEachField(name, path, forEach(name, step, 0))
}

// forEachField is fe, a for-each, reading its list at path.
func forEachField(name, path string, fe Step[[]json.RawMessage, []json.RawMessage]) Step[json.RawMessage, json.RawMessage] {
	return Step[json.RawMessage, json.RawMessage]{name: fe.name, kind: fe.kind, err: fe.err, targets: fe.targets, inner: fe.inner, shape: fe.shape,
		limited: func(n int) Step[json.RawMessage, json.RawMessage] {
			return forEachField(name, path, fe.Limit(n))
		},
		run: func(ctx context.Context, x *exec, key string, in json.RawMessage) (json.RawMessage, error) {
			r := gjson.ParseBytes(in)
			if path != "" {
				r = r.Get(path)
			}
			if !r.IsArray() {
				return nil, &strategy.Failure{Reason: fmt.Sprintf("for-each %s: the input has no list at %q", key, path)}
			}
			var items []json.RawMessage
			for _, e := range r.Array() {
				items = append(items, json.RawMessage(e.Raw))
			}
			outs, err := fe.run(ctx, x, key, items)
			if err != nil {
				return nil, err
			}
			if outs == nil {
				outs = []json.RawMessage{}
			}
			return encode(outs)
		}}
}
