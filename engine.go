package swarm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// runner executes one run: it replays the journal and continues the loop at
// the first step without a recorded outcome.
//
// Step keys are derived from the position of a step in the conversation:
// "t3/model" is the orchestrator's third model response, "t3/tool/<call id>"
// the outcome of one of its calls, and a delegated agent's steps live under
// "t3/h/<call id>/" (see nestedPath for deep nesting). The same key always
// names the same step, so a key already in the journal is never executed
// again.
type runner struct {
	rt *Runtime
	id string
	// remote: another engine drives the run (see remote.go); this
	// runner takes one of its steps.
	remote bool
	info   *defInfo
	plan   *plan
	lease  store.Lease
	input  json.RawMessage
	fresh  bool
	// parts are the input's parts, large ones by reference (parts.go);
	// blobCache holds the blobs loaded for model calls, under blobMu.
	parts     []model.Part
	blobMu    sync.Mutex
	blobCache map[string][]byte

	// claimed is when the run's lease was claimed; takeover the record of
	// the claim's takeover from a dead owner, until it is journaled (see
	// takeover.go).
	claimed   time.Time
	takeover  atomic.Pointer[takeover]
	retakeMu  sync.Mutex
	redoTools atomic.Pointer[map[string]bool] // see runner.again

	// recorded holds the journal by step key. It is filled before the loop
	// starts and only read afterwards.
	recorded map[string]store.Record

	// From the run's start record.
	values   map[string]any
	instance string
	depth    int
	budget   *Budget
	deadline time.Time
	// root is the run whose row holds the tree's budget pool.
	root string
	// lifted: a human resumed a pause caused by the budget, which no
	// longer applies anywhere in the tree.
	lifted atomic.Bool
	// spawned: the run has (or may have) child runs.
	spawned atomic.Bool
	// starts holds, by step key, the swarm handoff calls checked when
	// their model response was recorded (childStart), for child to use.
	starts sync.Map
	// steps are the steps a strategy's primitives took in this drive,
	// under stepMu (see seamDriver.takeStep).
	stepMu sync.Mutex
	steps  map[string][]stepUse
	// deferPause: the run's pauses wait for the end of the drive (a
	// strategy's; see pauseWith), where pause, under mu, is journaled.
	deferPause bool
	pause      *pausedAt
	// awaits are the pauses a strategy's drive reached, under awaitMu,
	// which is taken with or without mu, never before it (see awaited).
	awaitMu sync.Mutex
	awaits  []pendingAwait
	// seq is the newest journal sequence number this runner knows of.
	seq atomic.Int64

	mu    sync.Mutex
	found map[string]bool // swarm ids returned by registry searches
	// outParts are the parts tools added to the run's result
	// (AttachOutput), by step key, in the order they were recorded.
	outParts []keyedParts
	calls    map[string]int // model calls per agent, from the journal
	usage    model.Usage
	pool     store.Pool // the tree's budget pool, as last seen
	// grants are the calls this run reserved from the tree's pool and
	// has not made yet, by callKind (budget.go).
	grants [2]int64

	// waiting is the reason of the pause the run waits on, when load
	// found one unanswered.
	waiting string

	// final holds the orchestrator's final model response until finish
	// journals it together with the run's end.
	final       []Event
	finalUpdate store.Update

	// span is the run's invoke_agent span while it is driven here, and
	// trace the traceparent journaled with the run (telemetry_hooks.go).
	span  trace.Span
	trace string

	// compacted is how far each history stream is compacted (compact.go),
	// under mu.
	compacted map[string]*compact.Stream

	// snap is the snapshot load continued from (nil: the journal was read
	// from its start), base the newest snapshot, loaded or taken, and
	// snapSeq its record; noSnap makes load read the whole journal
	// (snapshot.go).
	snap, base *runSnap
	snapSeq    int64
	noSnap     bool

	// inspect, when set, makes the runner a read-only replay that stops
	// at one model call to rebuild its request (inspect.go).
	inspect *inspection
}

type outcomeKind int

const (
	answered    outcomeKind = iota // an agent's final text
	completed                      // the swarm's result
	failed                         // the swarm (or agent) failed
	paused                         // the run is paused and released
	interrupted                    // the context ended (stop, lease loss, close) or the store failed
)

type outcome struct {
	kind   outcomeKind
	text   string
	result json.RawMessage
	reason string
	err    error
	// turnKey and turn identify the round that ended the run, if any.
	turnKey string
	turn    int
	agent   string
	// abort: the failure ends the whole run, not just an agent.
	abort bool
}

func (r *runner) drive(ctx context.Context) error {
	out := r.execute(ctx)
	if r.id != r.root || out.kind == paused || out.kind == interrupted {
		// Before the run's end lets a parent go on. When the root ends,
		// no one takes from the pool any more.
		r.giveBack(ctx)
	}
	err := r.finish(ctx, out)
	r.endRun(ctx, out, err)
	if err != nil {
		r.rt.log.Warn("run interrupted", "run", r.id, "err", err)
	} else {
		r.rt.work.unstall(r.instanceKey())
	}
	return err
}

// execute loads the journal (unless the run was just created), applies
// inbox messages and drives the run's strategy (see strategy.go).
func (r *runner) execute(ctx context.Context) outcome {
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	if !r.fresh {
		if out, done := r.load(ctx); done {
			return out
		}
	}
	ctx = r.runContext(ctx)
	return r.underDeadline(ctx, func(ctx context.Context) outcome {
		// A run continued from a snapshot is past its input's check.
		if r.snap == nil {
			if out, stop := r.guardInput(ctx); stop {
				return out
			}
		}
		return r.plan.strategy.drive(ctx, r)
	})
}

