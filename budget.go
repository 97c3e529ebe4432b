package swarm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Budget bounds a whole run tree: the run, its agents and every child swarm
// below it, however many run in parallel and on whichever node. Tokens,
// Cost and WallTime are unlimited when zero. ModelCalls and ToolCalls are
// never unlimited by default: zero means the runtime's limit
// (Config.MaxModelCalls, Config.MaxToolCalls: by default
// DefaultMaxModelCalls and DefaultMaxToolCalls), and only a negative value
// lifts the limit. So every run tree is bounded even when nobody set a
// budget: a cycle of handoffs (an agent handing off to itself, or two to
// each other) ends at the limit with a reason, not after MaxTurns to the
// power of MaxDepth calls. Reaching a limit fails the run tree with a reason
// that names the limit and its number, or pauses it when Pause is set;
// resuming a run paused by its budget lifts the budget for the rest of the
// run tree: one resume lets every run of the tree continue, including
// children that paused on the budget too.
//
// The tree has one pool, kept in the store on the root run's row (see
// store.Store.Spend), so it holds across processes, nodes and recoveries:
//
//   - ModelCalls is never exceeded. Every request sent to a model, a retry
//     of a failed one included, takes one call from the pool before it
//     starts and never gives it back. A call interrupted by a crash before
//     its response was journaled counts, and its retry after recovery
//     takes another; a journaled response replayed by recovery does not.
//   - ToolCalls is never exceeded either: every execution of a tool takes
//     one call from the pool before it runs, in the same way. Handoffs,
//     and the built-in complete, fail and pause, are not tool calls.
//   - A run reserves the calls it takes in blocks, so that it does not ask
//     the store before every call: a 64th of the limit, at most 32, model
//     and tool calls in one round trip. When it stops being driven (it
//     pauses or is handed over, or ends below the root) and before it
//     waits on a child run, it gives back the calls it reserved and did not
//     make; only a crash loses them (at most 32 a crash). Other runs of the
//     tree cannot use a block while its run holds it, so a tree of runs
//     working in parallel may stop a few calls before its limit; a single
//     run makes exactly the limit. When the budget also bounds Tokens or
//     Cost, each model call is reserved on its own, against the pool as
//     it is.
//   - Tokens and Cost are known only when a call returns, and are added to
//     the pool before its response is journaled. A call starts only while
//     the pool is below both limits, so the tree passes them by at most
//     the usage of the calls in flight (reserved, not yet returned) at the
//     moment the pool crossed the limit.
//   - WallTime is a deadline on the whole tree, measured from the root
//     run's start: when it passes, the model calls, tools and child runs in
//     flight are cancelled and each run of the tree fails (or pauses) with
//     a reason naming the wall time. A run that is not being driven then
//     (paused, or waiting to be adopted) notices when it is driven next.
//
// # Long-lived trees
//
// A conversation or a team is one run tree for its whole life, so limits
// over that life would end healthy work once it had talked long enough.
// With PerWork, ModelCalls and ToolCalls count instead the calls the tree
// makes for one piece of work from outside it: from its start, and again
// from each user message it takes up (a message a run awaited with
// AwaitingMessage: Runtime.Say, a conversation's or a team lead's next
// message), each model step that takes up a user's mail or a task a
// user added (strategy.Step.Outside: a team member's) and each resume of
// a pause on a call cap. Reaching one pauses the tree (whatever Pause
// says) with a reason that starts "call cap reached: " and names the
// limit; its mail stays in the mailboxes, unread, and its tasks stay as
// they are. A resume of that pause (Runtime.Resume, POST
// /v1/runs/{id}/resume, swarm resume) gives the tree a new piece of work,
// as many calls again, and resumes the other runs of the tree (the root
// and the runs right below it, a team's members) that paused on the cap
// too. It does not lift the budget: a runaway is stopped again at the
// next cap.
//
// So a long-lived tree makes at most ModelCalls model calls (and
// ToolCalls tool calls) between two pieces of outside work: a runaway
// (an agent handing off to itself, members mailing each other in a loop)
// that no user feeds is stopped at the limit, wherever it is in the tree,
// however many runs it spans; the tree as a whole makes at most the limit
// times the pieces of outside work it took up, plus one. Mail and tasks
// from the tree's own runs never start a piece of work. A piece of work
// starts from the calls the tree has reserved: calls that runs hold in
// blocks at that moment (at most 32 each) may be made on top of the limit.
//
// A new tree whose root's strategy is long-lived (strategy.LongLived: a
// conversation, a team) gets PerWork unless its budget (WithBudget) sets
// ModelCalls or ToolCalls: those are then limits over the tree's whole
// life, as for other trees. Tokens, Cost and WallTime always bound the
// whole life of the tree. The resume of a pause on one of them lifts the
// tree's budget, as in other trees: every limit, PerWork's included. Loops and workflows, whose trees take up
// no outside work after their start, keep limits over their whole life.
//
// The limits a run tree starts with are journaled with its root run, so
// that a recovery, or a child run driven by another process, applies the
// same ones whatever that process's Config says; a run journaled before
// runs had call limits gets the limits of the runtime that recovers it.
// Runs whose budget limits nothing (every limit lifted) make no extra
// store round trips.
type Budget struct {
	// Tokens bounds input plus output tokens.
	Tokens int64 `json:"tokens,omitempty"`
	// Cost bounds the cost in US dollars (from the model price table).
	Cost float64 `json:"cost,omitempty"`
	// ModelCalls bounds the number of requests sent to models (0: the
	// runtime's Config.MaxModelCalls; negative: no limit).
	ModelCalls int64 `json:"model_calls,omitempty"`
	// ToolCalls bounds the number of tool executions (0: the runtime's
	// Config.MaxToolCalls; negative: no limit).
	ToolCalls int64 `json:"tool_calls,omitempty"`
	// WallTime bounds the time from the root run's start.
	WallTime time.Duration `json:"wall_time,omitempty"`
	// Pause pauses the run instead of failing it.
	Pause bool `json:"pause,omitempty"`
	// PerWork makes ModelCalls and ToolCalls count the calls of one piece
	// of work from outside the tree, and reaching any limit pause the
	// tree (see "Long-lived trees" above). The runtime sets it for the
	// trees of long-lived strategies.
	PerWork bool `json:"per_work,omitempty"`
}

