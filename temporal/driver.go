package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"go.temporal.io/sdk/workflow"
)

// driver is a run's driver inside its workflow: the engine side of a
// strategy.Driver, each primitive on the workflow.Context the strategy's
// context carries (a Parallel branch's own).
type driver struct {
	e    *Engine
	st   *runState
	turn int
	// as, when set, is the agent the driver's steps act as (see As).
	as *asArgs
}

// asArgs are the arguments of As: Go values, so the steps of a driver
// acting as an agent run as local activities, in the workflow's process.
type asArgs struct {
	agent    *swarm.Agent
	tools    []swarm.Tool
	hidden   []swarm.Tool
	data     map[string]any
	maxTurns int
	gs       []guardrail.Guardrail
	c        *compact.Config
}

// describer is the engine's driver that describes the run.
type describer interface {
	Agent() string
	Roster() []seam.Target
	ToolNames() []string
	ResultSchema() json.RawMessage
	Result(text string) (json.RawMessage, error)
}

func (d *driver) desc() describer { return d.st.plan.Describer.(describer) }

func unsupported(what string) error {
	return fmt.Errorf("%w: %s is %w", swarm.ErrInvalid, what, ErrUnsupported)
}

// RunID implements the primitive.
func (d *driver) RunID() string { return d.st.id }

// Input implements the primitive: the stored input (large parts by
// reference).
func (d *driver) Input() json.RawMessage {
	if ev, ok := d.st.journal["start"]; ok && len(ev.Input) > 0 {
		return ev.Input
	}
	return d.st.in.Input
}

// Agent implements the primitive.
func (d *driver) Agent() string { return d.desc().Agent() }

// AtTurn implements the primitive.
func (d *driver) AtTurn(n int) any {
	c := *d
	c.turn = n
	return &c
}

// Runtime implements the primitive.
func (d *driver) Runtime() *swarm.Runtime { return d.e.rt }

// Roster implements the primitive.
func (d *driver) Roster() []seam.Target { return d.desc().Roster() }

// ToolNames implements the primitive.
func (d *driver) ToolNames() []string { return d.desc().ToolNames() }

// ResultSchema implements the primitive.
func (d *driver) ResultSchema() json.RawMessage { return d.desc().ResultSchema() }

// Result implements the primitive.
func (d *driver) Result(text string) (json.RawMessage, error) { return d.desc().Result(text) }

// Parts implements the primitive: the input's parts are the start
// record's.
func (d *driver) Parts() []model.Part {
	if ev, ok := d.st.journal["start"]; ok {
		return ev.Parts
	}
	return nil
}

// step takes one step: an activity, or a local activity for a driver
// acting as an agent.
func (d *driver) step(ctx context.Context, in stepInput) (stepOutput, error) {
	w := wfOf(ctx)
	in.RunID, in.Turn = d.st.id, d.turn
	if h, ok := ctx.Value(seam.HandKey{}).(seam.Handing); ok && len(in.Parts) == 0 {
		in.Parts = h.Parts
	}
	var out stepOutput
	var err error
	if d.as == nil {
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(w, d.e.activityOptions()), actStep, in).Get(w, &out)
	} else {
		as := d.as
		err = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(w, localOptions), func(ctx context.Context) (stepOutput, error) {
			out, err := d.e.step(ctx, in, as)
			return out, activityError(err)
		}).Get(w, &out)
	}
	return out, stepError(err)
}

// local runs fn on the run's driver in a local activity (fn's Go values
// stay in the process) and returns what it returns.
func (d *driver) local(ctx context.Context, fn func(ctx context.Context, sd any) (json.RawMessage, error)) (json.RawMessage, error) {
	w := wfOf(ctx)
	as, id, turn := d.as, d.st.id, d.turn
	var v json.RawMessage
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(w, localOptions), func(ctx context.Context) (json.RawMessage, error) {
		var v json.RawMessage
		err := d.e.onRun(ctx, id, turn, as, func(ctx context.Context, sd any) error {
			var err error
			v, err = fn(ctx, sd)
			return err
		})
		return v, activityError(err)
	}).Get(w, &v)
	return v, stepError(err)
}

// Model implements the primitive.
func (d *driver) Model(ctx context.Context, key string, msgs []model.Message) (*model.Response, error) {
	return d.ModelStep(ctx, key, msgs, nil, 0, false)
}

