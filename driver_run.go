package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// What a strategy knows of its run besides its input, what a strategy may
// check before its run starts, and the steps a strategy with its own state
// needs: a model call that offers no tools, and a record of its own.

// Checker is an optional interface of a [Strategy]: a strategy that needs
// a swarm of a certain shape (say, with handoffs to delegate to) checks it
// before a run starts. Check is called whenever a run's plan is made (when
// the run starts, and again when it is driven after a restart), before
// anything is journaled, with a Driver that describes the run (Agent,
// Input, Roster, ToolNames, ResultSchema) but runs no steps. An
// error refuses the run: Start returns it, wrapping [ErrInvalid].
//
// maxTurns, when positive, replaces Spec.MaxTurns as the bound of turns
// the run's status shows, for a strategy that counts its own rounds (see
// [Driver.AtTurn]).
type Checker interface {
	Check(d *Driver) (maxTurns int, err error)
}

// checkStrategy lets the strategy of plan p, a run of info with input,
// check it.
func (rt *Runtime) checkStrategy(p *plan, info *defInfo, input json.RawMessage) error {
	s, ok := p.strategy.(seamStrategy)
	if !ok {
		return nil
	}
	c, ok := s.s.(Checker)
	if !ok {
		return nil
	}
	n, err := c.Check(&Driver{r: &runner{rt: rt, plan: p, info: info, input: input}, checking: true})
	switch {
	case err != nil && !errors.Is(err, ErrInvalid):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	case err != nil:
		return err
	case n > 0:
		p.root.maxTurns = n
	}
	return nil
}

// Target is an agent or a swarm a run may delegate to (see
// [Driver.Roster]).
type Target struct {
	// Name is the agent's name or the swarm's id.
	Name string
	// Description is what the orchestrator's model is told the target
	// does.
	Description string
	// Swarm is set for a swarm, which runs as a child run, and unset for
	// an agent of the run.
	Swarm bool
	// TextInput is set for an agent and for a swarm whose input is text;
	// another swarm takes Delegate's request as its JSON input.
	TextInput bool
}

// Roster lists the agents and swarms the run may delegate to (the
// swarm's Spec.Handoffs), in order, with what a strategy needs to know of
// each.
func (d *Driver) Roster() []Target {
	ap := d.root()
	var out []Target
	for _, def := range ap.toolDefs {
		name, ok := strings.CutPrefix(def.Name, handoffPre)
		if !ok {
			continue
		}
		t := Target{Name: name, Description: def.Description, TextInput: true}
		if ct, ok := ap.children[def.Name]; ok {
			t.Swarm, t.TextInput = true, ct.info.textIn
		}
		out = append(out, t)
	}
	return out
}

// ToolNames lists the orchestrator's own tools, which Model offers besides
// the handoffs and the built-in tools: the swarm's Tools (absorbed agents
// and dynamic tool sets by their names) and the registry tools.
func (d *Driver) ToolNames() []string {
	ap := d.root()
	var out []string
	for _, def := range ap.toolDefs {
		switch {
		case strings.HasPrefix(def.Name, handoffPre), def.Name == toolComplete, def.Name == toolPause, def.Name == toolFail:
			continue
		}
		out = append(out, def.Name)
	}
	if ap.dynamic != nil {
		for _, s := range ap.dynamic.sets {
			out = append(out, s.Name())
		}
	}
	return out
}

// ResultSchema is the JSON schema of the run's result, or nil when the
// result is text.
func (d *Driver) ResultSchema() json.RawMessage {
	if d.r.info.textOut {
		return nil
	}
	return d.r.info.outSchema
}

// Result makes the run's result of a model's text answer, as the
// tool-calling loop does: any text is the result of a swarm whose result
// is text; otherwise the text must be JSON (fenced in ``` or not) that
// matches the result schema.
func (d *Driver) Result(text string) (json.RawMessage, error) {
	return d.r.info.textToResult(text)
}

