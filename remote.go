package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Runs driven by another engine (package temporal, see seam.Remote): the
// run's row and journal are in this runtime's store, leased to the other
// engine's owner for seam.HeldLease, so that the workers of this runtime (and
// of every runtime on the store) never claim it; the other engine drives
// the strategy and takes each step here, on a runner loaded from the
// journal, so that model calls, tools, guardrails, usage, budgets and the
// journal's event shapes are the engine's own.

func init() {
	seam.Remote.Create = remoteCreate
	seam.Remote.Step = remoteStep
	seam.Remote.Pause = remotePause
	seam.Remote.Answer = remoteAnswer
	seam.Remote.Finish = remoteFinish
	seam.Remote.Handoff = remoteHandoff
}

// errRemoteEnded is returned for a step of a run that has ended.
var errRemoteEnded = errors.New("the run has ended")

// loadRemote loads run id, held by owner, for a step.
func loadRemote(ctx context.Context, rtv any, id, owner string) (*runner, error) {
	rt, ok := rtv.(*Runtime)
	if !ok || rt == nil {
		return nil, fmt.Errorf("%w: not a runtime", ErrInvalid)
	}
	run, err := rt.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if run.Owner != owner {
		return nil, fmt.Errorf("run %s is not driven by %s (its owner is %q): %w", id, owner, run.Owner, store.ErrLeaseLost)
	}
	info, err := rt.info(run.Swarm)
	if err != nil {
		return nil, err
	}
	r := &runner{rt: rt, id: id, info: info, remote: true, calls: map[string]int{}, deferPause: true,
		lease: store.Lease{RunID: id, Owner: owner, Epoch: run.Epoch}}
	out, done := r.load(ctx)
	switch {
	case !done:
		return r, nil
	case out.kind == interrupted:
		return nil, out.err
	case out.kind == failed:
		return nil, seam.NewFailure(out.reason, true)
	}
	return nil, errRemoteEnded
}

// remoteCreate implements seam.Remote.Create.
func remoteCreate(ctx context.Context, rtv any, swarmID, id, parent string, input json.RawMessage, owner string) error {
	rt, ok := rtv.(*Runtime)
	if !ok || rt == nil || owner == "" {
		return fmt.Errorf("%w: not a runtime or no owner", ErrInvalid)
	}
	if err := checkRunID(id); err != nil {
		return err
	}
	if run, err := rt.store.Get(ctx, id); err == nil {
		// Created already (by Start, or an earlier attempt).
		if run.Swarm != swarmID {
			return fmt.Errorf("run %s exists and belongs to swarm %s: %w", id, run.Swarm, store.ErrExists)
		}
		return nil
	}
	info, err := rt.info(swarmID)
	if err != nil {
		return err
	}
	nr := newRun{info: info, input: input, id: id, explicitID: true, owner: owner, newTree: parent == ""}
	if info.inParts {
		// The input's parts, large ones by blob reference, as Start keeps
		// them.
		if nr.input, nr.parts, err = rt.inputParts(input); err != nil {
			return fmt.Errorf("swarm %s: %w", swarmID, err)
		}
	}
	if parent != "" {
		pr, err := loadRemote(ctx, rt, parent, owner)
		if err != nil {
			return fmt.Errorf("parent run %s: %w", parent, err)
		}
		nr.parent, nr.depth, nr.budget, nr.root, nr.deadline = parent, pr.depth+1, pr.budget, pr.root, pr.deadline
	} else if nr.budget = rt.treeBudget(nil, false); nr.budget != nil && nr.budget.WallTime > 0 {
		nr.deadline = time.Now().Add(nr.budget.WallTime)
	}
	nr.newTree = false // the budget is complete
	_, err = rt.create(ctx, nr)
	return err
}

// remoteStep implements seam.Remote.Step.
func remoteStep(ctx context.Context, rtv any, id, owner string, turn int, fn func(ctx context.Context, d any) error) error {
	r, err := loadRemote(ctx, rtv, id, owner)
	if err != nil {
		return err
	}
	// What the step reserved of the tree's pool and did not make goes
	// back: the next step is another runner.
	defer r.giveBack(ctx)
	if err := fn(ctx, &seamDriver{r: r, turn: turn}); err != nil {
		return err
	}
	if len(r.final) > 0 {
		// A final answer's response, which the engine journals with
		// the run's end: the end is another step here.
		if err := r.append(ctx, r.final, r.finalUpdate, r.plan.root); err != nil {
			return err
		}
	}
	r.mu.Lock()
	p := r.pause
	r.mu.Unlock()
	if p != nil {
		return fmt.Errorf("%w: a step paused the run (a guardrail or a limit asking a human), which a run driven by another engine cannot do", seam.ErrAwaiting)
	}
	return nil
}