// WithBudget bounds the run and everything below it. Without it a run tree
// is bounded by the runtime's limits on model calls and tool calls only
// (Config.MaxModelCalls, Config.MaxToolCalls).
func WithBudget(b Budget) StartOption { return func(c *startConfig) { c.budget = &b } }

// The runtime's limits on a run tree's calls when neither its budget nor
// the Config sets them. A run tree is one request's worth of work: a
// handful of agents and child swarms, each some turns of at most
// MaxTurns (10 by default), usually tens of model calls in all. A thousand
// leaves room for wide and deep trees (8 levels of handoffs, each of a few
// turns) while bounding a runaway one, such as a cycle of handoffs, to
// a bill of a few dollars with a common model instead of one that grows
// until someone notices. A model response may ask for several tool calls
// at once, so tools get five times as many.
const (
	DefaultMaxModelCalls = 1000
	DefaultMaxToolCalls  = 5000
)

// treeBudget is the budget a new run tree is journaled with: b with the
// runtime's limits on model and tool calls where b sets none. It is never
// nil, even when every limit is lifted, so that a run journaled without a
// budget is known to predate the call limits (see load). A tree whose
// root is long-lived gets the runtime's limits per piece of outside work
// (PerWork), unless b sets a call limit.
func (rt *Runtime) treeBudget(b *Budget, longLived bool) *Budget {
	var t Budget
	if b != nil {
		t = *b
	}
	if longLived && t.ModelCalls == 0 && t.ToolCalls == 0 {
		t.PerWork = true
	}
	if t.ModelCalls == 0 {
		t.ModelCalls = rt.cfg.MaxModelCalls
	}
	if t.ToolCalls == 0 {
		t.ToolCalls = rt.cfg.MaxToolCalls
	}
	return &t
}

// budgetKind marks a paused event caused by the budget (Event.Kind), in the
// run that reached a limit and in the ancestors the pause surfaces in.
const budgetKind = "budget"

// callKind is what a run takes from its tree's pool one at a time.
type callKind int

const (
	modelCall callKind = iota
	toolCall
)

// limit is b's limit on calls of kind k (not positive: none), and in
// the pool p how many are taken.
func (b *Budget) limit(k callKind, p store.Pool) (limit, taken int64) {
	if k == toolCall {
		return b.ToolCalls, p.Tools
	}
	return b.ModelCalls, p.Calls
}