// AskOptions say how [Driver.Ask] calls a model.
type AskOptions struct {
	// Agent is the agent that answers: the orchestrator when empty, or
	// one of the run's agents (an agent of Roster).
	Agent string
	// System is added to the agent's system prompt, after a blank line.
	System string
	// Schema, when set, asks for a reply that is JSON matching it
	// (structured output, where the provider supports it).
	Schema json.RawMessage
}

// Ask calls the model of an agent with msgs after its system prompt,
// offering it no tools, and returns the reply's text (tool calls in it are
// dropped, never journaled): the calls of a strategy that asks a model for
// a judgement or a plan rather than for actions. The response is
// journaled under key+"/model"; retries, guardrails, compaction, usage
// and limits apply as in Model, and a failure of the model is returned as
// a [*Failure].
func (d *Driver) Ask(ctx context.Context, key string, o AskOptions, msgs []model.Message) (string, error) {
	if err := d.checkKey(key); err != nil {
		return "", err
	}
	ap := d.root()
	if o.Agent != "" && o.Agent != ap.name {
		a, ok := d.r.plan.agents[o.Agent]
		if !ok {
			return "", fmt.Errorf("%w: Ask: %q is not an agent of the run", ErrInvalid, o.Agent)
		}
		ap = a
	}
	c := *ap
	c.root, c.toolDefs, c.dynamic, c.schema, c.textOnly = false, nil, nil, o.Schema, true
	if o.System != "" {
		c.system = strings.TrimSpace(ap.system + "\n\n" + o.System)
	}
	resp, err := d.r.modelStep(ctx, &c, key, d.turn, msgs)
	if err != nil {
		return "", d.stepError(ctx, err)
	}
	return resp.Message.Content, nil
}

// RecordEvent journals a strategy's own event under key, once: the event
// fn returns, whose type must not be one of the engine's (its Key is set
// to key, its Agent defaults to the orchestrator and its Turn to the
// Driver's turn). When the journal holds a record under key, RecordEvent
// returns that event and does not run fn, so that a strategy's state (a
// plan, a counter) replays as it was recorded. fn may run other steps; an
// error of fn is returned and nothing is journaled.
//
// The event reaches the run's history and live subscribers like the
// engine's own. Of Event's fields, a strategy may fill any but Seq, Time
// and RunID; Ledger and Progress carry a strategy's JSON.
func (d *Driver) RecordEvent(ctx context.Context, key string, fn func(ctx context.Context) (Event, error)) (Event, error) {
	if err := d.checkKey(key); err != nil {
		return Event{}, err
	}
	if ev, ok, err := d.RecordedEvent(key); ok || err != nil {
		return ev, err
	}
	ev, err := fn(ctx)
	if err != nil {
		return Event{}, err
	}
	if ev.Type == "" || engineEvents[ev.Type] {
		return Event{}, fmt.Errorf("%w: step %s: a strategy cannot record an event of type %q", ErrInvalid, key, ev.Type)
	}
	ev.Seq, ev.Time, ev.RunID, ev.Key = 0, time.Time{}, "", key
	if ev.Agent == "" {
		ev.Agent = d.Agent()
	}
	if ev.Turn == 0 {
		ev.Turn = d.turn
	}
	return d.r.record(ctx, ev, store.Update{Turn: ev.Turn})
}

// engineEvents are the event types the engine journals and reads itself.
var engineEvents = map[EventType]bool{
	EventStarted: true, EventModelResponse: true, EventModelError: true, EventToolCall: true, EventToolResult: true,
	EventHandoffStarted: true, EventHandoffReturned: true, EventTurnCompleted: true, EventPaused: true,
	EventResumed: true, EventCompleted: true, EventFailed: true, EventStopped: true, EventRecorded: true,
	EventGuardrail: true, EventCompacted: true, EventDelta: true,
}
