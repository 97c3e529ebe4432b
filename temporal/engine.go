package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/internal/seam"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// WorkflowName is the name of the workflow that runs a swarm: a Temporal
// user's own workflow runs a swarm as a child workflow of this name, with
// a RunInput, and gets a RunOutput.
const WorkflowName = "swarm.Run"

// DefaultTaskQueue is the task queue of Options.TaskQueue when it is empty.
const DefaultTaskQueue = "swarm"

// UpdateResume is the name of the update that answers a run's pause (its
// argument a Resume); SignalStop the signal that stops a run (its argument
// the reason).
const (
	UpdateResume = "resume"
	SignalStop   = "stop"
)

// DefaultHistoryLimit is Options.HistoryLimit when it is 0.
const DefaultHistoryLimit = 10000

// Options configure an Engine.
type Options struct {
	// Client is the Temporal client the engine starts, updates, signals
	// and waits for workflows with.
	Client client.Client
	// TaskQueue is the task queue of the swarms' workflows and
	// activities (DefaultTaskQueue when empty).
	TaskQueue string
	// HistoryLimit is the number of events of a workflow's history past
	// which a strategy's checkpoint continues the workflow as new,
	// carrying the strategy's state (DefaultHistoryLimit when 0).
	HistoryLimit int
	// HeartbeatTimeout is how long a step's activity may go without a
	// heartbeat (it beats while it runs) before Temporal takes it as lost
	// with its worker and retries it elsewhere (one minute when 0).
	HeartbeatTimeout time.Duration
}

// RunInput is the input of the workflow WorkflowName.
type RunInput struct {
	// Swarm is the id of the swarm to run, defined in the worker's
	// runtime.
	Swarm string
	// RunID is the run's id in the Swarm store (the workflow id of a run
	// started by Engine.Start); empty for the workflow's own id.
	RunID string
	// Input is the run's input as JSON.
	Input json.RawMessage
	// Parent is the id of the parent run, for a child swarm.
	Parent string `json:",omitempty"`
	// Continued carries the state of a run continued as new.
	Continued *Continued `json:",omitempty"`
}

// Continued is what a run continued as new carries: the checkpoint its
// strategy continues from.
type Continued struct {
	// Key is the step key the checkpoint ends.
	Key string
	// State is the strategy's state (see strategy.Driver.Checkpoint).
	State json.RawMessage
}

// RunOutput is the result of the workflow WorkflowName.
type RunOutput struct {
	// Status is the run's final status ("completed", "failed" or
	// "stopped").
	Status string
	// Result is the run's result, when it completed.
	Result json.RawMessage
	// Reason says why the run failed or was stopped.
	Reason string
}

// Outcome is how a run ended, as Engine.Wait returns it.
type Outcome struct {
	// Status is the run's final status ("completed", "failed" or
	// "stopped").
	Status string
	// Result is the run's result, when it completed.
	Result json.RawMessage
	// Reason says why the run failed or was stopped.
	Reason string
}

// Resume is the argument of the update UpdateResume.
type Resume struct {
	// Message answers the pause.
	Message string
}

// ErrUnsupported is wrapped by the error of a kind of run, or a
// primitive, that the Temporal engine does not run.
var ErrUnsupported = errors.New("not supported on the Temporal engine")

// Engine runs the swarms defined in a runtime as Temporal workflows.
type Engine struct {
	rt      *swarm.Runtime
	c       client.Client
	queue   string
	owner   string
	history int
	beat    time.Duration
}

// New makes an engine running the swarms of rt on Temporal through o.
func New(rt *swarm.Runtime, o Options) (*Engine, error) {
	if rt == nil {
		return nil, errors.New("temporal: nil runtime")
	}
	if o.TaskQueue == "" {
		o.TaskQueue = DefaultTaskQueue
	}
	if o.HistoryLimit <= 0 {
		o.HistoryLimit = DefaultHistoryLimit
	}
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = time.Minute
	}
	return &Engine{rt: rt, c: o.Client, queue: o.TaskQueue, owner: "temporal:" + o.TaskQueue, history: o.HistoryLimit, beat: o.HeartbeatTimeout}, nil
}

// Register registers the engine's workflow and activities on w.
func (e *Engine) Register(w worker.Registry) {
	e.RegisterWorkflow(w)
	a := &activities{e: e}
	w.RegisterActivityWithOptions(a.Create, activity.RegisterOptions{Name: actCreate})
	w.RegisterActivityWithOptions(a.Step, activity.RegisterOptions{Name: actStep})
	w.RegisterActivityWithOptions(a.Pause, activity.RegisterOptions{Name: actPause})
	w.RegisterActivityWithOptions(a.Answer, activity.RegisterOptions{Name: actAnswer})
	w.RegisterActivityWithOptions(a.Finish, activity.RegisterOptions{Name: actFinish})
	w.RegisterActivityWithOptions(a.Handoff, activity.RegisterOptions{Name: actHandoff})
}