// capReached starts the reason of a pause on a call limit of a PerWork
// tree (see Budget).
const capReached = "call cap reached: "

// reached explains that the tree has made all the calls of kind k its
// budget allows, naming the limit and where it is set.
func (b *Budget) reached(k callKind) string {
	n, _ := b.limit(k, store.Pool{})
	if b.PerWork {
		if k == toolCall {
			return fmt.Sprintf("tool calls %d of %d for one piece of outside work (the run tree's tool call limit per user message, mail or task: Budget.ToolCalls, by default Config.MaxToolCalls); resume the run to give it as many again", n, n)
		}
		return fmt.Sprintf("model calls %d of %d for one piece of outside work (the run tree's model call limit per user message, mail or task: Budget.ModelCalls, by default Config.MaxModelCalls); resume the run to give it as many again", n, n)
	}
	if k == toolCall {
		return fmt.Sprintf("tool calls %d of %d (the run tree's tool call limit: Budget.ToolCalls, by default Config.MaxToolCalls; raise it, or set it to -1 for none)", n, n)
	}
	return fmt.Sprintf("model calls %d of %d (the run tree's model call limit: Budget.ModelCalls, by default Config.MaxModelCalls; raise it, or set it to -1 for none)", n, n)
}

// callCap is the reason a run stops at the call limit of kind k.
func (b *Budget) callCap(k callKind) string {
	if b.PerWork {
		return capReached + b.reached(k)
	}
	return "budget exceeded: " + b.reached(k)
}

// pauses reports whether reaching a limit pauses the tree rather than
// failing it.
func (b *Budget) pauses() bool { return b.Pause || b.PerWork }

// isCapPause reports whether a paused event waits on a PerWork tree's
// call cap, which a resume raises rather than lifts.
func isCapPause(ev Event) bool { return strings.HasPrefix(ev.Reason, capReached) }

// exceeded reports which limit keeps a new model call from starting when the
// tree's pool is p at time now, or "".
func (b *Budget) exceeded(p store.Pool, deadline, now time.Time) string {
	if b == nil || p.Lifted {
		return ""
	}
	var over []string
	if b.Tokens > 0 && p.Tokens >= b.Tokens {
		over = append(over, fmt.Sprintf("tokens %d of %d", p.Tokens, b.Tokens))
	}
	if b.Cost > 0 && p.Cost >= b.Cost {
		over = append(over, fmt.Sprintf("cost $%.4f of $%.4f", p.Cost, b.Cost))
	}
	for _, k := range []callKind{modelCall, toolCall} {
		if n, taken := b.limit(k, p); n > 0 && taken >= n {
			// Refused reservations count too; the calls made are the limit.
			over = append(over, b.reached(k))
		}
	}
	if !deadline.IsZero() && !now.Before(deadline) {
		over = append(over, fmt.Sprintf("wall time %s", b.WallTime))
	}
	if len(over) == 0 {
		return ""
	}
	calls := func(s string) bool { return strings.HasPrefix(s, "model calls") || strings.HasPrefix(s, "tool calls") }
	if b.PerWork && !slices.ContainsFunc(over, func(s string) bool { return !calls(s) }) {
		return capReached + strings.Join(over, ", ") // a resume raises these
	}
	return "budget exceeded: " + strings.Join(over, ", ")
}

// budgetError fails a run whose budget is exhausted.
type budgetError struct{ reason string }

func (e *budgetError) Error() string { return e.reason }

// errBudgetPaused: the budget is exhausted and the run paused for a human.
var errBudgetPaused = errors.New("paused: budget exceeded")

// errWallTime cancels a run whose tree's wall-time budget has passed.
var errWallTime = errors.New("budget exceeded: wall time")

// spend applies d to the tree's pool and notes what it returns.
func (r *runner) spend(ctx context.Context, d store.Pool) (store.Pool, error) {
	p, err := r.rt.store.Spend(ctx, r.root, d)
	if err != nil {
		return p, &seam.Interrupted{Err: fmt.Errorf("budget of run tree %s: %w", r.root, err)}
	}
	r.mu.Lock()
	r.pool = p
	r.mu.Unlock()
	if p.Lifted {
		r.lifted.Store(true)
	}
	return p, nil
}

