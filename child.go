package swarm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// childTarget is a swarm handoff resolved for a run.
type childTarget struct {
	swarm        string
	info         *defInfo
	customizable bool
	params       *paramsRecord
}

// childRunID derives a child's run id from its parent and the step key of
// the call that starts it, so that a replayed call finds the same child
// instead of starting another.
func childRunID(parent, key string) string {
	sum := sha256.Sum256([]byte(key))
	return parent + "." + hex.EncodeToString(sum[:5])
}

// params returns the JSON schema of a swarm handoff's arguments.
func (ct *childTarget) schema() json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	if ct.info.textIn {
		b.WriteString(`"request":{"type":"string","description":"What the swarm should do, with all the context it needs."}`)
	} else {
		in := ct.info.inSchema
		if len(in) == 0 {
			in = json.RawMessage(`{}`)
		}
		b.WriteString(`"input":`)
		b.Write(in)
	}
	if ct.customizable {
		b.WriteString(`,"customization":`)
		b.Write(customizationSchema)
	}
	if ct.info.textIn {
		b.WriteString(`},"required":["request"]}`)
	} else {
		b.WriteString(`},"required":["input"]}`)
	}
	return json.RawMessage(b.String())
}

// args decodes a swarm handoff call into the child's input and
// customization. Errors are meant for the model.
func (ct *childTarget) args(raw json.RawMessage) (json.RawMessage, *Customization, error) {
	var a struct {
		Request       *string         `json:"request"`
		Input         json.RawMessage `json:"input"`
		Customization json.RawMessage `json:"customization"`
	}
	if err := json.Unmarshal(orEmpty(raw), &a); err != nil {
		return nil, nil, fmt.Errorf("needs an object argument: %w", err)
	}
	cust, err := decodeCustomization(a.Customization)
	if err != nil {
		return nil, nil, err
	}
	if cust != nil && !ct.customizable {
		return nil, nil, fmt.Errorf("swarm %s does not accept a customization", ct.swarm)
	}
	if ct.info.textIn {
		if a.Request == nil || strings.TrimSpace(*a.Request) == "" {
			return nil, nil, errors.New("needs a non-empty request string")
		}
		in, _ := json.Marshal(*a.Request)
		return in, cust, nil
	}
	if len(a.Input) == 0 || string(a.Input) == "null" {
		return nil, nil, errors.New("needs an input matching the swarm's input schema")
	}
	// A model sometimes sends the input as a JSON string holding JSON.
	var s string
	if json.Unmarshal(a.Input, &s) == nil && json.Valid([]byte(s)) {
		a.Input = json.RawMessage(s)
	}
	return a.Input, cust, nil
}

// customizationKeys are the keys of the customization argument, in the
// order of its schema.
var customizationKeys = []string{"additional_instructions", "additional_agents", "additional_tools", "max_turns_override"}

// decodeCustomization decodes a model's customization argument. The schema
// offered to the model allows no other keys, so an unknown key (or a known
// one spelt in another case) is an error naming it, never an empty
// customization.
func decodeCustomization(raw json.RawMessage) (*Customization, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, fmt.Errorf("customization must be an object: %w", err)
	}
	var unknown []string
	for k := range keys {
		if !slices.Contains(customizationKeys, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("customization has unknown key %s (the allowed keys are %s)", strings.Join(unknown, ", "), strings.Join(customizationKeys, ", "))
	}
	var c Customization
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("customization: %w", err)
	}
	return &c, nil
}

// childStart is a swarm handoff call checked and resolved: everything
// needed to create its child run.
type childStart struct {
	input json.RawMessage
	cust  *Customization
	plan  *plan
}

