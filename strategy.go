package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// A strategy is what a run does (seed 001's loop strategies); the runner
// in engine.go is how it is made durable. The engine's own is the
// orchestrator's tool-calling loop (strategy_simple.go, the default).
// Every other kind of run is written on the public seam, package strategy,
// in a package of its own: conversation (one turn per user message), team,
// adaptive (MagenticOne's ledgers, stall counter and replans), workflow.
// Package strategy sits above this one (its primitives name Event, Agent
// and Runtime); its Driver forwards each primitive to the engine's
// seamDriver (driver*.go), and it reaches the engine only through
// internal/seam, whose Strategy the engine drives (seamStrategy).
//
// A strategy is straight-line Go over the runner's durable primitives. Each
// primitive looks its step key up in the journal before acting, so a
// strategy written naively survives a crash at any record with no completed
// step redone: after a restart the same code runs again, gets the recorded
// outcomes back, and continues at the first step without one. The rule for
// a strategy is only that its step keys are a function of what it got back
// from earlier primitives (never of the clock or a random number).
//
// The primitives:
//
//   - r.modelStep(ctx, ap, tkey, turn, msgs): call a model as agent ap; the
//     response is journaled under tkey+"/model" (retries, budget and usage
//     included).
//   - r.execCalls(ctx, rd, calls): execute a round of tool calls of a model
//     response, in parallel, each outcome journaled under tkey+"/tool/<id>";
//     handoffs to agents (their own loop, nested under the call's key) and
//     to swarms (child runs) happen here.
//   - r.delegate(ctx, ap, tkey, turn, target, request): hand a request to an
//     agent or swarm that ap may hand off to, when the strategy rather than
//     a model's tool call chooses the target.
//   - r.await(ctx, ap, pause, u): wait for a message to the run. The run is
//     paused and releases its lease; no goroutine waits. A resume is an inbox
//     message that makes the run runnable again, and await returns it.
//   - r.record(ctx, ev, u): journal a strategy's own record (a ledger, a
//     counter); on replay it returns what was recorded.
//   - return an outcome: the runner records how the run ended (finish).
type strategy interface {
	drive(ctx context.Context, r *runner) outcome
}

// strategyFor picks the strategy of a run of info with spec.
func strategyFor(info *defInfo, spec Spec) strategy {
	switch {
	case spec.Strategy != nil:
		return seamStrategy{spec.Strategy.WrapWithStrategyOf()}
	}
	return simpleLoop{}
}