// liftedNow reports whether the tree's budget has been lifted, asking the
// store unless this run already knows.
func (r *runner) liftedNow(ctx context.Context) (bool, error) {
	if r.lifted.Load() {
		return true, nil
	}
	p, err := r.spend(ctx, store.Pool{})
	return p.Lifted, err
}

// checkBudget runs before each request to a model: it reserves the call
// from the tree's pool, or pauses or fails the run if a limit is reached.
func (r *runner) checkBudget(ctx context.Context, ap *agentPlan, tkey string, turn int) error {
	if r.budget == nil || r.lifted.Load() {
		return nil
	}
	reason, err := r.overBudget(ctx)
	if err != nil || reason == "" {
		return err
	}
	if !r.budget.pauses() {
		return &budgetError{reason: reason}
	}
	if err := r.pauseOnBudget(ctx, ap, tkey+"/budget", turn, reason); err != nil {
		return err
	}
	return errBudgetPaused
}

// pauseOnBudget journals that agent ap's step key waits for a human to
// lift the budget, and pauses the run.
func (r *runner) pauseOnBudget(ctx context.Context, ap *agentPlan, key string, turn int, reason string) error {
	// A PerWork tree may reach its cap at the same step again, once the
	// piece of work a resume gave it is spent: each pause has a key of
	// its own.
	for n, base := 2, key; ; n++ {
		if _, ok := r.recorded[key]; !ok {
			break
		}
		key = base + strconv.Itoa(n)
	}
	ev := Event{Type: EventPaused, Key: key, Agent: ap.name, Turn: turn, Kind: budgetKind, Reason: reason,
		Context: "Resume to let the run continue beyond its budget."}
	if strings.HasPrefix(reason, capReached) {
		ev.Context = "Resume to give the run tree as many calls again; its mail waits unread until then."
	}
	u := store.Update{State: store.Paused, Reason: reason}
	if ap.root {
		u.Turn = turn
	}
	return r.append(ctx, []Event{ev}, u, ap)
}

// overBudget reserves a model call from the tree's pool and returns why it
// may not start, or "".
func (r *runner) overBudget(ctx context.Context) (string, error) {
	b, now := r.budget, time.Now()
	if b.Tokens > 0 || b.Cost > 0 {
		// Usage is checked against the pool as it is now: each call
		// reserves itself, and reads the pool doing so.
		p, err := r.spend(ctx, store.Pool{Calls: 1})
		if err != nil {
			return "", err
		}
		p.Calls-- // the pool before this reservation
		return b.exceeded(p, r.deadline, now), nil
	}
	if b.ModelCalls > 0 {
		if ok, err := r.take(ctx, modelCall); err != nil || !ok {
			return b.callCap(modelCall), err
		}
	}
	if r.deadline.IsZero() || now.Before(r.deadline) {
		return "", nil
	}
	p, err := r.spend(ctx, store.Pool{}) // has the budget been lifted?
	if err != nil {
		return "", err
	}
	return b.exceeded(p, r.deadline, now), nil
}

// firstBlock is the block of calls a new run tree's root reserves before
// its first model call (see take), or nothing when b has no call limit to
// reserve from in blocks.
func (b *Budget) firstBlock() store.Pool {
	if b == nil || b.ModelCalls <= 0 || b.Tokens > 0 || b.Cost > 0 {
		return store.Pool{}
	}
	var p store.Pool
	if b.ToolCalls > 0 {
		p.Tools = block(b.ToolCalls, 0, 1)
	}
	p.Calls = block(b.ModelCalls, 0, 1)
	return p
}

// block is how many calls a run reserves at once from a limit of which
// taken are taken, when runs of its tree are driven here (see take).
func block(limit, taken, runs int64) int64 {
	return min(max((limit-taken)/(64*runs), 1), 32)
}