// ModelStep implements the primitive: an activity calling the agent's
// model as the engine does.
func (d *driver) ModelStep(ctx context.Context, key string, msgs []model.Message, events []swarm.Event, ackMail int64, outside bool) (*model.Response, error) {
	out, err := d.step(ctx, stepInput{Op: opModel, Key: key, Msgs: msgs, Events: events, AckMail: ackMail, Outside: outside})
	if err != nil {
		return nil, err
	}
	return out.Response, nil
}

// Ask implements the primitive.
func (d *driver) Ask(ctx context.Context, key string, o seam.AskOptions, msgs []model.Message) (string, error) {
	out, err := d.step(ctx, stepInput{Op: opAsk, Key: key, Ask: o, Msgs: msgs})
	return out.Text, err
}

// Tools implements the primitive: an activity running the round's calls
// in parallel.
func (d *driver) Tools(ctx context.Context, key string, calls []model.ToolCall) ([]seam.ToolResult, error) {
	out, err := d.step(ctx, stepInput{Op: opTools, Key: key, Calls: calls})
	return out.Results, err
}

// Round implements the primitive.
func (d *driver) Round(ctx context.Context, key string, calls []model.ToolCall) ([]seam.ToolResult, error) {
	out, err := d.step(ctx, stepInput{Op: opRound, Key: key, Calls: calls})
	return out.Results, err
}

// CheckInput implements the primitive.
func (d *driver) CheckInput(ctx context.Context, key, text string) (string, error) {
	out, err := d.step(ctx, stepInput{Op: opCheckInput, Key: key, Text: text})
	return out.Text, err
}

// Delegate implements the primitive.
func (d *driver) Delegate(ctx context.Context, key, target, request string) (string, error) {
	return d.DelegateParts(ctx, key, target, request, nil)
}

// DelegateParts implements the primitive: a swarm runs as a child
// workflow (a run of its own in the store, in this run's tree), an agent
// as a step running its loop.
func (d *driver) DelegateParts(ctx context.Context, key, target, request string, parts []model.Part) (string, error) {
	var t *seam.Target
	for _, r := range d.Roster() {
		if r.Name == target {
			t = &r
			break
		}
	}
	if t == nil || !t.Swarm {
		out, err := d.step(ctx, stepInput{Op: opDelegate, Key: key, Target: target, Text: request, Parts: parts})
		return out.Text, err
	}
	if len(parts) > 0 {
		return "", unsupported("passing parts to a child swarm")
	}
	w := wfOf(ctx)
	input := json.RawMessage(request)
	if t.TextInput {
		input, _ = json.Marshal(request)
	} else if !json.Valid(input) {
		return "", seam.NewFailure(fmt.Sprintf("the request to swarm %s is not its JSON input", target), false)
	}
	child := d.st.id + "." + key
	aw := workflow.WithActivityOptions(w, d.e.activityOptions())
	// Runs started before the delegation was journaled in the parent
	// run replay without it.
	journaled := workflow.GetVersion(w, "handoff-journal", workflow.DefaultVersion, 1) >= 1
	h := handoffInput{RunID: d.st.id, Key: key, Target: target, Child: child, Turn: d.turn, Started: true, Text: request}
	if journaled {
		if err := workflow.ExecuteActivity(aw, actHandoff, h).Get(w, nil); err != nil {
			return "", stepError(err)
		}
	}
	cw := workflow.WithChildOptions(w, workflow.ChildWorkflowOptions{WorkflowID: child, TaskQueue: workflow.GetInfo(w).TaskQueueName})
	var out RunOutput
	if err := workflow.ExecuteChildWorkflow(cw, WorkflowName, RunInput{Swarm: target, RunID: child, Input: input, Parent: d.st.id}).Get(w, &out); err != nil {
		return "", stepError(err)
	}
	var answer error
	h.Started, h.Text = false, string(out.Result)
	if out.Status == "completed" {
		var s string
		if json.Unmarshal(out.Result, &s) == nil {
			h.Text = s
		}
	} else {
		h.Text, h.IsError = fmt.Sprintf("swarm %s %s: %s", target, out.Status, out.Reason), true
		answer = seam.NewFailure(h.Text, false)
	}
	if journaled {
		if err := workflow.ExecuteActivity(aw, actHandoff, h).Get(w, nil); err != nil {
			return "", stepError(err)
		}
	}
	if answer != nil {
		return "", answer
	}
	return h.Text, nil
}