// prepareChild checks a swarm handoff call and resolves the child's plan.
// A refusal is the error result for the model; no child run is created for
// a refused call, so none is named.
func (r *runner) prepareChild(ctx context.Context, ct *childTarget, c model.ToolCall) (childStart, string) {
	input, cust, err := ct.args(c.Arguments)
	if err != nil {
		return childStart{}, "error: " + c.Name + ": " + err.Error()
	}
	if r.depth+nesting(ctx)+1 > r.rt.cfg.MaxDepth {
		return childStart{}, "error: cannot start swarm " + ct.swarm + ": " + r.depthLimit()
	}
	pl, err := r.rt.buildPlan(ct.info, input, r.values, ct.params, cust)
	if err != nil {
		return childStart{}, "error: cannot start swarm " + ct.swarm + ": " + err.Error()
	}
	return childStart{input: input, cust: cust, plan: pl}, ""
}

// child runs a swarm handoff: it starts the child run (unless an earlier
// attempt did), waits for it durably, and records its outcome as the call's
// result. A pause of the child (or of anything below it) pauses this run.
func (r *runner) child(ctx context.Context, rd *round, key string, c model.ToolCall, ct *childTarget) callResult {
	childID := childRunID(r.id, key)
	if r.remote {
		// The engine driving the run starts its child runs itself
		// (a Temporal child workflow for a delegation): a child run
		// made here would be driven by this runtime's workers.
		return r.settleChild(ctx, rd, key, c, ct, "", "error: swarm "+ct.swarm+" cannot be handed off to in a round of a run driven by another engine: delegate to it instead", true, nil)
	}
	var start childStart
	if v, ok := r.starts.LoadAndDelete(key); ok {
		start = v.(childStart) // checked when the response was recorded
	} else {
		var refusal string
		if start, refusal = r.prepareChild(ctx, ct, c); refusal != "" {
			return r.settleChild(ctx, rd, key, c, ct, "", refusal, true, nil)
		}
	}
	r.spawned.Store(true)
	if r.budget != nil && !r.budget.pauses() && !r.lifted.Load() {
		r.mu.Lock()
		pool := r.pool
		// What this run reserved and has not made is not spent.
		pool.Calls -= r.grants[modelCall]
		pool.Tools -= r.grants[toolCall]
		r.mu.Unlock()
		if reason := r.budget.exceeded(pool, r.deadline, time.Now()); reason != "" {
			return callResult{abort: reason}
		}
	}
	_, err := r.rt.create(ctx, newRun{info: ct.info, input: start.input, id: childID, explicitID: true, values: r.values, plan: start.plan,
		parent: r.id, depth: r.depth + nesting(ctx) + 1, params: ct.params, cust: start.cust, budget: r.budget, root: r.root, deadline: r.deadline,
		parts: r.handParts(ctx)})
	switch {
	case err == nil:
	case errors.Is(err, ErrClosed) || ctx.Err() != nil:
		return callResult{err: errors.Join(err, context.Cause(ctx))}
	case errors.Is(err, ErrInvalidInput), errors.Is(err, errCustomization), errors.Is(err, ErrInvalid),
		errors.Is(err, ErrUnknownAgent), errors.Is(err, ErrUnknownSwarm), errors.Is(err, ErrNoModel), errors.Is(err, ErrDuplicate):
		return r.settleChild(ctx, rd, key, c, ct, "", "error: cannot start swarm "+ct.swarm+": "+err.Error(), true, nil)
	default:
		return callResult{err: &seam.Interrupted{Err: err}}
	}
	r.giveBack(ctx) // the child, not this run, makes the next calls
	run, err := r.waitChild(ctx, key, childID)
	if err != nil {
		return callResult{err: err}
	}
	var output string
	isError := false
	switch run.State {
	case store.Paused:
		return callResult{childPause: r.surfacedPause(ctx, rd, key, c, run)}
	case store.Completed:
		output = string(run.Result)
		if ct.info.textOut {
			var s string
			if json.Unmarshal(run.Result, &s) == nil {
				output = s
			}
		}
	case store.Failed:
		if r.budget != nil && strings.HasPrefix(run.Reason, "budget exceeded: ") && !r.lifted.Load() {
			// The tree's budget ends the whole tree, not just the child.
			return callResult{abort: run.Reason}
		}
		output, isError = "error: swarm "+ct.swarm+" failed: "+run.Reason, true
	default:
		output, isError = "error: swarm "+ct.swarm+" was stopped: "+run.Reason, true
	}
	u := run.Usage
	return r.settleChild(ctx, rd, key, c, ct, childID, output, isError, &u)
}