// RegisterWorkflow registers the engine's workflow only, on w: on a
// worker.WorkflowReplayer, to replay recorded histories of runs.
func (e *Engine) RegisterWorkflow(w worker.WorkflowRegistry) {
	w.RegisterWorkflowWithOptions(e.run, workflow.RegisterOptions{Name: WorkflowName})
}

// Check refuses, with an error wrapping ErrUnsupported (or the runtime's
// error of a bad swarm or input), a run of swarmID with input that this
// engine cannot run, before anything is stored.
func (e *Engine) Check(swarmID string, input json.RawMessage) error {
	_, err := e.describe(swarmID, input)
	return err
}

// describe plans a run and refuses the kinds of run the engine does not
// support.
func (e *Engine) describe(swarmID string, input json.RawMessage) (seam.RemotePlan, error) {
	p, err := seam.RemoteDescribe(e.rt, swarmID, input)
	if err != nil {
		return p, err
	}
	switch {
	case p.Strategy == nil && p.SwarmHandoffs:
		return p, fmt.Errorf("swarm %s: the tool-calling loop's handoffs to swarms are %w (a strategy's Delegate to a swarm runs it as a child workflow)", swarmID, ErrUnsupported)
	case p.Strategy != nil && p.Strategy.SnapshotKind() == "member":
		return p, fmt.Errorf("swarm %s: teams (members' mailboxes) are %w", swarmID, ErrUnsupported)
	case p.Strategy != nil && p.Strategy.SnapshotKind() == "conversation":
		// A conversation's turns read the session's messages, parts and
		// shared context from values of the context the engine's own
		// driver sets, which do not cross into an activity: refused
		// rather than half-run.
		return p, fmt.Errorf("swarm %s: conversations are %w yet (run them on Swarm's own engine)", swarmID, ErrUnsupported)
	}
	return p, nil
}

// Start starts a run of the swarm swarmID with input as a workflow whose
// id is runID (a new id when empty) and returns the run's id. The run's row
// and its start record are stored first, so a bad input or a kind of run
// the engine does not support returns an error and starts nothing.
func (e *Engine) Start(ctx context.Context, swarmID, runID string, input json.RawMessage) (string, error) {
	if e.c == nil {
		return "", errors.New("temporal: the engine has no client")
	}
	if len(input) == 0 {
		input = json.RawMessage(`null`)
	}
	if _, err := e.describe(swarmID, input); err != nil {
		return "", err
	}
	if runID == "" {
		runID = newRunID()
	}
	if err := seam.Remote.Create(ctx, e.rt, swarmID, runID, "", input, e.owner); err != nil {
		return "", fmt.Errorf("temporal: start %s: %w", swarmID, err)
	}
	// The workflow's input is the stored one: large parts by reference,
	// not in the workflow's history.
	if evs, err := e.rt.History(ctx, runID, 0); err == nil && len(evs) > 0 && len(evs[0].Input) > 0 {
		input = evs[0].Input
	}
	_, err := e.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: runID, TaskQueue: e.queue, WorkflowExecutionErrorWhenAlreadyStarted: true}, WorkflowName,
		RunInput{Swarm: swarmID, RunID: runID, Input: input})
	if err != nil {
		// No workflow drives the stored run: it ends failed rather than
		// stay running, held by this engine, for good.
		reason := "the Temporal workflow did not start: " + err.Error()
		if ferr := seam.Remote.Finish(context.WithoutCancel(ctx), e.rt, runID, e.owner, "failed", reason, nil); ferr != nil {
			err = errors.Join(err, ferr)
		}
		return "", fmt.Errorf("temporal: start %s: %w", swarmID, err)
	}
	return runID, nil
}

// Resume answers the run's pause with message (the oldest question, when
// several branches wait). A run that waits for no answer is an error.
func (e *Engine) Resume(ctx context.Context, runID, message string) error {
	if e.c == nil {
		return errors.New("temporal: the engine has no client")
	}
	h, err := e.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: runID, UpdateName: UpdateResume,
		Args: []any{Resume{Message: message}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return fmt.Errorf("temporal: resume %s: %w", runID, err)
	}
	if err := h.Get(ctx, nil); err != nil {
		return fmt.Errorf("temporal: resume %s: %w", runID, err)
	}
	return nil
}

// Stop stops the run, saying why: its steps in flight are cancelled and
// the run ends stopped.
func (e *Engine) Stop(ctx context.Context, runID, reason string) error {
	if e.c == nil {
		return errors.New("temporal: the engine has no client")
	}
	if err := e.c.SignalWorkflow(ctx, runID, "", SignalStop, reason); err != nil {
		return fmt.Errorf("temporal: stop %s: %w", runID, err)
	}
	return nil
}

// Wait waits until the run ends (following its continuations as new) and
// returns how.
func (e *Engine) Wait(ctx context.Context, runID string) (Outcome, error) {
	if e.c == nil {
		return Outcome{}, errors.New("temporal: the engine has no client")
	}
	var out RunOutput
	if err := e.c.GetWorkflow(ctx, runID, "").Get(ctx, &out); err != nil {
		return Outcome{}, fmt.Errorf("temporal: wait for %s: %w", runID, err)
	}
	return Outcome(out), nil
}