// AwaitParts implements the primitive: the question is journaled and the
// workflow waits for the update UpdateResume.
func (d *driver) AwaitParts(ctx context.Context, key string, q seam.Question) (string, []model.Part, error) {
	if q.Reason == "" {
		return "", nil, fmt.Errorf("%w: a question needs a reason", swarm.ErrInvalid)
	}
	if ev, ok := d.st.journal[key+"/resumed"]; ok {
		return ev.Message, ev.Parts, nil
	}
	w := wfOf(ctx)
	aw := workflow.WithActivityOptions(w, d.e.activityOptions())
	// Waiting before the question is journaled: a resume that reads the
	// question in the store finds the run waiting for it.
	d.st.waiting = append(d.st.waiting, key)
	if err := workflow.ExecuteActivity(aw, actPause, pauseInput{RunID: d.st.id, Turn: d.turn, Key: key, Question: q}).Get(w, nil); err != nil {
		return "", nil, stepError(err)
	}
	if err := workflow.Await(w, func() bool { _, ok := d.st.answers[key]; return ok }); err != nil {
		// Withdrawn (the branch's context ended): a resume does not
		// answer it.
		d.st.waiting = slices.DeleteFunc(d.st.waiting, func(k string) bool { return k == key })
		return "", nil, err
	}
	msg := d.st.answers[key]
	if err := workflow.ExecuteActivity(aw, actAnswer, answerInput{RunID: d.st.id, Key: key, Message: msg}).Get(w, nil); err != nil {
		return "", nil, stepError(err)
	}
	return msg, nil, nil
}

// recorder is the engine driver's Record and RecordEvent.
type recorder interface {
	Record(ctx context.Context, key, kind string, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error)
	RecordEvent(ctx context.Context, key string, fn func(ctx context.Context) (swarm.Event, error)) (swarm.Event, error)
	Journal(ctx context.Context, events []swarm.Event, waiting string, working bool) error
}

// Record implements the primitive: a local activity runs fn and journals
// its value (once: the engine's journal answers a retry), and the
// workflow's history keeps it.
func (d *driver) Record(ctx context.Context, key, kind string, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	if v, ok, err := d.Recorded(key); ok || err != nil {
		return v, err
	}
	return d.local(ctx, func(ctx context.Context, sd any) (json.RawMessage, error) {
		return sd.(recorder).Record(ctx, key, kind, fn)
	})
}

// Recorded implements the primitive, from the journal as loaded when the
// workflow began.
func (d *driver) Recorded(key string) (json.RawMessage, bool, error) {
	ev, ok := d.st.journal[key]
	switch {
	case !ok || ev.Type != swarm.EventRecorded:
		return nil, false, nil
	case ev.IsError:
		return nil, true, seam.NewFailure(ev.Output, false)
	}
	return ev.Result, true, nil
}

// RecordEvent implements the primitive: fn runs in the workflow (it may
// take steps), and a local activity journals its event.
func (d *driver) RecordEvent(ctx context.Context, key string, fn func(ctx context.Context) (swarm.Event, error)) (swarm.Event, error) {
	if ev, ok := d.st.journal[key]; ok {
		return ev, nil
	}
	ev, err := fn(ctx)
	if err != nil {
		return swarm.Event{}, err
	}
	v, err := d.local(ctx, func(ctx context.Context, sd any) (json.RawMessage, error) {
		rec, err := sd.(recorder).RecordEvent(ctx, key, func(context.Context) (swarm.Event, error) { return ev, nil })
		if err != nil {
			return nil, err
		}
		return json.Marshal(rec)
	})
	if err != nil {
		return swarm.Event{}, err
	}
	var rec swarm.Event
	if err := json.Unmarshal(v, &rec); err != nil {
		return swarm.Event{}, err
	}
	return rec, nil
}

// RecordedEvent implements the primitive.
func (d *driver) RecordedEvent(key string) (swarm.Event, bool, error) {
	ev, ok := d.st.journal[key]
	return ev, ok, nil
}

// Journaled implements the primitive.
func (d *driver) Journaled(types ...swarm.EventType) ([]swarm.Event, error) {
	var out []swarm.Event
	for _, ev := range d.st.order {
		for _, t := range types {
			if ev.Type == t {
				out = append(out, ev)
				break
			}
		}
	}
	return out, nil
}