// surfacedPause is the paused event this run records when its child waits.
func (r *runner) surfacedPause(ctx context.Context, rd *round, key string, c model.ToolCall, child store.Run) *Event {
	ev := &Event{Type: EventPaused, Key: key + "/pause/" + strconv.FormatInt(child.LastSeq, 10), Agent: rd.ap.name, Turn: rd.turn,
		CallID: c.ID, Child: child.ID, Waiting: child.ID, Reason: child.Reason}
	if p, ok := r.rt.lastPause(ctx, child.ID, child.LastSeq); ok {
		ev.Context = p.Context
		if p.Waiting != "" {
			ev.Waiting = p.Waiting
		}
		if isBudgetPause(p) {
			ev.Kind = budgetKind
		}
	}
	return ev
}

// settleChild records a swarm handoff's outcome, once the HandoffResult
// guardrails have checked it, adding the child's usage to this run's.
// childID is empty when no child run was created.
func (r *runner) settleChild(ctx context.Context, rd *round, key string, c model.ToolCall, ct *childTarget, childID, output string, isError bool, usage *model.Usage) callResult {
	output, isError, stop, pause := r.guardResult(ctx, rd.ap, key, guardrail.HandoffResult, c, ct.swarm, output, isError)
	if stop != nil {
		return *stop
	}
	evs, u := rd.settle(Event{Type: EventHandoffReturned, Key: key, Agent: rd.ap.name, Turn: rd.eventTurn(), Target: ct.swarm, Child: childID,
		Tool: c.Name, CallID: c.ID, Output: output, IsError: isError, Usage: usage}, store.Update{Agent: rd.ap.name})
	r.mu.Lock()
	defer r.mu.Unlock()
	total := r.usage
	if usage != nil {
		total = total.Add(*usage)
		u.Usage = &total
	}
	if err := r.append(ctx, evs, u, rd.ap); err != nil {
		return callResult{err: err}
	}
	r.usage = total
	return callResult{output: output, isError: isError, childPause: pause}
}

