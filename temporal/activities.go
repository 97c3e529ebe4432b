package temporal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// The activities' names.
const (
	actCreate  = "swarm.Create"
	actStep    = "swarm.Step"
	actPause   = "swarm.Pause"
	actAnswer  = "swarm.Answer"
	actFinish  = "swarm.Finish"
	actHandoff = "swarm.Handoff"
)

// The application error types a step's error crosses the activity
// boundary as (none of them retried).
const (
	errFailure  = "SwarmFailure"      // a failed step
	errFinal    = "SwarmFinalFailure" // a failure that ends the run
	errInvalid  = "SwarmInvalid"      // a strategy's or definition's mistake
	errAwaiting = "SwarmAwaiting"     // a step that would pause the run
	errLease    = "SwarmLeaseLost"    // the run is not the engine's
)

func newRunID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "run_" + hex.EncodeToString(b[:])
}

// activities are the engine's activities.
type activities struct{ e *Engine }

// createInput is the input of actCreate.
type createInput struct {
	Swarm, RunID, Parent string
	Input                json.RawMessage
}

// Create stores the run's row and start record (once).
func (a *activities) Create(ctx context.Context, in createInput) error {
	return activityError(seam.Remote.Create(ctx, a.e.rt, in.Swarm, in.RunID, in.Parent, in.Input, a.e.owner))
}

// The steps actStep takes.
const (
	opModel      = "model"
	opAsk        = "ask"
	opTools      = "tools"
	opRound      = "round"
	opDelegate   = "delegate"
	opCheckInput = "check_input"
)

// stepInput is the input of actStep: one primitive of the run's driver.
type stepInput struct {
	RunID   string
	Turn    int
	Op      string
	Key     string
	Msgs    []model.Message  `json:",omitempty"`
	Calls   []model.ToolCall `json:",omitempty"`
	Events  []swarm.Event    `json:",omitempty"`
	AckMail int64            `json:",omitempty"`
	Outside bool             `json:",omitempty"`
	Ask     seam.AskOptions  `json:",omitzero"`
	Target  string           `json:",omitempty"`
	Text    string           `json:",omitempty"`
	Parts   []model.Part     `json:",omitempty"`
}

// stepOutput is what a step returns.
type stepOutput struct {
	Response *model.Response   `json:",omitempty"`
	Results  []seam.ToolResult `json:",omitempty"`
	Text     string            `json:",omitempty"`
}

// stepper is the part of the engine's driver the steps call.
type stepper interface {
	ModelStep(ctx context.Context, key string, msgs []model.Message, events []swarm.Event, ackMail int64, outside bool) (*model.Response, error)
	Ask(ctx context.Context, key string, o seam.AskOptions, msgs []model.Message) (string, error)
	Tools(ctx context.Context, key string, calls []model.ToolCall) ([]seam.ToolResult, error)
	Round(ctx context.Context, key string, calls []model.ToolCall) ([]seam.ToolResult, error)
	DelegateParts(ctx context.Context, key, target, request string, parts []model.Part) (string, error)
	CheckInput(ctx context.Context, key, text string) (string, error)
}

// Step takes one step of a run with the engine's own primitive.
func (a *activities) Step(ctx context.Context, in stepInput) (stepOutput, error) {
	defer a.beat(ctx)()
	out, err := a.e.step(ctx, in, nil)
	return out, activityError(err)
}

// step takes the step in on the run's driver, acting as as when set.
func (e *Engine) step(ctx context.Context, in stepInput, as *asArgs) (stepOutput, error) {
	var out stepOutput
	err := e.onRun(ctx, in.RunID, in.Turn, as, func(ctx context.Context, d any) error {
		s, ok := d.(stepper)
		if !ok {
			return errors.New("temporal: the runtime's driver lacks a primitive")
		}
		if len(in.Parts) > 0 && in.Op != opDelegate {
			ctx = context.WithValue(ctx, seam.HandKey{}, seam.Handing{Parts: in.Parts})
		}
		var err error
		switch in.Op {
		case opModel:
			out.Response, err = s.ModelStep(ctx, in.Key, in.Msgs, in.Events, in.AckMail, in.Outside)
		case opAsk:
			out.Text, err = s.Ask(ctx, in.Key, in.Ask, in.Msgs)
		case opTools:
			out.Results, err = s.Tools(ctx, in.Key, in.Calls)
		case opRound:
			out.Results, err = s.Round(ctx, in.Key, in.Calls)
		case opDelegate:
			out.Text, err = s.DelegateParts(ctx, in.Key, in.Target, in.Text, in.Parts)
		case opCheckInput:
			out.Text, err = s.CheckInput(ctx, in.Key, in.Text)
		default:
			err = errors.New("temporal: unknown step " + in.Op)
		}
		return err
	})
	return out, err
}