// take takes one call of kind k for this run from what it reserved, or
// reserves a block of calls from the tree's pool first (see Budget),
// topping up the other kind's block in the same round trip. It reports
// false when the tree's limit is reached and the budget is not lifted.
//
// A block is a 64th of what the tree had left when this run last looked
// (at most 32), divided among the runs of the tree this runtime drives at
// once: a team of 200 working teammates reserves a call at a time, so
// reservations never use up a limit that the calls made have not. What a
// reservation takes past the limit is given back at once.
func (r *runner) take(ctx context.Context, k callKind) (bool, error) {
	r.mu.Lock()
	if r.grants[k] > 0 {
		r.grants[k]--
		r.mu.Unlock()
		return true, nil
	}
	r.mu.Unlock()
	// Only a reservation asks the runtime how many of the tree's runs it
	// drives: most calls take from the block and never lock the runtime.
	r.rt.mu.Lock()
	runs := int64(max(r.rt.drivenTrees[r.root], 1))
	r.rt.mu.Unlock()
	r.mu.Lock()
	var want [2]int64
	for kind := range want {
		limit, taken := r.budget.limit(callKind(kind), r.pool)
		if limit > 0 && (callKind(kind) == k || r.grants[kind] == 0) {
			want[kind] = block(limit, taken, runs)
		}
	}
	r.mu.Unlock()
	p, err := r.spend(ctx, store.Pool{Calls: want[modelCall], Tools: want[toolCall]})
	if err != nil {
		return false, err
	}
	if p.Lifted {
		return true, nil
	}
	r.mu.Lock()
	var excess [2]int64
	for kind, n := range want {
		limit, taken := r.budget.limit(callKind(kind), p)
		got := max(min(n, limit-(taken-n)), 0)
		r.grants[kind] += got
		excess[kind] = n - got
	}
	// A reservation made meanwhile by another call of this run counts
	// too.
	ok := r.grants[k] > 0
	if ok {
		r.grants[k]--
	}
	r.mu.Unlock()
	if excess != [2]int64{} {
		if _, err := r.spend(ctx, store.Pool{Calls: -excess[modelCall], Tools: -excess[toolCall]}); err != nil {
			return false, err
		}
	}
	return ok, nil
}

// giveBack returns to the tree's pool the calls this run reserved and did
// not make, when it stops being driven, so that other runs of the tree may
// make them. A failure only loses them (the tree may stop that much
// early), so it is logged, not returned.
func (r *runner) giveBack(ctx context.Context) {
	r.mu.Lock()
	d := store.Pool{Calls: -r.grants[modelCall], Tools: -r.grants[toolCall]}
	r.grants = [2]int64{}
	r.mu.Unlock()
	if d == (store.Pool{}) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.rt.cfg.Lease/3)
	defer cancel()
	if _, err := r.spend(ctx, d); err != nil {
		r.rt.log.Warn("cannot give back reserved calls", "run", r.id, "calls", -d.Calls, "tools", -d.Tools, "err", err)
	}
}

// checkTools runs before each tool call: it reserves the call from the
// tree's pool, or fails (or pauses) the run tree if its tool call limit is
// reached; stop reports that the call must not run, and res is its
// outcome then.
func (r *runner) checkTools(ctx context.Context, rd *round, key string) (res callResult, stop bool) {
	if r.budget == nil || r.budget.ToolCalls <= 0 || r.lifted.Load() {
		return callResult{}, false
	}
	ok, err := r.take(ctx, toolCall)
	switch {
	case err != nil:
		return callResult{err: err}, true
	case ok:
		return callResult{}, false
	}
	reason := r.budget.callCap(toolCall)
	if !r.budget.pauses() {
		return callResult{abort: reason}, true
	}
	if err := r.pauseOnBudget(ctx, rd.ap, key+"/budget", rd.turn, reason); err != nil {
		return callResult{err: err}, true
	}
	return callResult{unwound: true}, true
}

// spent adds a returned call's usage to the tree's pool, when the budget
// limits tokens or cost.
func (r *runner) spent(ctx context.Context, u model.Usage) error {
	if r.budget == nil || r.lifted.Load() || (r.budget.Tokens <= 0 && r.budget.Cost <= 0) {
		return nil
	}
	_, err := r.spend(ctx, store.Pool{Tokens: u.InputTokens + u.OutputTokens, Cost: u.Cost})
	return err
}