// record journals a strategy's own record ev (its Key set) with u applied
// to the run's row, unless the journal already holds a record under that
// key: then it returns the recorded event, so that a replay continues with
// exactly what the first attempt recorded.
func (r *runner) record(ctx context.Context, ev Event, u store.Update) (Event, error) {
	if rec, ok := r.recorded[ev.Key]; ok {
		got, err := decodeEvent(rec)
		if err != nil {
			return Event{}, &seam.Interrupted{Err: err}
		}
		return got, nil
	}
	if err := r.append(ctx, []Event{ev}, u, r.plan.root); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// await returns the answer to pause (an EventPaused with Key and Reason
// set) once the journal holds it. Until then it records the pause (once),
// sets the run's row paused with u, and returns ok false: the strategy
// then returns a paused outcome and the runner releases the run. The
// answer arrives as a resume in the run's inbox; load journals it under
// pause.Key+"/resumed" and drives the run again.
func (r *runner) await(ctx context.Context, ap *agentPlan, pause Event, u store.Update) (msg string, parts []model.Part, ok bool, err error) {
	if rec, ok := r.recorded[pause.Key+"/resumed"]; ok {
		ev, err := decodeEvent(rec)
		if err != nil {
			return "", nil, false, &seam.Interrupted{Err: err}
		}
		return ev.Message, ev.Parts, true, nil
	}
	var evs []Event
	if _, waiting := r.recorded[pause.Key]; !waiting {
		evs = []Event{pause}
	}
	u.State, u.Reason = store.Paused, pause.Reason
	return "", nil, false, r.pauseWith(ctx, evs, u, ap)
}

// delegate hands request to target, an agent or swarm that ap may hand off
// to, as if ap's model had called the handoff tool with call id "next" in
// round tkey: the handoff is announced, run, and its outcome journaled
// under tkey+"/tool/next". A replay finds both and runs nothing again.
// pausedAt is a pause a strategy's drive reached: the events and the
// update that journal it and mark the run paused.
type pausedAt struct {
	evs []Event
	u   store.Update
	ap  *agentPlan
}

// pauseWith journals evs and marks the run paused with u. A strategy's
// drive (deferPause) keeps the first such pause until Drive returns and
// journals it then (finish): until then the run keeps its lease, so that
// its other branches of Parallel journal what they do, and a Drive that
// fails after all, or completes after withdrawing the question (see
// swallowed), leaves no question behind. A crash before
// the end loses only the pause, which the drive after it reaches again.
func (r *runner) pauseWith(ctx context.Context, evs []Event, u store.Update, ap *agentPlan) error {
	if !r.deferPause {
		return r.append(ctx, evs, u, ap)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pause == nil {
		r.pause = &pausedAt{evs: evs, u: u, ap: ap}
	}
	r.awaited(ctx, u)
	return nil
}

// pendingAwait is a pause a strategy's drive reached: a primitive
// returned an error wrapping ErrAwaiting to the strategy.
type pendingAwait struct {
	// ctx is the context of the step that reached it: once it is done,
	// the strategy stopped the branch that waits (a race's loser), which
	// withdraws the question.
	ctx    context.Context
	reason string
}

// awaited notes a pause that a strategy's drive reached with the row
// update u: deferred (pauseWith) or journaled at once (a guardrail's, a
// budget's, AwaitMail's). Appends call it holding r.mu or not.
func (r *runner) awaited(ctx context.Context, u store.Update) {
	if !r.deferPause || u.State != store.Paused {
		return
	}
	r.awaitMu.Lock()
	defer r.awaitMu.Unlock()
	r.awaits = append(r.awaits, pendingAwait{ctx, u.Reason})
}

// swallowed returns the reason of a pause the drive reached that is still
// pending when Drive returns a result: the strategy dropped the error
// wrapping ErrAwaiting that said so, and the run would complete without
// the answer it waits for.
func (r *runner) swallowed() (string, bool) {
	r.awaitMu.Lock()
	defer r.awaitMu.Unlock()
	for _, a := range r.awaits {
		if a.ctx.Err() == nil {
			return a.reason, true
		}
	}
	return "", false
}

func (r *runner) delegate(ctx context.Context, ap *agentPlan, tkey string, turn int, target, request string) callResult {
	tool := handoffPre + target
	_, isAgent := ap.handoffs[tool]
	if _, isSwarm := ap.children[tool]; !isAgent && !isSwarm {
		return callResult{output: ap.notATarget(target), isError: true}
	}
	args, _ := json.Marshal(map[string]string{"request": request})
	if ct, ok := ap.children[tool]; ok && !ct.info.textIn && json.Valid([]byte(request)) {
		// A swarm whose input is not text takes request as its input.
		args, _ = json.Marshal(map[string]json.RawMessage{"input": json.RawMessage(request)})
	}
	c := model.ToolCall{ID: "next", Name: tool, Arguments: args}
	calls := []model.ToolCall{c}
	if _, ok := r.recorded[tkey+"/call/"+c.ID]; !ok {
		evs, agent := r.announce(ctx, ap, tkey, calls, nil)
		rowTurn := 0
		for i := range evs {
			evs[i].Turn = turn
		}
		if ap.root {
			rowTurn = turn
		}
		if err := r.append(ctx, evs, store.Update{Agent: agent, Turn: rowTurn}, ap); err != nil {
			return callResult{err: err}
		}
	}
	return r.execCalls(ctx, &round{ap: ap, tkey: tkey, turn: turn, stamp: true}, calls)[0]
}

// notATarget says that target is not one ap may hand off to, and which
// are.
func (ap *agentPlan) notATarget(target string) string {
	var names []string
	for _, def := range ap.toolDefs {
		if name, ok := strings.CutPrefix(def.Name, handoffPre); ok {
			names = append(names, name)
		}
	}
	return fmt.Sprintf("error: %s cannot hand off to %q; its targets are: %s", ap.name, target, strings.Join(names, ", "))
}

// below looks at a round's results for what stops the strategy: an
// interruption, a budget exceeded below, or a pause below (a child swarm,
// or one of its descendants, waits for a human, and so does this run; u is
// the row update to record that pause with).
func (r *runner) below(ctx context.Context, ap *agentPlan, results []callResult, u store.Update) (outcome, bool) {
	for _, res := range results {
		switch {
		case res.err != nil:
			return outcome{kind: interrupted, err: res.err}, true
		case res.abort != "":
			return outcome{kind: failed, reason: res.abort, abort: true}, true
		}
	}
	for _, res := range results {
		if res.childPause == nil && !res.unwound {
			continue
		}
		if ev := res.childPause; ev != nil {
			u.State, u.Reason = store.Paused, ev.Reason
			if err := r.pauseWith(ctx, []Event{*ev}, u, ap); err != nil {
				return outcome{kind: interrupted, err: err}, true
			}
		}
		return outcome{kind: paused}, true
	}
	return outcome{}, false
}

// stepFailed turns the error of a model step into the outcome that ends a
// strategy, or ok false for a failure of the model itself, which the
// strategy handles (the simple loop fails the agent; a conversation fails
// the turn).
func stepFailed(ctx context.Context, err error) (outcome, bool) {
	var be *budgetError
	var ge *guardError
	switch {
	case ctx.Err() != nil || seam.IsInterrupted(err):
		return outcome{kind: interrupted, err: err}, true
	case errors.Is(err, errBudgetPaused), errors.Is(err, errGuardPaused):
		return outcome{kind: paused}, true
	case errors.As(err, &be):
		return outcome{kind: failed, reason: be.reason, abort: true}, true
	case errors.As(err, &ge):
		return outcome{kind: failed, reason: ge.reason, abort: true}, true
	}
	return outcome{}, false
}