// load rebuilds the run's state from its journal and delivers its inbox.
func (r *runner) load(ctx context.Context) (outcome, bool) {
	run, err := r.rt.store.Get(ctx, r.id)
	if err != nil {
		return outcome{kind: interrupted, err: err}, true
	}
	recs, err := r.readJournal(ctx, run)
	if err != nil {
		return outcome{kind: interrupted, err: err}, true
	}
	r.usage = run.Usage
	if r.snap != nil {
		r.restoreRunner()
	}
	started, pausedAt, ended, err := r.scan(recs)
	if err != nil {
		return outcome{kind: interrupted, err: err}, true
	}
	if !ended {
		r.noteTakeover(recs)
	}
	if ended {
		return outcome{kind: paused}, true // finished: nothing to do
	}
	if err := r.rebuild(started); err != nil {
		return outcome{kind: failed, reason: err.Error()}, true
	}
	if r.snap != nil && r.snap.Kind != snapKindOf(r.plan.strategy) {
		// The definition's strategy changed since the snapshot.
		r.rt.log.Warn("snapshot of another strategy; replaying the whole journal", "run", r.id, "kind", r.snap.Kind)
		r.reset()
		return r.load(ctx)
	}
	if r.budget.PerWork {
		// A resume of a pause on a call cap raised it, and did not lift
		// the budget: the pool says whether anything did.
		r.lifted.Store(false)
	}
	// The pause still waiting for its answer, if any. A user's message,
	// and a resume of a call cap, start a new piece of work of a PerWork
	// tree.
	pending, budgetPause, idle, capPause, outside := "", false, false, false, false
	for _, ev := range pausedAt {
		k := resumeKey(ev)
		if _, ok := r.recorded[k]; !ok {
			pending, budgetPause, idle = k, isBudgetPause(ev), ev.Reason == AwaitingMail
			capPause = budgetPause && r.budget.PerWork && isCapPause(ev)
			outside = r.budget.PerWork && ev.Reason == AwaitingMessage
			r.waiting = ev.Reason
		}
	}
	msgs, err := r.rt.store.Inbox(ctx, r.id)
	if err != nil {
		return outcome{kind: interrupted, err: err}, true
	}
	for _, m := range msgs {
		switch m.Kind {
		case store.MsgStop:
			return outcome{kind: interrupted, err: &stopCause{reason: m.Text, msg: m.ID}}, true
		case store.MsgResume:
			u := store.Update{AckInbox: m.ID, State: store.Running, ClearReason: true}
			if pending == "" {
				if err := r.append(ctx, nil, u, nil); err != nil {
					return outcome{kind: interrupted, err: err}, true
				}
				continue
			}
			switch {
			case capPause || outside:
				// Before the answer is recorded: a crash in between
				// starts the piece of work again.
				if err := r.newPieceOfWork(ctx); err != nil {
					return outcome{kind: interrupted, err: err}, true
				}
			case budgetPause:
				// The answer lifts the budget of the whole tree, before
				// it is recorded: a crash in between repeats the lift.
				if _, err := r.spend(ctx, store.Pool{Lifted: true}); err != nil {
					return outcome{kind: interrupted, err: err}, true
				}
			}
			ev := Event{Type: EventResumed, Key: pending, Agent: r.info.id, Message: m.Text, Parts: m.Parts}
			if err := r.append(ctx, []Event{ev}, u, nil); err != nil {
				return outcome{kind: interrupted, err: err}, true
			}
			rec, _ := r.encode(&ev, time.Now())
			r.recorded[pending] = rec
			if budgetPause && !capPause {
				r.lifted.Store(true)
			}
			if capPause {
				r.rt.resumeCapped(ctx, r.root, r.id)
			}
			pending = ""
		}
	}
	if pending != "" && !idle && !r.remote {
		// Claimed while paused: nothing to do until a resume arrives.
		// (An idle team member is woken by mail as well: its strategy
		// looks at its mailbox.)
		return outcome{kind: interrupted, err: errStillPaused}, true
	}
	return outcome{}, false
}

var errStillPaused = errors.New("run is paused")

// scan indexes the journal recs by step key into r.recorded and counts the
// model calls per agent. It returns the run's start event, the pauses it
// holds, and whether the run has ended.
func (r *runner) scan(recs []store.Record) (started *Event, pausedAt []Event, ended bool, err error) {
	r.recorded = make(map[string]store.Record, len(recs))
	if len(recs) > 0 {
		r.seq.Store(recs[len(recs)-1].Seq)
	}
	for _, rec := range recs {
		r.recorded[rec.Key] = rec
		if strings.HasSuffix(rec.Key, "/budget/resumed") {
			r.lifted.Store(true)
		}
		switch EventType(rec.Type) {
		case EventHandoffStarted:
			if strings.Contains(string(rec.Data), `"child":`) {
				r.spawned.Store(true)
			}
		case EventStarted, EventModelResponse, EventModelError, EventPaused:
			ev, err := decodeEvent(rec)
			if err != nil {
				return nil, nil, false, &seam.Interrupted{Err: err}
			}
			switch ev.Type {
			case EventStarted:
				started = &ev
			case EventPaused:
				pausedAt = append(pausedAt, ev)
			default:
				r.calls[ev.Agent]++
			}
		case EventCompleted, EventFailed, EventStopped:
			ended = true
		default:
			// A strategy's own record may say it started child runs
			// (see StartChildren): the run is taken to have some.
			if !engineEvents[EventType(rec.Type)] {
				r.spawned.Store(true)
			}
		}
	}
	if started == nil {
		return nil, nil, false, &seam.Interrupted{Err: fmt.Errorf("run %s: journal has no start record", r.id)}
	}
	return started, pausedAt, ended, nil
}

