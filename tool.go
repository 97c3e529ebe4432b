package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
)

// Tool is a function a model may call.
//
// The runtime validates the model's arguments against Schema before Call; a
// Call error, invalid arguments or an unknown tool name go back to the model
// as an error tool result and never fail the run.
type Tool interface {
	// Name is the tool name the model uses ([a-zA-Z0-9_-]+, at most 64 chars).
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Schema is the JSON schema of the arguments object.
	Schema() json.RawMessage
	// Call runs the tool on validated arguments and returns its result text.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// ArgumentError reports tool arguments that do not match the tool's schema.
type ArgumentError struct {
	Tool string
	Err  error
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("invalid arguments for tool %s: %v", e.Tool, e.Err)
}

func (e *ArgumentError) Unwrap() error { return e.Err }

// NewTool makes a typed function tool. The argument schema is derived from In
// (a struct whose exported fields become properties; fields without omitempty
// are required; a `jsonschema:"..."` tag gives a property's description). The
// model's arguments are validated against it and decoded into In before fn
// runs. A string Out is returned as is; any other Out is encoded as JSON.
//
// A type that cannot be described by a schema (a channel, a func) makes the
// tool report the problem when a run that offers it starts.
func NewTool[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error)) Tool {
	t := &funcTool[In, Out]{name: name, description: description, fn: fn}
	s, err := jsonschema.For[In](nil)
	if err != nil {
		t.err = fmt.Errorf("tool %s: %w", name, err)
		return t
	}
	if s.Type == "" && len(s.Types) == 0 {
		// Interfaces and empty structs give an unconstrained schema; models
		// need an object.
		s = &jsonschema.Schema{Type: "object"}
	}
	t.resolved, err = s.Resolve(nil)
	if err != nil {
		t.err = fmt.Errorf("tool %s: %w", name, err)
		return t
	}
	t.schema, err = json.Marshal(s)
	if err != nil {
		t.err = fmt.Errorf("tool %s: %w", name, err)
	}
	return t
}

type funcTool[In, Out any] struct {
	name, description string
	fn                func(context.Context, In) (Out, error)
	schema            json.RawMessage
	resolved          *jsonschema.Resolved
	err               error
}

func (t *funcTool[In, Out]) Name() string            { return t.name }
func (t *funcTool[In, Out]) Description() string     { return t.description }
func (t *funcTool[In, Out]) Schema() json.RawMessage { return t.schema }
func (t *funcTool[In, Out]) Err() error              { return t.err }

func (t *funcTool[In, Out]) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if t.err != nil {
		return "", t.err
	}
	if err := validateJSON(t.resolved, args); err != nil {
		return "", &ArgumentError{Tool: t.name, Err: err}
	}
	var in In
	if len(args) > 0 {
		if err := json.Unmarshal(args, &in); err != nil {
			return "", &ArgumentError{Tool: t.name, Err: err}
		}
	}
	out, err := t.fn(ctx, in)
	if err != nil {
		return "", err
	}
	return encodeOutput(out)
}

// validateJSON checks a JSON document against a resolved schema. Empty
// arguments count as an empty object.
func validateJSON(rs *jsonschema.Resolved, data json.RawMessage) error {
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if rs == nil {
		return nil
	}
	return rs.Validate(v)
}

func encodeOutput[Out any](out Out) (string, error) {
	if s, ok := any(out).(string); ok {
		return s, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode tool result: %w", err)
	}
	return string(b), nil
}

// toolErr returns the definition-time error of a tool, if it carries one.
func toolErr(t Tool) error {
	if t == nil {
		return errors.New("nil tool")
	}
	if v := reflect.ValueOf(t); v.Kind() == reflect.Pointer && v.IsNil() {
		return errors.New("nil tool")
	}
	if e, ok := t.(interface{ Err() error }); ok {
		return e.Err()
	}
	return nil
}

type ctxKey struct{}

// callInfo is what a tool can learn about the call it executes.
type callInfo struct {
	runID, step string
	// instance is the run's (Event.Instance).
	instance string
	// extra and ackMail are journaled with the call's result (team
	// tools: the mail sent, the mailbox cursor of the mail read).
	extra   []Event
	ackMail int64
	// parts are the tool's parts (AttachParts), journaled with its result.
	mu    sync.Mutex
	parts []model.Part
	// out are the parts the tool added to the run's result (AttachOutput).
	out []model.Part
}

// RunID returns the id of the run a tool executes in ("" outside a run).
func RunID(ctx context.Context) string {
	if c, ok := ctx.Value(seam.CallKey{}).(*callInfo); ok {
		return c.runID
	}
	return ""
}

// StepKey returns the journal step key of the executing tool call, such as
// "t3/tool/call_1" ("" outside a run).
func StepKey(ctx context.Context) string {
	if c, ok := ctx.Value(seam.CallKey{}).(*callInfo); ok {
		return c.step
	}
	return ""
}

// IdempotencyKey returns "<run id>/<instance>/<step key>" for the
// executing tool call: the same value every time the same call is
// attempted, including after a crash and recovery, and a different value
// for every other call, a call of a run started again with the id of a
// deleted run included (the instance, a random stamp of the run's start,
// tells them apart; a run started before instances existed has keys
// "<run id>/<step key>"). Tools with side effects use it to make a
// repeated attempt a no-op.
func IdempotencyKey(ctx context.Context) string {
	c, ok := ctx.Value(seam.CallKey{}).(*callInfo)
	if !ok || c.runID == "" {
		return ""
	}
	return c.runKey() + c.step
}

// runKey names the run of the call, told apart from an earlier run with
// its id: "<run id>/<instance>/", or "<run id>/" for a run without an
// instance.
func (c *callInfo) runKey() string {
	if c.instance == "" {
		return c.runID + "/"
	}
	return c.runID + "/" + c.instance + "/"
}

// instanceKey names r told apart from an earlier run with its id, deleted
// since (see IdempotencyKey): what state kept about a run in the process,
// such as its stalls, is keyed by.
func (r *runner) instanceKey() string {
	return (&callInfo{runID: r.id, instance: r.instance}).runKey()
}

// withCall returns ctx for a tool call (or a function step) of r at step
// key.
func (r *runner) withCall(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, seam.CallKey{}, &callInfo{runID: r.id, instance: r.instance, step: key})
}