// remotePause implements seam.Remote.Pause.
func remotePause(ctx context.Context, rtv any, id, owner string, turn int, key string, q seam.Question) error {
	r, err := loadRemote(ctx, rtv, id, owner)
	if err != nil {
		return err
	}
	if _, ok := r.recorded[key]; ok {
		return nil
	}
	ev := Event{Type: EventPaused, Key: key, Agent: r.plan.root.name, Turn: turn, Reason: q.Reason, Context: q.Context, Kind: q.Kind}
	// The row stays Running, leased to owner (a paused row would be
	// released, and a resume sent to it claimable by any worker): its
	// reason shows the question.
	return r.append(ctx, []Event{ev}, store.Update{Reason: q.Reason}, r.plan.root)
}

// remoteAnswer implements seam.Remote.Answer.
func remoteAnswer(ctx context.Context, rtv any, id, owner, key, message string, parts []model.Part) error {
	r, err := loadRemote(ctx, rtv, id, owner)
	if err != nil {
		return err
	}
	k := key + "/resumed"
	if _, ok := r.recorded[k]; ok {
		return nil
	}
	ev := Event{Type: EventResumed, Key: k, Agent: r.info.id, Message: message, Parts: parts}
	return r.append(ctx, []Event{ev}, store.Update{ClearReason: true}, r.plan.root)
}

// remoteFinish implements seam.Remote.Finish.
func remoteFinish(ctx context.Context, rtv any, id, owner, status, reason string, result json.RawMessage) error {
	r, err := loadRemote(ctx, rtv, id, owner)
	if errors.Is(err, errRemoteEnded) {
		return nil
	}
	if err != nil {
		return err
	}
	var out outcome
	switch status {
	case "completed":
		res, verr := r.info.output(result)
		if verr != nil {
			out = outcome{kind: failed, reason: "invalid result: " + verr.Error()}
		} else {
			out = outcome{kind: completed, result: res}
		}
	case "failed":
		out = outcome{kind: failed, reason: reason}
	case "stopped":
		out = outcome{kind: interrupted, err: &stopCause{reason: reason}}
	default:
		return fmt.Errorf("%w: unknown final status %q", ErrInvalid, status)
	}
	return r.finish(ctx, out)
}

func init() { seam.RemoteDescribe = remoteDescribe }

// remoteDescribe implements seam.RemoteDescribe.
func remoteDescribe(rtv any, swarmID string, input json.RawMessage) (seam.RemotePlan, error) {
	rt, ok := rtv.(*Runtime)
	if !ok || rt == nil {
		return seam.RemotePlan{}, fmt.Errorf("%w: not a runtime", ErrInvalid)
	}
	info, err := rt.info(swarmID)
	if err != nil {
		return seam.RemotePlan{}, err
	}
	if len(input) == 0 {
		input = json.RawMessage(`null`)
	}
	if !json.Valid(input) {
		return seam.RemotePlan{}, fmt.Errorf("%w: swarm %s: input is not valid JSON", ErrInvalidInput, swarmID)
	}
	p, err := rt.buildPlan(info, input, nil, nil, nil)
	if err != nil {
		return seam.RemotePlan{}, err
	}
	if err := rt.checkStrategy(p, info, input); err != nil {
		return seam.RemotePlan{}, err
	}
	out := seam.RemotePlan{
		Describer: &seamDriver{r: &runner{rt: rt, plan: p, info: info, input: input}, checking: true},
		MaxTurns:  p.root.maxTurns, Builtins: p.root.builtins, SwarmHandoffs: len(p.root.children) > 0,
	}
	if s, ok := p.strategy.(seamStrategy); ok {
		out.Strategy = s.s
	}
	return out, nil
}

// remoteHandoff implements seam.Remote.Handoff, in the shapes of the
// engine's delegation to a swarm.
func remoteHandoff(ctx context.Context, rtv any, id, owner string, turn int, key, target, child string, started bool, text string, isError bool) error {
	r, err := loadRemote(ctx, rtv, id, owner)
	if err != nil {
		return err
	}
	ev := Event{Type: EventHandoffStarted, Key: key + "/call/next", Agent: r.plan.root.name, Turn: turn, Target: target, Child: child, Request: text}
	if !started {
		ev = Event{Type: EventHandoffReturned, Key: key + "/tool/next", Agent: r.plan.root.name, Turn: turn, Target: target, Child: child, Output: text, IsError: isError}
	}
	if _, ok := r.recorded[ev.Key]; ok {
		return nil
	}
	return r.append(ctx, []Event{ev}, store.Update{}, r.plan.root)
}