// underDeadline runs fn with a context that is cancelled when the tree's
// wall-time budget passes (unless the budget is lifted by then), so that the
// model calls, tools and child runs in flight end, and turns that
// interruption into the run's failure, or pause.
func (r *runner) underDeadline(ctx context.Context, fn func(context.Context) outcome) outcome {
	if r.budget == nil || r.deadline.IsZero() || r.lifted.Load() {
		return fn(ctx)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t := time.AfterFunc(time.Until(r.deadline), func() {
		if lifted, err := r.liftedNow(ctx); err == nil && lifted {
			return
		}
		cancel(errWallTime)
	})
	out := fn(wctx)
	t.Stop()
	if out.kind != interrupted || ctx.Err() != nil || !errors.Is(context.Cause(wctx), errWallTime) {
		return out
	}
	reason := "budget exceeded: wall time " + r.budget.WallTime.String()
	if !r.budget.pauses() {
		return outcome{kind: failed, reason: reason, abort: true}
	}
	ev := Event{Type: EventPaused, Key: "wall/budget", Agent: r.info.id, Kind: budgetKind, Reason: reason,
		Context: "Resume to let the run continue beyond its budget."}
	if err := r.append(ctx, []Event{ev}, store.Update{State: store.Paused, Reason: reason}, r.plan.root); err != nil {
		return outcome{kind: interrupted, err: err}
	}
	return outcome{kind: paused}
}

// isBudgetPause reports whether a paused event was caused by the budget.
func isBudgetPause(ev Event) bool {
	return ev.Kind == budgetKind || strings.HasSuffix(ev.Key, "/budget")
}

// newPieceOfWork starts a new piece of outside work in a PerWork tree:
// the calls the pool counts start again from none (see Budget). A store
// never counts below zero, so the pool forgets what runs hold in blocks
// at that moment; they give it back, or make those calls, on top of the
// new piece's limit.
func (r *runner) newPieceOfWork(ctx context.Context) error {
	if r.budget == nil || !r.budget.PerWork || r.lifted.Load() {
		return nil
	}
	const all = math.MaxInt64 / 4 // more than any pool holds, with room to add
	_, err := r.spend(ctx, store.Pool{Calls: -all, Tools: -all})
	return err
}

// resumeCapped resumes the runs of tree root other than run except that
// paused on the tree's call cap, once a resume of except gave the tree a
// new piece of work: the root and the runs right below it (a team's
// members, a conversation's children). A run deeper down shows in its
// parent's pause, whose resume passes the answer down. Each resume names
// the pause it answers, so a run that another resume reached first is
// left alone.
func (rt *Runtime) resumeCapped(ctx context.Context, root, except string) {
	runs, err := rt.store.List(ctx, store.Filter{Parent: root, State: store.Paused})
	if err == nil && root != except {
		var run store.Run
		if run, err = rt.store.Get(ctx, root); err == nil {
			runs = append(runs, run)
		}
	}
	if err != nil {
		rt.log.Warn("listing the runs paused on their tree's call cap", "root", root, "err", err)
		return
	}
	for _, run := range runs {
		if run.ID == except || run.State != store.Paused || !strings.HasPrefix(run.Reason, capReached) {
			continue
		}
		err := rt.Resume(ctx, run.ID, "The run tree's call cap was raised.", AtPause(run.LastSeq))
		if err != nil && !errors.Is(err, ErrPauseNotCurrent) && !errors.Is(err, store.ErrInvalidState) {
			rt.log.Warn("resuming a run paused on its tree's call cap", "run", run.ID, "err", err)
		}
	}
}

// TreeBudget returns the budget of the tree of run id (any run of it),
// as journaled with the run, and the tree's pool: what its runs have taken
// from it (see Budget; in a PerWork tree, for its current piece of outside
// work). The budget is nil for a run journaled before runs had call
// limits.
func (rt *Runtime) TreeBudget(ctx context.Context, id string) (*Budget, store.Pool, error) {
	recs, err := rt.store.Read(ctx, id, 0, 1)
	if err != nil {
		return nil, store.Pool{}, fmt.Errorf("budget of %s: %w", id, err)
	}
	if len(recs) == 0 || recs[0].Type != string(EventStarted) {
		return nil, store.Pool{}, fmt.Errorf("budget of %s: %w: its journal has no start record", id, ErrInvalidState)
	}
	ev, err := decodeEvent(recs[0])
	if err != nil || ev.Budget == nil {
		return nil, store.Pool{}, err
	}
	root := ev.Root
	if root == "" {
		root = id
	}
	p, err := rt.store.Spend(ctx, root, store.Pool{}) // spends nothing: reads the pool
	if err != nil {
		return nil, store.Pool{}, fmt.Errorf("budget of %s: %w", id, err)
	}
	return ev.Budget, p, nil
}