// rebuild restores what the run's start event holds and builds the run's
// plan from it.
func (r *runner) rebuild(started *Event) error {
	r.input, r.values, r.depth, r.budget, r.deadline = started.Input, started.Values, started.Depth, started.Budget, started.Deadline
	r.parts = started.Parts
	if r.budget == nil {
		// Started before runs had call limits: bounded from now on.
		r.budget = r.rt.treeBudget(nil, false)
	}
	r.trace = started.Trace
	r.instance = started.Instance
	if r.root = started.Root; r.root == "" {
		r.root = r.id
	}
	var err error
	r.plan, err = r.rt.buildPlan(r.info, r.input, r.values, started.Params, started.Customization)
	if err != nil {
		return fmt.Errorf("cannot rebuild the run's definition: %w", err)
	}
	return nil
}

func (r *runner) turnDone(ctx context.Context, ap *agentPlan, tkey string, turn int) error {
	key := tkey + "/done"
	if _, ok := r.recorded[key]; ok {
		return nil
	}
	var u store.Update
	if ap.root {
		u.Turn = turn
	}
	return r.append(ctx, []Event{{Type: EventTurnCompleted, Key: key, Agent: ap.name, Turn: turn, MaxTurns: ap.maxTurns}}, u, ap)
}

// modelStep returns the model's response for round tkey: the recorded one,
// or a new one (retried per policy) that it records before returning.
func (r *runner) modelStep(ctx context.Context, ap *agentPlan, tkey string, turn int, msgs []model.Message) (*model.Response, error) {
	return r.modelStepWith(ctx, ap, tkey, turn, msgs, nil)
}

// stepExtra is what a strategy journals in the same append as a new model
// response: events (such as the mails the request carried) and the
// mailbox cursor they advance to.
type stepExtra struct {
	events  []Event
	ackMail int64
	// outside: the step takes up work from outside the tree (see
	// strategy.Step.Outside), which opens a new piece of work of its
	// budget (see Budget.PerWork) before the call.
	outside bool
}

// modelStepWith is modelStep with x (if not nil) journaled together with
// the first new response.
func (r *runner) modelStepWith(ctx context.Context, ap *agentPlan, tkey string, turn int, msgs []model.Message, x *stepExtra) (*model.Response, error) {
	if ap.compaction != nil {
		var err error
		if msgs, err = r.compact(ctx, ap, tkey, turn, msgs); err != nil {
			return nil, err
		}
	}
	if len(ap.guards.at(guardrail.Output)) > 0 {
		return r.guardedModelStep(ctx, ap, tkey, turn, msgs, x)
	}
	return r.modelCall(ctx, ap, tkey+"/model", turn, msgs, nil, x)
}

// modelCall is one model step journaled under key; og, when not nil, is
// the output guardrails' check of the response, journaled with it, and x
// what the strategy journals with it.
func (r *runner) modelCall(ctx context.Context, ap *agentPlan, key string, turn int, msgs []model.Message, og *outputGuard, x *stepExtra) (*model.Response, error) {
	if r.inspect != nil {
		if _, ok := r.recorded[key]; !ok || r.inspecting(key) {
			return nil, r.inspect.reached(ctx, r, ap, key, msgs)
		}
	}
	if rec, ok := r.recorded[key]; ok {
		ev, err := decodeEvent(rec)
		if err != nil {
			return nil, &seam.Interrupted{Err: err}
		}
		if og != nil {
			if err := og.recall(r, ap, key); err != nil {
				return nil, err
			}
		}
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: ev.Text, ToolCalls: ev.ToolCalls}}, nil
	}
	if x != nil && x.outside {
		if err := r.newPieceOfWork(ctx); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		// Each attempt is a request to the model: each takes a call from
		// the budget.
		if err := r.checkBudget(ctx, ap, strings.TrimSuffix(key, "/model"), turn); err != nil {
			return nil, err
		}
		r.mu.Lock()
		call := r.calls[ap.name]
		r.calls[ap.name] = call + 1
		r.mu.Unlock()
		req := r.request(ctx, ap, call, msgs)
		if r.rt.live.watched(r.id) {
			// Stream only when someone follows the run's live text.
			req.OnDelta = func(d model.Delta) {
				ev := Event{Type: EventDelta, Time: time.Now(), RunID: r.id, Agent: ap.name, Turn: turn, Call: call, Text: d.Text}
				if og != nil && og.hold {
					og.held = append(og.held, ev)
					return
				}
				r.rt.live.publish(r.id, ev)
			}
		}
		mctx, cancel := context.WithTimeout(ctx, r.rt.cfg.ModelTimeout)
		left := r.rt.enterModelCall(r.id, r.lease)
		gctx, traced := r.traceChat(mctx, ap, req)
		refs := req.Messages
		var resp *model.Response
		var err error
		if req.Messages, err = r.loadParts(ctx, refs); err == nil {
			resp, err = ap.model.Generate(gctx, req)
		}
		req.Messages = refs // hashed and traced with references, not bytes
		traced(resp, err)
		left()
		cancel()
		if err == nil && resp == nil {
			err = &model.Error{Kind: model.KindInvalidOutput, Provider: "model", Model: ap.name, Message: "no response"}
		}
		if err == nil {
			if og != nil {
				og.check(ctx, r, ap, key, resp)
			}
			if err := r.recordResponse(ctx, ap, key, turn, call, requestHash(req), resp, og, x); err != nil {
				return nil, err
			}
			if og != nil && og.verdict.Action == guardrail.Allow {
				for _, ev := range og.held {
					r.rt.live.publish(r.id, ev)
				}
			}
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		kind := model.KindOf(err)
		ev := Event{Type: EventModelError, Key: key + "/err/" + strconv.Itoa(call), Agent: ap.name, Call: call, Kind: string(kind), Reason: err.Error(), Turn: turn}
		if aerr := r.append(ctx, []Event{ev}, store.Update{}, ap); aerr != nil {
			return nil, aerr
		}
		if !kind.Retryable() || attempt >= r.rt.cfg.ModelRetries {
			return nil, fmt.Errorf("model call by %s failed: %w", ap.name, err)
		}
		wait := r.rt.cfg.RetryBackoff << attempt
		wait = wait/2 + rand.N(wait/2+1)
		var me *model.Error
		if errors.As(err, &me) && me.RetryAfter > 0 {
			wait = max(wait, time.Duration(me.RetryAfter*float64(time.Second)))
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		}
	}
}

