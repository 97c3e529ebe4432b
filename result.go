package swarm

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// State is the lifecycle state of a run: running, paused, completed, failed
// or stopped.
type State = store.State

// The run states.
const (
	StateRunning   = store.Running
	StatePaused    = store.Paused
	StateCompleted = store.Completed
	StateFailed    = store.Failed
	StateStopped   = store.Stopped
)

// Result is the typed outcome of a run at one moment: exactly one of
// [Running], [Paused], [Completed], [Failed] or [Stopped]. Use a type switch:
//
//	switch r := res.(type) {
//	case swarm.Completed[Plan]:
//		use(r.Output)
//	case swarm.Paused:
//		ask(r.Reason)
//	}
type Result[Out any] interface {
	// State returns the run state the result describes.
	State() State
	isResult()
}

// Running: the run is in progress.
type Running struct {
	Turn, MaxTurns int
	// CurrentAgent is the agent whose step was recorded last.
	CurrentAgent string
}

// Paused: the run waits for [Run.Resume].
type Paused struct {
	Reason, Context string
	Turn, MaxTurns  int
	// Waiting is the id of the descendant run that asked, when the pause
	// comes from a child swarm; resuming this run passes the answer down.
	Waiting string
	// Pause identifies this pause: the sequence number of its paused
	// event. Pass it to Resume with [AtPause] so that the answer applies to
	// this pause only, never to a later one.
	Pause int64
}

// Completed: the run succeeded with Output.
type Completed[Out any] struct {
	Output Out
	// Parts are the images, files and audio of the result, with their
	// bytes: those tools added with [AttachOutput], then those Output
	// holds when its type has model.Part fields (whose bytes are loaded
	// into Output too). Nil for a text-only run.
	Parts []model.Part
}

// Failed: the run ended in failure.
type Failed struct{ Reason string }

// Stopped: the run was stopped from outside.
type Stopped struct{ Reason string }

// State implements Result.
func (Running) State() State { return StateRunning }

// State implements Result.
func (Paused) State() State { return StatePaused }

// State implements Result.
func (Completed[Out]) State() State { return StateCompleted }

// State implements Result.
func (Failed) State() State { return StateFailed }

// State implements Result.
func (Stopped) State() State { return StateStopped }

func (Running) isResult()        {}
func (Paused) isResult()         {}
func (Completed[Out]) isResult() {}
func (Failed) isResult()         {}
func (Stopped) isResult()        {}

// Status is the untyped view of a run, as the CLI and the HTTP API show it.
type Status struct {
	ID       string `json:"id"`
	Swarm    string `json:"swarm"`
	Parent   string `json:"parent,omitempty"`
	State    State  `json:"state"`
	Turn     int    `json:"turn"`
	MaxTurns int    `json:"max_turns"`
	Agent    string `json:"agent,omitempty"`
	// Result is the JSON result of a completed run; a typed result's
	// large parts are blob references (see Parts).
	Result json.RawMessage `json:"result,omitempty"`
	// Parts are a completed run's result parts (see [Completed.Parts]),
	// large ones by blob reference (model.Part.Blob), whose bytes
	// the store returns (store.Blobs). [Runtime.Status] fills them, List
	// does not.
	Parts []model.Part `json:"parts,omitempty"`
	// Reason explains a paused, failed or stopped run.
	Reason string `json:"reason,omitempty"`
	// Context is the context a paused run gave with its reason.
	Context string `json:"context,omitempty"`
	// Waiting is the descendant run whose pause this run shows.
	Waiting string `json:"waiting,omitempty"`
	// Pause identifies a paused run's current pause: the sequence number
	// of its paused event (the last record of its journal). A resume that
	// names it (AtPause; "pause" over HTTP, A2A and MCP; swarm resume
	// --pause) is refused once the run no longer waits at that pause.
	Pause int64 `json:"pause,omitempty"`
	// Depth is the run's nesting depth below its root run: the handoffs
	// (agent and swarm handoffs alike) between the root's orchestrator and
	// this run. It is at most Config.MaxDepth.
	Depth int `json:"depth,omitempty"`
	// Customization is what the parent's model added to this child run.
	Customization *Customization `json:"customization,omitempty"`
	// Usage is what the run's row holds: its own model calls and
	// compactions, and the usage of the child runs whose outcome it
	// recorded. [Runtime.TreeUsage] is the usage of the whole tree (the
	// children still going and a team's teammates too).
	Usage     model.Usage `json:"usage"`
	Owner     string      `json:"owner,omitempty"`
	LastSeq   int64       `json:"last_seq"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
}

func statusOf(r store.Run) Status {
	s := Status{
		ID: r.ID, Swarm: r.Swarm, Parent: r.Parent, State: r.State,
		Turn: r.Turn, MaxTurns: r.MaxTurns, Agent: r.Agent,
		Result: r.Result, Reason: r.Reason, Usage: r.Usage,
		LastSeq: r.LastSeq, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.State == store.Running {
		s.Owner = r.Owner
	}
	if pausedForGood(r) {
		// Another engine's run, paused at its newest record (see
		// seam.HeldLease).
		s.State, s.Owner = StatePaused, ""
	}
	if s.State == StatePaused {
		s.Pause = r.LastSeq
	}
	return s
}

// Terminal reports whether the run has finished.
func (s Status) Terminal() bool { return s.State.Terminal() }

func resultOf[Out any](s Status) (Result[Out], error) {
	switch s.State {
	case StateRunning:
		return Running{Turn: s.Turn, MaxTurns: s.MaxTurns, CurrentAgent: s.Agent}, nil
	case StatePaused:
		return Paused{Reason: s.Reason, Context: s.Context, Turn: s.Turn, MaxTurns: s.MaxTurns, Waiting: s.Waiting, Pause: s.Pause}, nil
	case StateCompleted:
		var out Out
		if err := json.Unmarshal(s.Result, &out); err != nil {
			return nil, fmt.Errorf("run %s: decode result: %w", s.ID, err)
		}
		return Completed[Out]{Output: out, Parts: s.Parts}, nil
	case StateFailed:
		return Failed{Reason: s.Reason}, nil
	case StateStopped:
		return Stopped{Reason: s.Reason}, nil
	}
	return nil, fmt.Errorf("run %s: unknown state %q", s.ID, s.State)
}