// asActor is the engine driver's As.
type asActor interface {
	As(a *swarm.Agent, tools, hidden []swarm.Tool, data map[string]any, maxTurns int, gs []guardrail.Guardrail, c *compact.Config) (any, error)
}

// onRun runs fn with the engine's driver of run id at turn, acting as as
// when set.
func (e *Engine) onRun(ctx context.Context, id string, turn int, as *asArgs, fn func(ctx context.Context, d any) error) error {
	return seam.Remote.Step(ctx, e.rt, id, e.owner, turn, func(ctx context.Context, d any) error {
		if as != nil {
			ad, ok := d.(asActor)
			if !ok {
				return errors.New("temporal: the runtime's driver lacks As")
			}
			var err error
			if d, err = ad.As(as.agent, as.tools, as.hidden, as.data, as.maxTurns, as.gs, as.c); err != nil {
				return err
			}
		}
		return fn(ctx, d)
	})
}

// beat heartbeats the activity of ctx until the function it returns is
// called: a step whose worker died is retried after the heartbeat timeout,
// not after the step's whole timeout.
func (a *activities) beat(ctx context.Context) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(a.e.beat / 3)
		defer t.Stop()
		for {
			activity.RecordHeartbeat(ctx)
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done) }
}

// pauseInput is the input of actPause.
type pauseInput struct {
	RunID    string
	Turn     int
	Key      string
	Question seam.Question
}

// Pause journals a question.
func (a *activities) Pause(ctx context.Context, in pauseInput) error {
	return activityError(seam.Remote.Pause(ctx, a.e.rt, in.RunID, a.e.owner, in.Turn, in.Key, in.Question))
}

// answerInput is the input of actAnswer.
type answerInput struct {
	RunID, Key, Message string
}

// Answer journals a question's answer.
func (a *activities) Answer(ctx context.Context, in answerInput) error {
	return activityError(seam.Remote.Answer(ctx, a.e.rt, in.RunID, a.e.owner, in.Key, in.Message, nil))
}

// handoffInput is the input of actHandoff.
type handoffInput struct {
	RunID, Key, Target, Child, Text string
	Turn                            int
	Started, IsError                bool
}

// Handoff journals a delegation to a swarm, as it starts or returns.
func (a *activities) Handoff(ctx context.Context, in handoffInput) error {
	return activityError(seam.Remote.Handoff(ctx, a.e.rt, in.RunID, a.e.owner, in.Turn, in.Key, in.Target, in.Child, in.Started, in.Text, in.IsError))
}

// finishInput is the input of actFinish.
type finishInput struct {
	RunID string
	Out   RunOutput
}

// Finish journals how the run ended.
func (a *activities) Finish(ctx context.Context, in finishInput) error {
	return activityError(seam.Remote.Finish(ctx, a.e.rt, in.RunID, a.e.owner, in.Out.Status, in.Out.Reason, in.Out.Result))
}

// activityError maps the runtime's classification of a step's error onto
// Temporal's retries: a failed step, a mistake of the strategy or the
// definition, a pause and a run the engine does not hold are not retried;
// an interruption (the store unavailable, a conflict) is.
func activityError(err error) error {
	if err == nil {
		return nil
	}
	if reason, final, ok := seam.FailureOf(err); ok {
		typ := errFailure
		if final {
			typ = errFinal
		}
		return temporal.NewNonRetryableApplicationError(reason, typ, nil)
	}
	switch {
	case errors.Is(err, seam.ErrAwaiting):
		return temporal.NewNonRetryableApplicationError(err.Error(), errAwaiting, nil)
	case errors.Is(err, store.ErrLeaseLost):
		return temporal.NewNonRetryableApplicationError(err.Error(), errLease, nil)
	case errors.Is(err, swarm.ErrInvalid), errors.Is(err, swarm.ErrInvalidInput), errors.Is(err, swarm.ErrUnknownSwarm),
		errors.Is(err, swarm.ErrUnknownAgent), errors.Is(err, swarm.ErrNoModel):
		return temporal.NewNonRetryableApplicationError(err.Error(), errInvalid, nil)
	}
	return err
}

// stepError turns the error of an activity back into what a primitive
// returns to a strategy.
func stepError(err error) error {
	if err == nil {
		return nil
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		switch ae.Type() {
		case errFailure:
			return seam.NewFailure(ae.Message(), false)
		case errFinal:
			return seam.NewFailure(ae.Message(), true)
		case errInvalid:
			return fmt.Errorf("%w: %s", swarm.ErrInvalid, ae.Message())
		case errAwaiting:
			return seam.NewFailure(ae.Message(), true)
		case errLease:
			return seam.NewFailure(ae.Message(), true)
		}
	}
	return err
}
