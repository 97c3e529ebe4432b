package swarm

import (
	"context"

	"github.com/swarmrt/swarm/model"
)

// The round primitives of a Driver: a model call that journals what the
// strategy gave it in the same append, and a round of tool calls that
// ends with its turn.

// Step is what ModelStep journals with a new model response, in the same
// append: what the strategy put in the request that must be consumed
// exactly once.
type Step struct {
	// Events are journaled before the response (the mails the request
	// carried, say), each with its own key.
	Events []Event
	// AckMail acknowledges the run's mailbox up to this mail sequence
	// number (see Mailbox): the mails the request carried are consumed
	// when, and only when, the response is journaled. A crash before
	// delivers them again; none is consumed twice.
	AckMail int64
}

// ModelStep is Model with s: the response is journaled under key+"/model"
// together with s.Events and the acknowledgement of s.AckMail (in the
// Driver's turn: see AtTurn). A replay
// returns the journaled response and journals nothing (s is then
// ignored: check RecordedEvent(key+"/model") to tell).
func (d *Driver) ModelStep(ctx context.Context, key string, msgs []model.Message, s Step) (*model.Response, error) {
	if err := d.checkKey(key); err != nil {
		return nil, err
	}
	var x *stepExtra
	if len(s.Events) > 0 || s.AckMail != 0 {
		x = &stepExtra{ackMail: s.AckMail}
		evs, err := d.fresh(s.Events)
		if err != nil {
			return nil, err
		}
		x.events = evs
	}
	resp, err := d.r.modelStepWith(ctx, d.root(), key, d.turn, msgs, x)
	if err != nil {
		return nil, d.stepError(ctx, err)
	}
	return resp, nil
}

// Round runs calls, the tool calls of the response ModelStep journaled
// under key, like Tools, and ends the round, the Driver's turn (see
// AtTurn): its turn_completed event is journaled under key+"/done" with
// the last result (or after them, when a result was replayed). The built-in tools complete, pause
// and fail are refused as by Tools when the run's agent is offered them;
// else a call of one is an unknown tool, answered with an error result.
func (d *Driver) Round(ctx context.Context, key string, calls []model.ToolCall) ([]ToolResult, error) {
	rd, out, err := d.runCalls(ctx, "Round", key, calls, true)
	if err != nil {
		return nil, err
	}
	if !rd.ended.Load() {
		if err := d.r.turnDone(ctx, rd.ap, key, d.turn); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// JournalWith adds evs to be journaled together with the result of the
// tool call executing in ctx, in the same append (each key is the call's
// step key followed by "/" and the event's type), and, with ackMail above
// zero, acknowledges the run's mailbox up to that mail: a tool with an
// effect outside the journal (a mail sent, a task claimed) records what it
// did with its result, so that the two are journaled or lost together.
// Outside a tool call it does nothing.
func JournalWith(ctx context.Context, ackMail int64, evs ...Event) {
	ci, ok := ctx.Value(ctxKey{}).(*callInfo)
	if !ok {
		return
	}
	for _, ev := range evs {
		ev.Key = ci.step + "/" + string(ev.Type)
		ci.extra = append(ci.extra, ev)
	}
	if ackMail > 0 {
		ci.ackMail = ackMail
	}
}
