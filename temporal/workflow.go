package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/strategy"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// runState is a run's state in its workflow.
type runState struct {
	in   RunInput
	id   string
	plan seam.RemotePlan
	// journal is the run's journal as loaded when the workflow began
	// (after the checkpoint it continues from), by key.
	journal map[string]swarm.Event
	order   []swarm.Event
	// questions waiting for an answer, oldest first, and the answers.
	waiting []string
	answers map[string]string
	// branches running (Parallel), which a continuation as new waits out.
	branches int
}

// wfKey is the context key of a strategy's context under which the
// branch's workflow.Context is.
type wfKey struct{}

// wfOf returns the workflow.Context a strategy's context carries.
func wfOf(ctx context.Context) workflow.Context {
	w, _ := ctx.Value(wfKey{}).(workflow.Context)
	return w
}

// continueAsNew unwinds a strategy at a checkpoint for the workflow to
// continue as new.
type continueAsNew struct{ c Continued }

// run is the workflow WorkflowName.
func (e *Engine) run(w workflow.Context, in RunInput) (out RunOutput, err error) {
	st := &runState{in: in, id: in.RunID, journal: map[string]swarm.Event{}, answers: map[string]string{}}
	if st.id == "" {
		st.id = workflow.GetInfo(w).WorkflowExecution.ID
	}
	if len(in.Input) == 0 {
		in.Input = json.RawMessage(`null`)
		st.in.Input = in.Input
	}
	if err := workflow.SetUpdateHandlerWithOptions(w, UpdateResume, func(w workflow.Context, r Resume) error {
		key := st.waiting[0]
		st.waiting = st.waiting[1:]
		st.answers[key] = r.Message
		return nil
	}, workflow.UpdateHandlerOptions{Validator: func(w workflow.Context, r Resume) error {
		if len(st.waiting) == 0 {
			return fmt.Errorf("run %s is not paused: %w", st.id, store.ErrInvalidState)
		}
		return nil
	}}); err != nil {
		return RunOutput{}, err
	}
	aw := workflow.WithActivityOptions(w, e.activityOptions())
	lw := workflow.WithLocalActivityOptions(w, localOptions)
	// The run's plan is the definition's, in this worker's code.
	if st.plan, err = e.describe(in.Swarm, in.Input); err != nil {
		return RunOutput{Status: "failed", Reason: err.Error()}, nil
	}
	if err := workflow.ExecuteActivity(aw, actCreate, createInput{Swarm: in.Swarm, RunID: st.id, Parent: in.Parent, Input: in.Input}).Get(aw, nil); err != nil {
		return RunOutput{}, fmt.Errorf("create run %s: %w", st.id, err)
	}
	var evs []swarm.Event
	if err := workflow.ExecuteLocalActivity(lw, e.loadJournal, st.id).Get(lw, &evs); err != nil {
		return RunOutput{}, fmt.Errorf("load run %s: %w", st.id, err)
	}
	from := 0
	if in.Continued != nil {
		for i, ev := range evs {
			if ev.Key == in.Continued.Key {
				from = i + 1
			}
		}
	}
	for _, ev := range evs[from:] {
		st.journal[ev.Key] = ev
		st.order = append(st.order, ev)
	}
	dw, cancel := workflow.WithCancel(w)
	stopped := ""
	workflow.Go(w, func(w workflow.Context) {
		workflow.GetSignalChannel(w, SignalStop).Receive(w, &stopped)
		if stopped == "" {
			stopped = "stopped"
		}
		cancel()
	})
	res, derr, can := e.drive(dw, st)
	switch {
	case can != nil:
		// Waits out the update handlers, then continues as new.
		_ = workflow.Await(w, func() bool { return workflow.AllHandlersFinished(w) })
		next := in
		next.RunID, next.Continued = st.id, can
		return RunOutput{}, workflow.NewContinueAsNewError(w, WorkflowName, next)
	case stopped != "" || (derr != nil && dw.Err() != nil):
		if stopped == "" {
			stopped = "cancelled"
		}
		out = RunOutput{Status: "stopped", Reason: stopped}
	case derr == nil:
		out = RunOutput{Status: "completed", Result: res}
	case errors.Is(derr, seam.ErrAwaiting):
		out = RunOutput{Status: "failed", Reason: "the strategy returned a pause the Temporal engine does not answer: " + derr.Error()}
	default:
		reason := derr.Error()
		if r, _, ok := seam.FailureOf(derr); ok {
			reason = r
		}
		out = RunOutput{Status: "failed", Reason: reason}
	}
	fw, _ := workflow.NewDisconnectedContext(aw)
	if err := workflow.ExecuteActivity(fw, actFinish, finishInput{RunID: st.id, Out: out}).Get(fw, nil); err != nil {
		return RunOutput{}, fmt.Errorf("finish run %s: %w", st.id, err)
	}
	if out.Status == "completed" {
		// The journal's result (validated, its parts stored) is the run's.
		var res json.RawMessage
		if err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(fw, localOptions), e.loadResult, st.id).Get(fw, &res); err == nil && res != nil {
			out.Result = res
		}
	}
	return out, nil
}