// request is the request of ap's call number call with the conversation
// msgs (already filtered and compacted): the one place a request is built,
// for the model and for the inspector (inspect.go).
func (r *runner) request(ctx context.Context, ap *agentPlan, call int, msgs []model.Message) *model.Request {
	req := &model.Request{Agent: ap.name, RunID: r.id, Call: call, System: ap.system, Messages: msgs, Tools: r.offered(ctx, ap)}
	if ap.schema != nil {
		req.ResultSchema = ap.schema
	} else if ap.root && !r.info.textOut {
		req.ResultSchema = r.info.outSchema
	}
	return req
}

// recordResponse normalizes a model response and journals it, with the
// digest of its request (hash), its tool call announcements, og's verdicts
// and x, in one append. A response whose verdict is not Allow is appended
// at once; a rejected or tripped one announces no calls (they never run).
func (r *runner) recordResponse(ctx context.Context, ap *agentPlan, key string, turn, call int, hash string, resp *model.Response, og *outputGuard, x *stepExtra) error {
	resp.Message.Role = model.RoleAssistant
	if ap.textOnly {
		resp.Message.ToolCalls = nil
	}
	calls := resp.Message.ToolCalls
	normalizeCalls(calls, turn)
	usage := ap.callUsage(resp.Usage)
	if err := r.spent(ctx, usage); err != nil {
		return err
	}
	u := store.Update{Agent: ap.name}
	if ap.root {
		u.Turn = turn
	}
	evs := make([]Event, 0, 1+len(calls))
	if x != nil {
		evs = append(evs, x.events...)
		u.AckMail = x.ackMail
	}
	evs = append(evs, Event{Type: EventModelResponse, Key: key, Agent: ap.name, Turn: turn, Call: call, Text: resp.Message.Content, ToolCalls: calls, Usage: &usage, RequestHash: hash})
	hold := og == nil || og.verdict.Action == guardrail.Allow
	if og == nil || og.verdict.Action == guardrail.Allow || og.verdict.Action == guardrail.Pause {
		tkey := key[:strings.LastIndex(key, "/model")]
		var agent string
		evs, agent = r.announce(ctx, ap, tkey, calls, evs)
		if agent != "" {
			u.Agent = agent
		}
	}
	if og != nil {
		evs = append(evs, og.evs...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	total := r.usage.Add(usage)
	u.Usage = &total
	if h, ok := ctx.Value(heldKey{}).(*heldAnswer); ok && hold && !ap.root && len(calls) == 0 {
		// An agent's answer: journaled with the handoff's return.
		h.evs = evs
		r.usage = total
		return nil
	}
	if _, seam := r.plan.strategy.(seamStrategy); hold && ap.root && len(calls) == 0 && !seam {
		if _, err := r.info.textToResult(resp.Message.Content); err == nil {
			// The final answer: journaled with the run's end, in one append.
			r.final, r.finalUpdate = evs, u
			r.usage = total
			return nil
		}
	}
	if err := r.append(ctx, evs, u, ap); err != nil {
		return err
	}
	r.usage = total
	return nil
}

// callUsage is the usage of one of ap's model calls as reported: a call,
// priced from ap's price table when the provider gave no cost.
func (ap *agentPlan) callUsage(u model.Usage) model.Usage {
	if u.Calls == 0 {
		u.Calls = 1
	}
	if u.Cost == 0 && ap.price != nil {
		u.Cost = ap.price.Cost(u)
	}
	return u
}

// announce appends to evs the events that announce calls of ap in round
// tkey (handoff_started or tool_call, one per call), and returns them with
// the agent the last handoff among them hands to ("" if none). A swarm handoff that will
// start a child is checked here and names its child.
func (r *runner) announce(ctx context.Context, ap *agentPlan, tkey string, calls []model.ToolCall, evs []Event) (_ []Event, agent string) {
	for _, c := range calls {
		if ct, ok := ap.children[c.Name]; ok {
			var args struct {
				Request string `json:"request"`
			}
			_ = json.Unmarshal(c.Arguments, &args)
			ev := Event{Type: EventHandoffStarted, Key: tkey + "/call/" + c.ID, Agent: ap.name, Target: ct.swarm,
				CallID: c.ID, Request: args.Request, Arguments: eventArgs(c.Arguments)}
			// The child is named only if the call will start one.
			if start, refusal := r.prepareChild(ctx, ct, c); refusal == "" {
				ckey := tkey + "/tool/" + c.ID
				ev.Child = childRunID(r.id, ckey)
				r.starts.Store(ckey, start)
			}
			evs = append(evs, ev)
			agent = ct.swarm
		} else if target, ok := ap.handoffs[c.Name]; ok && ap.delegationProblem(c) == "" {
			_, request, _ := ap.delegation(c, target)
			evs = append(evs, Event{Type: EventHandoffStarted, Key: tkey + "/call/" + c.ID, Agent: ap.name, Target: target, Tool: c.Name, CallID: c.ID, Request: request})
			agent = target
		} else {
			// A tool call, or a delegation whose arguments are invalid: it
			// never hands off, its result is an error.
			evs = append(evs, Event{Type: EventToolCall, Key: tkey + "/call/" + c.ID, Agent: ap.name, Tool: c.Name, CallID: c.ID, Arguments: eventArgs(c.Arguments)})
		}
	}
	return evs, agent
}

// normalizeCalls gives each call of a response of round turn an id that is
// unique in the response and fit for step keys, and the arguments the
// journal gives back on replay (see journaledArgs). An id that is missing,
// unfit or taken by an earlier call is replaced by call_<turn>_<i> (with a
// further suffix should another call have that id).
func normalizeCalls(calls []model.ToolCall, turn int) {
	taken := func(id string) bool {
		return slices.ContainsFunc(calls, func(c model.ToolCall) bool { return c.ID == id })
	}
	for i := range calls {
		if !goodCallID(calls[i].ID) || slices.ContainsFunc(calls[:i], func(c model.ToolCall) bool { return c.ID == calls[i].ID }) {
			id := "call_" + strconv.Itoa(turn) + "_" + strconv.Itoa(i)
			for n := 1; taken(id); n++ {
				id = "call_" + strconv.Itoa(turn) + "_" + strconv.Itoa(i) + "_" + strconv.Itoa(n)
			}
			calls[i].ID = id
		}
		calls[i].Arguments = journaledArgs(calls[i].Arguments)
	}
}

// goodCallID reports whether a model's tool call id can be used as it is in
// step keys: short, printable UTF-8 (other ids are replaced).
func goodCallID(id string) bool {
	if id == "" || len(id) > 64 || !utf8.ValidString(id) {
		return false
	}
	for _, c := range id {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// journaledArgs returns a model's tool call arguments as the journal gives
// them back on replay, so that the live run and a replay see the same
// bytes: valid JSON as encoding/json writes it (compact), anything else as
// its text with invalid UTF-8 replaced. Such invalid arguments are
// journaled as a JSON string (see model.ToolCall's MarshalJSON) and give
// the model an error result.
func journaledArgs(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if !utf8.Valid(b) {
		b = json.RawMessage(strings.ToValidUTF8(string(b), "\uFFFD"))
	}
	if json.Valid(b) {
		if out, err := json.Marshal(b); err == nil {
			return out
		}
	}
	return b
}

// eventArgs is a call's arguments as an event shows them: the JSON itself,
// or a JSON string holding arguments that are not valid JSON.
func eventArgs(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || json.Valid(b) {
		return b
	}
	out, _ := json.Marshal(string(b))
	return out
}

// callResult is the outcome of one tool call.
type callResult struct {
	output   string
	isError  bool
	complete json.RawMessage // a valid complete call's result
	fail     bool
	pause    bool  // an unanswered pause call
	err      error // interruption
	// childPause is the pause to record when a child swarm waits.
	childPause *Event
	// unwound: a pause below was recorded; the run is paused.
	unwound bool
	// abort fails the whole run (a budget was exceeded below).
	abort string

	// parts are the tool's parts (AttachParts), by reference.
	parts []model.Part
}

// round is one model response's calls being executed. When the round is
// sure to continue (no built-in call among them), the last result to be
// recorded carries the round's turn_completed event in the same append.
type round struct {
	ap    *agentPlan
	tkey  string
	turn  int
	merge bool
	// stamp: its events carry turn (a strategy's round, see AtTurn).
	stamp bool
	left  atomic.Int32
	ended atomic.Bool
}

// settle counts one call as done and returns the events and row update to
// journal with its result.
func (rd *round) settle(ev Event, u store.Update) ([]Event, store.Update) {
	if rd.left.Add(-1) != 0 || !rd.merge {
		return []Event{ev}, u
	}
	rd.ended.Store(true)
	if rd.ap.root {
		u.Turn = rd.turn
	}
	return []Event{ev, {Type: EventTurnCompleted, Key: rd.tkey + "/done", Agent: rd.ap.name, Turn: rd.turn, MaxTurns: rd.ap.maxTurns}}, u
}

// eventTurn is the turn of the result events of a strategy's round (see
// strategy.Driver.AtTurn), 0 for the tool-calling loop's.
func (rd *round) eventTurn() int {
	if rd.stamp {
		return rd.turn
	}
	return 0
}

func (r *runner) execCalls(ctx context.Context, rd *round, calls []model.ToolCall) []callResult {
	rd.left.Store(int32(len(calls)))
	if rd.ap.root {
		for _, c := range calls {
			if c.Name == toolComplete || c.Name == toolFail || c.Name == toolPause {
				rd.merge = false
			}
		}
	}
	if _, ok := r.recorded[rd.tkey+"/done"]; ok {
		rd.merge = false
	}
	results := make([]callResult, len(calls))
	if len(calls) == 1 {
		results[0] = r.execCall(ctx, rd, calls[0], calls)
		return results
	}
	var sem chan struct{}
	if len(calls) > r.rt.cfg.MaxParallel {
		sem = make(chan struct{}, r.rt.cfg.MaxParallel)
	}
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			if sem != nil {
				sem <- struct{}{}
				defer func() { <-sem }()
			}
			results[i] = r.execCall(ctx, rd, calls[i], calls)
		})
	}
	wg.Wait()
	return results
}

func (r *runner) execCall(ctx context.Context, rd *round, c model.ToolCall, all []model.ToolCall) (res callResult) {
	ap := rd.ap
	key := rd.tkey + "/tool/" + c.ID
	rec, ok := r.recorded[key]
	if r.inspect != nil {
		if r.inspect.through[key] {
			ok = false // executed again, to reach the inspected call
		} else if !ok {
			return callResult{err: r.inspect.strayed(ctx, "the step "+key)}
		}
	}
	if ok {
		rd.left.Add(-1)
		ev, err := decodeEvent(rec)
		if err != nil {
			return callResult{err: &seam.Interrupted{Err: err}}
		}
		if EventType(rec.Type) == EventResumed {
			// The answer's parts (ResumeParts), by reference, go to the
			// model with the pause's result.
			return callResult{output: "A human answered: " + ev.Message, parts: ev.Parts}
		}
		if c.Name == toolRegistrySearch && ap.registry != nil && !ev.IsError {
			r.noteFound(ev.Output)
		}
		r.noteOutput(key, ev.ResultParts)
		return callResult{output: ev.Output, isError: ev.IsError, parts: ev.Parts}
	}
	if r.tel() != nil {
		var traced func(callResult)
		ctx, traced = r.traceTool(ctx, ap, c)
		defer func() { traced(res) }()
	}
	if ap.root && (ap.builtins || c.Name == toolComplete) {
		// complete is honoured even when it is not offered: a valid
		// result is a valid result.
		switch c.Name {
		case toolComplete, toolFail, toolPause:
			res, ok := r.builtin(ap, c, all)
			if ok {
				return res
			}
			return r.recordResult(ctx, rd, key, c, res.output, true)
		}
	}
	if problem := ap.delegationProblem(c); problem != "" {
		return r.recordResult(ctx, rd, key, c, "error: "+problem, true)
	}
	if res, stop := r.guardCall(ctx, rd, key, c); stop {
		return res
	}
	if target, ok := ap.handoffs[c.Name]; ok {
		return r.handoff(ctx, rd, key, c, target)
	}
	if ct, ok := ap.children[c.Name]; ok {
		return r.child(ctx, rd, key, c, ct)
	}
	if ap.registry != nil {
		switch c.Name {
		case toolRegistrySearch:
			out, err := r.registrySearch(ctx, ap, c.Arguments)
			if err != nil {
				return r.recordResult(ctx, rd, key, c, "error: "+err.Error(), true)
			}
			r.noteFound(out)
			return r.recordResult(ctx, rd, key, c, out, false)
		case toolRegistryHandoff:
			return r.registryHandoff(ctx, rd, key, c)
		}
	}
	t, ok := r.toolNamed(ctx, ap, c.Name)
	if !ok {
		return r.recordResult(ctx, rd, key, c, unknownTool(ap, c.Name), true)
	}
	if rs := ap.schemas[c.Name]; rs != nil {
		if err := validateJSON(rs, c.Arguments); err != nil {
			return r.recordResult(ctx, rd, key, c, "error: "+(&ArgumentError{Tool: c.Name, Err: err}).Error(), true)
		}
	}
	if res, stop := r.checkTools(ctx, rd, key); stop {
		return res
	}
	ci := &callInfo{runID: r.id, instance: r.instance, step: key}
	out, err := callTool(context.WithValue(ctx, seam.CallKey{}, ci), t, c.Arguments)
	if ctx.Err() != nil {
		return callResult{err: context.Cause(ctx)}
	}
	if err != nil {
		return r.recordGuarded(ctx, rd, key, c, "error: "+err.Error(), true, ci)
	}
	return r.recordGuarded(ctx, rd, key, c, out, false, ci)
}

// callTool runs a tool, turning a panic into an error.
func callTool(ctx context.Context, t Tool, args json.RawMessage) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool %s panicked: %v\n%s", t.Name(), p, debug.Stack())
		}
	}()
	return t.Call(ctx, args)
}