// Journal implements the primitive (a local activity); a pause journaled
// by the strategy itself is not supported.
func (d *driver) Journal(ctx context.Context, events []swarm.Event, waiting string, working bool) error {
	if waiting != "" || working {
		return unsupported("a pause journaled by the strategy (Journal with Waiting)")
	}
	_, err := d.local(ctx, func(ctx context.Context, sd any) (json.RawMessage, error) {
		return nil, sd.(recorder).Journal(ctx, events, "", false)
	})
	return err
}

// Compacted implements the primitive: msgs as they are. The engine's
// compaction reads the run's journal in a step, and the primitive takes
// no context to run one in: a strategy's history is not compacted on this
// engine (its model steps still compact what they send, as the engine
// does).
func (d *driver) Compacted(msgs []model.Message) []model.Message { return msgs }

// Sleep implements the primitive: a workflow timer.
func (d *driver) Sleep(ctx context.Context, key string, dur time.Duration) error {
	return workflow.Sleep(wfOf(ctx), dur)
}

// Parallel implements the primitive.
func (d *driver) Parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) []error {
	return d.ParallelLimit(ctx, n, 0, fn)
}

// defaultParallel is ParallelLimit's limit when none is given.
const defaultParallel = 16

// ParallelLimit implements the primitive: workflow goroutines, at most
// limit at a time, each with its own workflow.Context in its context.
func (d *driver) ParallelLimit(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) []error {
	w := wfOf(ctx)
	errs := make([]error, n)
	if limit <= 0 {
		limit = defaultParallel
	}
	sem := workflow.NewSemaphore(w, int64(limit))
	wg := workflow.NewWaitGroup(w)
	for i := range n {
		if err := sem.Acquire(w, 1); err != nil {
			for j := i; j < n; j++ {
				errs[j] = err
			}
			break
		}
		wg.Add(1)
		d.st.branches++
		workflow.Go(w, func(bw workflow.Context) {
			defer wg.Done()
			defer sem.Release(1)
			defer func() { d.st.branches-- }()
			defer func() {
				if p := recover(); p != nil {
					errs[i] = seam.NewFailure(fmt.Sprintf("panic: %v\n%s", p, debug.Stack()), false)
				}
			}()
			errs[i] = fn(context.WithValue(ctx, wfKey{}, bw), i)
		})
	}
	wg.Wait(w)
	return errs
}

// As implements the primitive: the driver's steps act as the agent (as
// local activities: the agent and its tools are Go values).
func (d *driver) As(a *swarm.Agent, tools, hidden []swarm.Tool, data map[string]any, maxTurns int, gs []guardrail.Guardrail, c *compact.Config) (any, error) {
	if a == nil {
		return nil, fmt.Errorf("%w: As needs an agent", swarm.ErrInvalid)
	}
	n := *d
	n.as = &asArgs{agent: a, tools: tools, hidden: hidden, data: data, maxTurns: maxTurns, gs: gs, c: c}
	return &n, nil
}

// Checkpoint implements the primitive: past the engine's history limit,
// and when no branch runs, the workflow continues as new carrying state.
func (d *driver) Checkpoint(ctx context.Context, key string, state any) {
	w := wfOf(ctx)
	if d.st.branches > 0 || workflow.GetInfo(w).GetCurrentHistoryLength() < d.e.history {
		return
	}
	b, err := json.Marshal(state)
	if err != nil {
		workflow.GetLogger(w).Warn("checkpoint not taken", "key", key, "err", err)
		return
	}
	panic(continueAsNew{Continued{Key: key, State: b}})
}

// Restore implements the primitive.
func (d *driver) Restore(v any) (bool, error) {
	c := d.st.in.Continued
	if c == nil {
		return false, nil
	}
	if err := json.Unmarshal(c.State, v); err != nil {
		return false, fmt.Errorf("restore the checkpoint %s: %w", c.Key, err)
	}
	return true, nil
}

// StartChildren implements the primitive (not supported).
func (d *driver) StartChildren(ctx context.Context, children ...seam.Child) error {
	return unsupported("StartChildren (children awaited by mail)")
}

// Mailbox implements the primitive (not supported).
func (d *driver) Mailbox(ctx context.Context, limit int) ([]store.Mail, error) {
	return nil, unsupported("a run's mailbox")
}

// AwaitMail implements the primitive (not supported).
func (d *driver) AwaitMail(ctx context.Context, key string, with ...swarm.Event) error {
	return unsupported("awaiting mail")
}