// drive drives the run's strategy.
func (e *Engine) drive(w workflow.Context, st *runState) (res json.RawMessage, err error, can *Continued) {
	d := &driver{e: e, st: st}
	ctx := context.WithValue(context.Background(), wfKey{}, w)
	s := st.plan.Strategy
	if s == nil {
		s = strategy.Of(loop{maxTurns: st.plan.MaxTurns, builtins: st.plan.Builtins}).WrapWithStrategyOf()
	}
	defer func() {
		if p := recover(); p != nil {
			if c, ok := p.(continueAsNew); ok {
				can = &c.c
				return
			}
			err = seam.NewFailure(fmt.Sprintf("panic: %v\n%s", p, debug.Stack()), true)
		}
	}()
	res, err = s.Drive(ctx, d)
	return res, err, nil
}

// loadJournal is the local activity that reads the run's journal.
func (e *Engine) loadJournal(ctx context.Context, id string) ([]swarm.Event, error) {
	return e.rt.History(ctx, id, 0)
}

// loadResult is the local activity that reads the run's result.
func (e *Engine) loadResult(ctx context.Context, id string) (json.RawMessage, error) {
	run, err := e.rt.Store().Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return run.Result, nil
}

// The options of the engine's activities: the runtime retries a model
// within a step as its configuration says; Temporal retries a step the
// store interrupted (the step's journal makes the retry take up where the
// attempt stopped) and never one that failed.
var (
	retries = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
		MaximumInterval: time.Minute, MaximumAttempts: 20}
	localOptions = workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 30 * time.Minute,
		RetryPolicy:            retries,
	}
)

// activityOptions are the options of the engine's activities.
func (e *Engine) activityOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Minute, HeartbeatTimeout: e.beat, RetryPolicy: retries}
}

// loop is the tool-calling loop of a swarm without a strategy, on the
// primitives: the orchestrator's model is called each turn, the tools of
// its response run in a round, and complete, fail and pause end or pause
// the run.
type loop struct {
	maxTurns int
	builtins bool
}

// loopState is the loop's checkpoint.
type loopState struct {
	Turn int
	Msgs []model.Message
}

// Drive implements strategy.Strategy.
func (l loop) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	input := string(d.Input())
	var s string
	if json.Unmarshal(d.Input(), &s) == nil {
		input = s
	}
	var ls loopState
	if ok, err := d.Restore(&ls); err != nil {
		return nil, err
	} else if !ok {
		ls = loopState{Turn: 1, Msgs: []model.Message{{Role: model.RoleUser, Content: input, Parts: d.Parts()}}}
	}
	for turn := ls.Turn; ; turn++ {
		if turn > 1 {
			d.Checkpoint(ctx, fmt.Sprintf("t%d/done", turn-1), loopState{Turn: turn, Msgs: ls.Msgs})
		}
		if turn > l.maxTurns {
			return nil, &strategy.Failure{Reason: fmt.Sprintf("%s exceeded its max turns (%d)", d.Agent(), l.maxTurns)}
		}
		td := d.AtTurn(turn)
		key := fmt.Sprintf("t%d", turn)
		resp, err := td.ModelStep(ctx, key, ls.Msgs, strategy.Step{})
		if err != nil {
			return nil, err
		}
		ls.Msgs = append(ls.Msgs, resp.Message)
		calls := resp.Message.ToolCalls
		if len(calls) == 0 {
			res, verr := d.Result(resp.Message.Content)
			if verr == nil {
				if _, err := td.Round(ctx, key, nil); err != nil {
					return nil, err
				}
				return res, nil
			}
			ls.Msgs = append(ls.Msgs, model.Message{Role: model.RoleUser, Content: "Your reply is not a valid result: " + verr.Error() +
				". Reply with only a JSON value matching this schema: " + string(d.ResultSchema())})
			if _, err := td.Round(ctx, key, nil); err != nil {
				return nil, err
			}
			continue
		}
		var run []model.ToolCall
		out := map[string]strategy.ToolResult{}
		for _, c := range calls {
			if !l.builtins || (c.Name != "complete" && c.Name != "fail" && c.Name != "pause") {
				run = append(run, c)
			}
		}
		results, err := td.Round(ctx, key, run)
		if err != nil {
			return nil, err
		}
		for i, c := range run {
			out[c.ID] = results[i]
		}
		for _, c := range calls {
			if _, ok := out[c.ID]; ok {
				continue
			}
			var args struct {
				Result  json.RawMessage `json:"result"`
				Reason  string          `json:"reason"`
				Context string          `json:"context"`
			}
			if err := json.Unmarshal(orEmpty(c.Arguments), &args); err != nil {
				out[c.ID] = strategy.ToolResult{Output: "error: " + c.Name + " needs an object argument", IsError: true}
				continue
			}
			switch c.Name {
			case "complete":
				if len(args.Result) == 0 {
					out[c.ID] = strategy.ToolResult{Output: "error: complete needs an object argument with a result field", IsError: true}
					continue
				}
				return args.Result, nil
			case "fail":
				if args.Reason == "" {
					args.Reason = "the model gave up"
				}
				return nil, &strategy.Failure{Reason: args.Reason}
			default: // pause
				if args.Reason == "" {
					out[c.ID] = strategy.ToolResult{Output: "error: pause needs an object argument with a reason field", IsError: true}
					continue
				}
				answer, err := td.Await(ctx, key+"/pause/"+c.ID, strategy.Question{Reason: args.Reason, Context: args.Context})
				if err != nil {
					return nil, err
				}
				out[c.ID] = strategy.ToolResult{Output: answer}
			}
		}
		for _, c := range calls {
			r := out[c.ID]
			ls.Msgs = append(ls.Msgs, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: r.Output, IsError: r.IsError, Parts: r.Parts})
		}
	}
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage(`{}`)
	}
	return b
}
