package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// simpleLoop is the default strategy (seed 001's simple agent loop): the
// orchestrator's tool-calling loop, which ends when the orchestrator
// completes, fails or pauses the run. The same loop runs every agent a
// model hands off to, nested under the handoff's step key.
type simpleLoop struct{}

func (simpleLoop) drive(ctx context.Context, r *runner) outcome {
	return r.loop(ctx, r.plan.root, "", r.info.inputText(r.input))
}

// loop runs one agent's tool-calling loop on input until it answers (an
// agent), completes or fails (the orchestrator), pauses, or is interrupted.
func (r *runner) loop(ctx context.Context, ap *agentPlan, path, input string) outcome {
	msgs := make([]model.Message, 1, 8)
	// The input's attachments are the task's: the orchestrator sees them
	// with its first message, and an agent it hands off to those of its
	// caller's conversation (parts_delegate.go).
	msgs[0] = model.Message{Role: model.RoleUser, Content: input, Parts: r.handParts(ctx)}
	first := 1
	if s := r.restored(snapSimple); s != nil && path == "" {
		msgs, first = slices.Clone(s.Msgs), s.Next
	}
	for turn := first; ; turn++ {
		if ap.compaction != nil {
			msgs = r.dropCompacted(ap, path, msgs)
		}
		if path == "" && turn > first {
			// A boundary: the rounds before are journaled (the one
			// before, by this drive).
			if seq, live, ok := r.boundary("t"+strconv.Itoa(turn-1)+"/done", true); ok {
				r.checkpoint(ctx, snapSimple, seq, live, func(s *runSnap) { s.Next, s.Msgs = turn, msgs })
			}
		}
		if turn > ap.maxTurns {
			return outcome{kind: failed, reason: fmt.Sprintf("%s exceeded its max turns (%d)", ap.name, ap.maxTurns)}
		}
		tkey := path + "t" + strconv.Itoa(turn)
		resp, err := r.modelStep(ctx, ap, tkey, turn, msgs)
		if err != nil {
			if out, stop := stepFailed(ctx, err); stop {
				return out
			}
			return outcome{kind: failed, reason: err.Error()}
		}
		msgs = append(msgs, resp.Message)
		calls := resp.Message.ToolCalls
		if len(calls) == 0 {
			if !ap.root {
				return outcome{kind: answered, text: resp.Message.Content}
			}
			res, verr := r.info.textToResult(resp.Message.Content)
			if verr == nil {
				return outcome{kind: completed, result: res, turnKey: tkey, turn: turn, agent: ap.name}
			}
			how := ". Reply with only a JSON value matching this schema: "
			if ap.builtins {
				how = ". Reply with only a JSON value matching this schema, or call the complete tool with it: "
			}
			msgs = append(msgs, model.Message{Role: model.RoleUser, Content: "Your reply is not a valid result: " + verr.Error() + how + string(r.info.outSchema)})
			if err := r.turnDone(ctx, ap, tkey, turn); err != nil {
				return outcome{kind: interrupted, err: err}
			}
			continue
		}
		rd := &round{ap: ap, tkey: tkey, turn: turn, merge: true}
		// A handoff passes on the parts this agent has seen.
		results := r.execCalls(withHandParts(ctx, seam.ConvParts(msgs)), rd, calls)
		if ctx.Err() != nil {
			return outcome{kind: interrupted, err: context.Cause(ctx)}
		}
		failAt, completeAt, pauseAt, belowAt, abortAt := -1, -1, -1, -1, -1
		for i, res := range results {
			if res.err != nil {
				return outcome{kind: interrupted, err: res.err}
			}
			switch {
			case res.abort != "" && abortAt < 0:
				abortAt = i
			case (res.unwound || res.childPause != nil) && belowAt < 0:
				belowAt = i
			case res.fail && failAt < 0:
				failAt = i
			case res.complete != nil && completeAt < 0:
				completeAt = i
			case res.pause && pauseAt < 0:
				pauseAt = i
			}
		}
		switch {
		case abortAt >= 0:
			return outcome{kind: failed, reason: results[abortAt].abort, abort: true}
		case failAt >= 0:
			return outcome{kind: failed, reason: results[failAt].output, turnKey: tkey, turn: turn, agent: ap.name}
		case completeAt >= 0:
			return outcome{kind: completed, result: results[completeAt].complete, turnKey: tkey, turn: turn, agent: ap.name}
		case belowAt >= 0:
			// A pause below: a child swarm (or one of its descendants)
			// waits for a human, and so does this run.
			var u store.Update
			if ap.root {
				u.Turn = turn
			}
			out, _ := r.below(ctx, ap, results[belowAt:belowAt+1], u)
			return out
		case pauseAt >= 0:
			c := calls[pauseAt]
			var args struct{ Reason, Context string }
			_ = json.Unmarshal(c.Arguments, &args)
			ev := Event{Type: EventPaused, Key: tkey + "/pause/" + c.ID, Agent: ap.name, Turn: turn, CallID: c.ID, Reason: args.Reason, Context: args.Context}
			if err := r.append(ctx, []Event{ev}, store.Update{State: store.Paused, Reason: args.Reason, Turn: turn}, ap); err != nil {
				return outcome{kind: interrupted, err: err}
			}
			return outcome{kind: paused}
		}
		for i, c := range calls {
			msgs = append(msgs, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: results[i].output, IsError: results[i].isError, Parts: results[i].parts})
		}
		if !rd.ended.Load() {
			if err := r.turnDone(ctx, ap, tkey, turn); err != nil {
				return outcome{kind: interrupted, err: err}
			}
		}
	}
}
