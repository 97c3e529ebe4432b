package swarm

import (
	"context"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
)

// The round primitives of a Driver: a model call that journals what the
// strategy gave it in the same append, and a round of tool calls that
// ends with its turn.

// ModelStep implements strategy.Driver.ModelStep.
func (d *seamDriver) ModelStep(ctx context.Context, key string, msgs []model.Message, stepEvents []Event, ackMail int64, outside bool) (*model.Response, error) {
	return d.model(ctx, "ModelStep", key, msgs, stepEvents, ackMail, outside)
}

// model is ModelStep as primitive what.
func (d *seamDriver) model(ctx context.Context, what, key string, msgs []model.Message, stepEvents []Event, ackMail int64, outside bool) (*model.Response, error) {
	if err := d.takeStep(key, what, kindModel); err != nil {
		return nil, err
	}
	var x *stepExtra
	if len(stepEvents) > 0 || ackMail != 0 || outside {
		x = &stepExtra{ackMail: ackMail, outside: outside}
		evs, err := d.fresh(stepEvents)
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

// Round implements strategy.Driver.Round.
func (d *seamDriver) Round(ctx context.Context, key string, calls []model.ToolCall) ([]seam.ToolResult, error) {
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

// JournalWith adds evs (a []Event) to be journaled together with the
// result of the call ci describes (see strategy.JournalWith).
func (ci *callInfo) JournalWith(ackMail int64, evs any) {
	for _, ev := range evs.([]Event) {
		ev.Key = ci.step + "/" + string(ev.Type)
		ci.extra = append(ci.extra, ev)
	}
	if ackMail > 0 {
		ci.ackMail = ackMail
	}
}
