// Package temporal runs swarms as Temporal workflows: the same definitions
// as Swarm's own engine, driven by their strategies inside a workflow, with
// model calls and tool executions as activities, delegations to swarms as
// child workflows and a pause answered through an update named "resume".
package temporal

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/swarmrt/swarm"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// WorkflowName is the name of the workflow that runs a swarm: a Temporal
// user's own workflow runs a swarm as a child workflow of this name, with
// a RunInput, and gets a RunOutput.
const WorkflowName = "swarm.Run"

// DefaultTaskQueue is the task queue of Options.TaskQueue when it is empty.
const DefaultTaskQueue = "swarm"

// Options configure an Engine.
type Options struct {
	// Client is the Temporal client the engine starts, signals and waits
	// for workflows with.
	Client client.Client
	// TaskQueue is the task queue of the swarms' workflows and
	// activities (DefaultTaskQueue when empty).
	TaskQueue string
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
}

// RunOutput is the result of the workflow WorkflowName.
type RunOutput struct {
	// Status is the run's final status ("completed", "failed" or
	// "cancelled").
	Status string
	// Result is the run's result, when it completed.
	Result json.RawMessage
	// Reason says why the run failed or was cancelled.
	Reason string
}

// Outcome is how a run ended, as Engine.Wait returns it.
type Outcome struct {
	// Status is the run's final status ("completed", "failed" or
	// "cancelled").
	Status string
	// Result is the run's result, when it completed.
	Result json.RawMessage
	// Reason says why the run failed or was cancelled.
	Reason string
}

// Engine runs the swarms defined in a runtime as Temporal workflows.
type Engine struct {
	rt    *swarm.Runtime
	c     client.Client
	queue string
}

// New makes an engine running the swarms of rt on Temporal through o.
func New(rt *swarm.Runtime, o Options) (*Engine, error) {
	if rt == nil {
		return nil, errors.New("temporal: nil runtime")
	}
	if o.TaskQueue == "" {
		o.TaskQueue = DefaultTaskQueue
	}
	return &Engine{rt: rt, c: o.Client, queue: o.TaskQueue}, nil
}

// Register registers the engine's workflows and activities on w.
func (e *Engine) Register(w worker.Registry) {}

// Start starts a run of the swarm swarmID with input as a workflow whose
// id is runID (a new id when empty) and returns the run's id.
func (e *Engine) Start(ctx context.Context, swarmID, runID string, input json.RawMessage) (string, error) {
	return "", errors.New("temporal: not implemented")
}

// Resume answers the run's pause with message.
func (e *Engine) Resume(ctx context.Context, runID, message string) error {
	return errors.New("temporal: not implemented")
}

// Stop cancels the run, saying why.
func (e *Engine) Stop(ctx context.Context, runID, reason string) error {
	return errors.New("temporal: not implemented")
}

// Wait waits until the run ends and returns how.
func (e *Engine) Wait(ctx context.Context, runID string) (Outcome, error) {
	return Outcome{}, errors.New("temporal: not implemented")
}