// waitChild waits until the child run is paused or finished. It drives the
// child here when nobody else does (after a crash, or a resume), and passes
// on an answer this run recorded for the child's pause.
func (r *runner) waitChild(ctx context.Context, key, childID string) (store.Run, error) {
	for {
		w := r.rt.notes.wait(childID)
		run, err := r.rt.store.Get(ctx, childID)
		if err != nil {
			r.rt.notes.done(childID, w)
			if ctx.Err() != nil {
				return run, context.Cause(ctx)
			}
			return run, &seam.Interrupted{Err: err}
		}
		switch {
		case run.State.Terminal():
			r.rt.notes.done(childID, w)
			return run, nil
		case run.State == store.Paused:
			rec, answered := r.recorded[key+"/pause/"+strconv.FormatInt(run.LastSeq, 10)+"/resumed"]
			var ev Event
			switch {
			case answered:
				// This run was resumed with an answer for the child that
				// has not reached it yet.
				if ev, err = decodeEvent(rec); err != nil {
					r.rt.notes.done(childID, w)
					return run, &seam.Interrupted{Err: err}
				}
			case r.budgetLiftedBelow(ctx, childID, run.LastSeq):
				// The child waits on the tree's budget, which a resume
				// elsewhere in the tree lifted.
				ev.Message = "The budget was lifted."
			default:
				r.rt.notes.done(childID, w)
				return run, nil
			}
			// The answer's parts (by reference to this run's blobs) go
			// down with it: the child refers to the blobs, which are
			// not copied, and journals them with its resumed event.
			var parts []model.Part
			if parts, err = r.rt.storeParts(ctx, childID, ev.Parts); err != nil {
				r.rt.notes.done(childID, w)
				return run, &seam.Interrupted{Err: fmt.Errorf("pass the answer's parts to run %s: %w", childID, err)}
			}
			// The answer is for the pause seen here: if the child was
			// answered directly and paused again meanwhile, the store
			// refuses it rather than apply it to the new pause.
			_, err = r.rt.store.Send(ctx, childID, store.Message{Kind: store.MsgResume, Text: ev.Message, Time: time.Now(), Pause: run.LastSeq, Parts: parts})
			if err != nil && !errors.Is(err, store.ErrInvalidState) {
				r.rt.notes.done(childID, w)
				return run, &seam.Interrupted{Err: err}
			}
			r.rt.notes.done(childID, w)
			r.rt.adoptChild(ctx, childID)
			continue
		default:
			r.rt.adoptRun(ctx, run)
		}
		t := time.NewTimer(r.rt.cfg.PollInterval)
		select {
		case <-w.ch:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		r.rt.notes.done(childID, w)
		if ctx.Err() != nil {
			return run, context.Cause(ctx)
		}
	}
}

// budgetLiftedBelow reports whether paused child run id waits on a budget
// (whose newest record is lastSeq) that has been lifted since.
func (r *runner) budgetLiftedBelow(ctx context.Context, id string, lastSeq int64) bool {
	if r.budget == nil {
		return false
	}
	if p, ok := r.rt.lastPause(ctx, id, lastSeq); !ok || !isBudgetPause(p) {
		return false
	}
	lifted, err := r.liftedNow(ctx)
	return err == nil && lifted
}

// adoptChild drives run id (a child run or a conversation) here if it is
// runnable and nobody drives it.
func (rt *Runtime) adoptChild(ctx context.Context, id string) {
	run, err := rt.store.Get(ctx, id)
	if err == nil {
		rt.adoptRun(ctx, run)
	}
}

func (rt *Runtime) adoptRun(ctx context.Context, run store.Run) {
	if run.State != store.Running {
		return
	}
	rt.mu.RLock()
	_, active := rt.active[run.ID]
	rt.mu.RUnlock()
	if active || (run.Owner != "" && run.Owner != rt.owner && time.Now().Before(run.LeaseUntil)) {
		return
	}
	if err := rt.Drive(ctx, run.ID); err != nil && !errors.Is(err, store.ErrLeased) && !errors.Is(err, store.ErrInvalidState) {
		rt.log.Warn("cannot drive child run", "run", run.ID, "err", err)
	}
}

// lastPause returns the newest paused event of run id, whose newest
// record is lastSeq (as the caller read the run's row).
func (rt *Runtime) lastPause(ctx context.Context, id string, lastSeq int64) (Event, bool) {
	// The pause is most often the newest record: read the journal from
	// its end, further back each time.
	end := lastSeq
	for span := int64(16); end > 0; span *= 8 {
		after := max(end-span, 0)
		recs, err := rt.store.Read(ctx, id, after, int(end-after))
		if err != nil {
			return Event{}, false
		}
		for i := len(recs) - 1; i >= 0; i-- {
			if recs[i].Type == string(EventPaused) {
				ev, err := decodeEvent(recs[i])
				return ev, err == nil
			}
		}
		end = after
	}
	return Event{}, false
}

// stopChildren stops the unfinished child runs of a run that has ended.
func (r *runner) stopChildren(ctx context.Context, why string) {
	if !r.spawned.Load() {
		return
	}
	kids, err := r.rt.store.List(ctx, store.Filter{Parent: r.id})
	if err != nil {
		r.rt.log.Warn("cannot list child runs", "run", r.id, "err", err)
		return
	}
	for _, k := range kids {
		if k.State.Terminal() {
			continue
		}
		if err := r.rt.Stop(ctx, k.ID, why); err != nil && !errors.Is(err, store.ErrInvalidState) {
			r.rt.log.Warn("cannot stop child run", "run", k.ID, "err", err)
		}
	}
}

// resumeKey is the step key under which the answer to a pause is recorded.
func resumeKey(ev Event) string {
	if ev.Child != "" || ev.CallID == "" {
		return ev.Key + "/resumed"
	}
	return "t" + strconv.Itoa(ev.Turn) + "/tool/" + ev.CallID
}