// builtin evaluates complete, pause and fail. ok false means the call is
// invalid and res.output explains why (to be recorded as an error result).
func (r *runner) builtin(ap *agentPlan, c model.ToolCall, all []model.ToolCall) (res callResult, ok bool) {
	switch c.Name {
	case toolComplete:
		var args struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(orEmpty(c.Arguments), &args); err != nil || len(args.Result) == 0 {
			return callResult{output: "error: complete needs an object argument with a result field"}, false
		}
		out, err := r.info.output(args.Result)
		if err != nil {
			return callResult{output: "error: " + err.Error()}, false
		}
		return callResult{complete: out}, true
	case toolFail:
		var args struct {
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(orEmpty(c.Arguments), &args); err != nil {
			return callResult{output: "error: fail needs an object argument with a reason field"}, false
		}
		if args.Reason == "" {
			args.Reason = "the model gave up"
		}
		return callResult{fail: true, output: args.Reason}, true
	default: // pause
		var args struct {
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(orEmpty(c.Arguments), &args); err != nil || args.Reason == "" {
			return callResult{output: "error: pause needs an object argument with a reason field"}, false
		}
		for _, o := range all {
			if o.Name == toolPause {
				if o.ID != c.ID {
					return callResult{output: "error: only the first pause of a response is honoured"}, false
				}
				break
			}
		}
		return callResult{pause: true}, true
	}
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage(`{}`)
	}
	return b
}

func (r *runner) recordResult(ctx context.Context, rd *round, key string, c model.ToolCall, output string, isError bool) callResult {
	return r.recordResultWith(ctx, rd, key, c, output, isError, nil)
}

// recordResultWith journals a tool's result together with what the tool
// asked to journal with it (ci: events, a mailbox cursor).
func (r *runner) recordResultWith(ctx context.Context, rd *round, key string, c model.ToolCall, output string, isError bool, ci *callInfo) callResult {
	ev := Event{Type: EventToolResult, Key: key, Agent: rd.ap.name, Tool: c.Name, CallID: c.ID, Output: output, IsError: isError}
	if ci != nil && len(ci.parts) > 0 {
		parts, err := r.storeParts(ctx, ci.parts)
		if err != nil {
			return callResult{err: &seam.Interrupted{Err: err}}
		}
		ev.Parts = parts
	}
	if ci != nil && len(ci.out) > 0 {
		parts, err := r.storeParts(ctx, ci.out)
		if err != nil {
			return callResult{err: &seam.Interrupted{Err: err}}
		}
		ev.ResultParts = parts
	}
	defer stampResult(ctx, &ev)()
	if ev.Turn == 0 {
		ev.Turn = rd.eventTurn()
	}
	evs, u := rd.settle(ev, store.Update{})
	if ci != nil && (len(ci.extra) > 0 || ci.ackMail > 0) {
		evs = append(slices.Clip(ci.extra), evs...)
		u.AckMail = ci.ackMail
	}
	if err := r.append(ctx, evs, u, rd.ap); err != nil {
		return callResult{err: err}
	}
	r.noteOutput(key, ev.ResultParts)
	return callResult{output: output, isError: isError, parts: ev.Parts}
}

// handoff runs the target agent's own loop on the request and records its
// answer (or failure) as the call's result.
func (r *runner) handoff(ctx context.Context, rd *round, key string, c model.ToolCall, target string) callResult {
	ap := rd.ap
	output, isError := "", false
	depth := nesting(ctx) + 1
	held := &heldAnswer{}
	if key, request, _ := ap.delegation(c, target); r.depth+depth > r.rt.cfg.MaxDepth {
		output, isError = "error: cannot hand off to agent "+target+": "+r.depthLimit(), true
	} else {
		sap := r.plan.agents[key]
		actx, traced := r.traceAgent(ctx, sap)
		sub := r.loop(context.WithValue(context.WithValue(actx, nestKey{}, depth), heldKey{}, held), sap, nestedPath(rd.tkey, c.ID), request)
		traced(sub)
		switch {
		case sub.kind == interrupted:
			return callResult{err: sub.err}
		case sub.kind == paused:
			return callResult{unwound: true}
		case sub.abort:
			return callResult{abort: sub.reason}
		case sub.kind == answered:
			output = sub.text
		default:
			output, isError = "error: agent "+target+" failed: "+sub.reason, true
		}
	}
	output, isError, stop, pause := r.guardResult(ctx, ap, key, guardrail.HandoffResult, c, target, output, isError)
	if stop != nil {
		return *stop
	}
	evs, u := rd.settle(Event{Type: EventHandoffReturned, Key: key, Agent: ap.name, Turn: rd.eventTurn(), Target: target, Tool: c.Name, CallID: c.ID, Output: output, IsError: isError}, store.Update{Agent: ap.name})
	if err := r.appendHeld(ctx, held, evs, u, ap); err != nil {
		return callResult{err: err}
	}
	return callResult{output: output, isError: isError, childPause: pause}
}

// nestKey is the context key of the nesting depth of the agent a loop runs:
// 0 for the orchestrator, 1 for an agent it hands off to, and so on.
type nestKey struct{}

// nesting returns the nesting depth of the agent whose loop ctx belongs to.
func nesting(ctx context.Context) int {
	n, _ := ctx.Value(nestKey{}).(int)
	return n
}

// depthLimit explains a handoff refused for its depth, for the model.
func (r *runner) depthLimit() string {
	return fmt.Sprintf("the nesting depth limit (%d) is reached (Config.MaxDepth; agent handoffs and swarm handoffs count together); do the task without delegating it further", r.rt.cfg.MaxDepth)
}

// maxPathLen bounds the step key prefix of a nested agent (see nestedPath).
const maxPathLen = 400

// nestedPath is the step key prefix of the agent that call id of round tkey
// hands off to: tkey + "/h/" + id + "/" while that is at most maxPathLen
// bytes. A longer one (deep nesting) keeps the call id and replaces tkey
// with a fixed-size digest of it, so that step keys stay short enough for
// every store at any depth. Either way the prefix is a function of tkey
// and id alone, so a replay finds the same keys, and journals whose keys
// were short keep their keys.
func nestedPath(tkey, id string) string {
	p := tkey + "/h/" + id + "/"
	if len(p) <= maxPathLen {
		return p
	}
	sum := sha256.Sum256([]byte(tkey))
	return "~" + hex.EncodeToString(sum[:12]) + "/h/" + id + "/"
}

// finish records how the run ended.
func (r *runner) finish(ctx context.Context, out outcome) error {
	// Terminal records are written even if ctx was cancelled just now.
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	evs := r.final
	u := r.finalUpdate
	if out.kind != completed {
		evs, u = nil, store.Update{}
	}
	if out.turnKey != "" {
		if _, ok := r.recorded[out.turnKey+"/done"]; !ok {
			evs = append(evs, Event{Type: EventTurnCompleted, Key: out.turnKey + "/done", Agent: out.agent, Turn: out.turn, MaxTurns: r.plan.root.maxTurns})
			u.Turn = out.turn
		}
	}
	switch out.kind {
	case completed:
		result, parts, err := r.completedParts(bg, out.result)
		if err != nil {
			return &seam.Interrupted{Err: fmt.Errorf("store the result parts of run %s: %w", r.id, err)}
		}
		out.result = result
		evs = append(evs, Event{Type: EventCompleted, Key: "end", Agent: r.info.id, Result: out.result, Parts: parts})
		u.State, u.Result, u.Agent, u.ClearReason = store.Completed, out.result, r.info.id, true
	case failed:
		evs = append(evs, Event{Type: EventFailed, Key: "end", Agent: r.info.id, Reason: out.reason})
		u.State, u.Reason, u.ClearReason = store.Failed, out.reason, true
	case interrupted:
		cause := out.err
		if c := context.Cause(ctx); c != nil {
			cause = c
		}
		var sc *stopCause
		switch {
		case errors.As(cause, &sc):
			evs = append(evs, Event{Type: EventStopped, Key: "end", Agent: r.info.id, Reason: sc.reason})
			u = store.Update{State: store.Stopped, Reason: sc.reason, ClearReason: true, AckInbox: sc.msg}
		case errors.Is(cause, errStillPaused):
			// Running, but its journal still waits at a pause that no
			// message answers (a lead woken by mail before posts woke
			// only runs that wait for mail): paused again, as its
			// journal says, rather than released to be claimed again.
			if r.waiting != "" {
				return r.append(bg, nil, store.Update{State: store.Paused, Reason: r.waiting}, r.plan.root)
			}
			return r.rt.store.Release(bg, r.lease)
		case errors.Is(cause, ErrClosed):
			return r.rt.store.Release(bg, r.lease)
		default:
			reason := r.giveUp(cause)
			if reason == "" {
				return cause
			}
			evs = []Event{{Type: EventFailed, Key: "end", Agent: r.info.id, Reason: reason}}
			u = store.Update{State: store.Failed, Reason: reason}
		}
	case paused:
		r.mu.Lock()
		p := r.pause
		r.mu.Unlock()
		if p == nil {
			return nil
		}
		return r.append(bg, p.evs, p.u, p.ap)
	default:
		return nil
	}
	if r.plan == nil {
		r.plan = &plan{root: &agentPlan{name: r.info.id}}
	}
	if err := r.append(bg, evs, u, r.plan.root); err != nil {
		return err
	}
	r.stopChildren(bg, "parent run "+r.id+" "+string(u.State))
	return nil
}

// maxStalls is how many drives in a row of one run may give up on an error
// of the store without the run's journal growing before the run fails.
const maxStalls = 5

// giveUp decides what becomes of a run whose driver stopped on err, an
// error that is neither a stop nor a lost lease nor the runtime closing.
// It returns the reason to fail the run with, or "" to leave the run
// running for a later drive (its lease is kept and renewed, and the
// heartbeat drives it again; see adoptOrphans).
//
// A failure of the journal that retrying cannot fix (the store refused the
// record: a constraint, a size limit, invalid data) fails the run at once.
// Other failures of the store (unavailable, a lease or step conflict) are
// retried by driving the run again, but not forever: a run whose last
// maxStalls drives all gave up without recording anything new fails too,
// so that no loop re-calls the model without making progress.
func (r *runner) giveUp(err error) string {
	var se *seam.Interrupted
	if !errors.As(err, &se) {
		return ""
	}
	msg := clip(se.Error(), 2000)
	if errors.Is(se.Err, store.ErrLeaseLost) || errors.Is(se.Err, store.ErrConflict) {
		return "" // another driver has the run
	}
	if errors.Is(se.Err, store.ErrNoBlob) {
		return "a part the run refers to is missing from the store (" + clip(se.Err.Error(), 2000) + "); retrying cannot fix this"
	}
	if permanent(se.Err) {
		return "the store refused to record a step of the run (" + msg + "); retrying cannot fix this"
	}
	if n := r.rt.work.stalled(r.instanceKey(), r.seq.Load()); n >= maxStalls {
		return fmt.Sprintf("the run was driven %d times in a row without recording progress; the last attempt failed: %s", n, msg)
	}
	return ""
}

// clip shortens s to at most n bytes (cut at a character boundary) plus
// "...", for reasons that quote text of unbounded length.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// permanent reports whether a journal failure will recur however often it
// is retried: anything but an unavailable store, a lost lease or a step
// recorded by someone else (both mean another driver owns the run), a
// cancellation, or the runtime or the store closing.
func permanent(err error) bool {
	switch {
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrConflict),
		errors.Is(err, store.ErrLeased), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalidState),
		errors.Is(err, ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true
}

// append journals events (with u applied to the run row) under the run's
// lease, wakes waiters, and fires hooks of ap and of the runtime.
func (r *runner) append(ctx context.Context, evs []Event, u store.Update, ap *agentPlan) error {
	if r.inspect != nil {
		return r.inspect.strayed(ctx, "a step to record")
	}
	evs, settle := r.retake(evs)
	now := time.Now()
	recs := make([]store.Record, len(evs))
	for i := range evs {
		rec, err := r.encode(&evs[i], now)
		if err != nil {
			settle(false)
			return &seam.Interrupted{Err: err}
		}
		recs[i] = rec
	}
	last, err := r.rt.store.Append(ctx, r.lease, recs, u)
	settle(err == nil)
	if err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			r.rt.work.fenced.Add(1)
		}
		return &seam.Interrupted{Err: err}
	}
	for cur := r.seq.Load(); last > cur && !r.seq.CompareAndSwap(cur, last); cur = r.seq.Load() {
	}
	r.awaited(ctx, u)
	r.rt.notes.notify(r.id)
	if ap == nil {
		return nil
	}
	for i := range evs {
		e := evs[i]
		e.Seq, e.Time, e.RunID = last-int64(len(evs)-1-i), now, r.id
		if ap.hooks != nil {
			ap.hooks.fire(ctx, e)
		}
		r.rt.cfg.Hooks.fire(ctx, e)
	}
	return nil
}

// encode makes a journal record of an event: type, key and time go in the
// record's columns, the rest in its JSON data.
func (r *runner) encode(ev *Event, now time.Time) (store.Record, error) {
	typ, key := ev.Type, ev.Key
	ev.Type, ev.Key = "", ""
	data, err := json.Marshal(ev)
	ev.Type, ev.Key = typ, key
	if err != nil {
		return store.Record{}, fmt.Errorf("encode %s event: %w", typ, err)
	}
	return store.Record{Key: key, Type: string(typ), Data: data, Time: now}, nil
}

func decodeEvent(rec store.Record) (Event, error) {
	var ev Event
	if len(rec.Data) > 0 {
		if err := json.Unmarshal(rec.Data, &ev); err != nil {
			return Event{}, fmt.Errorf("decode journal record %d (%s): %w", rec.Seq, rec.Key, err)
		}
	}
	ev.Seq, ev.Type, ev.Key, ev.Time = rec.Seq, EventType(rec.Type), rec.Key, rec.Time
	return ev, nil
}
