// Package fork holds the options of a fork of a run (swarm's Runtime.Fork
// starts a new run that reuses the origin's journal up to a step and runs
// on from there): a caller-chosen id ([ID]), a replaced input ([Input]) or
// values ([Values]), and edited outcomes of recorded steps ([Edits]).
package fork

import "encoding/json"

// Option configures a fork.
type Option func(*Options)

// Options are a fork's options, collected by [Collect]. The zero value
// forks with a new random id, the origin's input and values, and no
// edits.
type Options struct {
	// ID is the fork's id ("": a new random id).
	ID string
	// Input, when not nil, replaces the origin's input.
	Input json.RawMessage
	// Values replaces the origin's values when SetValues is set (nil
	// values then means none).
	Values    map[string]any
	SetValues bool
	// Edits replace the outcomes of recorded steps.
	Edits []Edit
}

// Collect applies opts in order.
func Collect(opts ...Option) Options {
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Edit replaces what one recorded step of a run produced, in a fork of it
// (see [Edits]): the step under Key keeps its place in the journal and
// the steps after it see Output instead of what the origin recorded.
type Edit struct {
	// Key is the step key of the record to replace, as in the origin's
	// events.
	Key string `json:"key"`
	// Output replaces, by the record's type: a tool result's output (an
	// edited result is not an error), a handoff's returned output, a
	// model response's text (its tool calls stay), or a person's answer
	// to a pause (resumed). The run's input is replaced with [Input].
	Output string `json:"output"`
}

// Edits replaces the outcomes of recorded steps in the fork, as
// LangGraph's update_state does: each edited record is copied into the
// fork with its output replaced and marked Event.Edited, and the run
// continues from the edited state (the model's next request carries the
// edited result or message). An edit names a step at or before the fork
// point; an edit at the fork point keeps that step, edited, and the fork
// runs what follows it. With edits and no fork point, the fork point is
// the last edited step.
func Edits(edits ...Edit) Option {
	return func(o *Options) { o.Edits = append(o.Edits, edits...) }
}

// ID gives the fork a caller-chosen id (default: a new random id). A fork
// never reuses a run: an id that is taken gives store.ErrExists.
func ID(id string) Option { return func(o *Options) { o.ID = id } }

// Input replaces the input of the fork. The reused steps were taken with
// the origin's input; the steps from the fork point on see this one.
func Input(input json.RawMessage) Option {
	return func(o *Options) { o.Input = input }
}

// Values replaces the values (the data of the instruction templates) of
// the fork.
func Values(values map[string]any) Option {
	return func(o *Options) { o.Values, o.SetValues = values, true }
}
