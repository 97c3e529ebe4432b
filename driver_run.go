package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// What a strategy knows of its run besides its input, what a strategy may
// check before its run starts, and the steps a strategy with its own state
// needs: a model call that offers no tools, and a record of its own.

// checkStrategy lets the strategy of plan p, a run of info with input,
// check it.
func (rt *Runtime) checkStrategy(p *plan, info *defInfo, input json.RawMessage) error {
	s, ok := p.strategy.(seamStrategy)
	if !ok {
		return nil
	}
	n, err := s.s.Check(&seamDriver{r: &runner{rt: rt, plan: p, info: info, input: input}, checking: true})
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

// Roster implements strategy.Driver.Roster.
func (d *seamDriver) Roster() []seam.Target {
	ap := d.root()
	var out []seam.Target
	for _, def := range ap.toolDefs {
		name, ok := strings.CutPrefix(def.Name, handoffPre)
		if !ok {
			continue
		}
		t := seam.Target{Name: name, Description: def.Description, TextInput: true}
		if ct, ok := ap.children[def.Name]; ok {
			t.Swarm, t.TextInput = true, ct.info.textIn
		}
		out = append(out, t)
	}
	return out
}

// ToolNames implements strategy.Driver.ToolNames.
func (d *seamDriver) ToolNames() []string {
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

// ResultSchema implements strategy.Driver.ResultSchema.
func (d *seamDriver) ResultSchema() json.RawMessage {
	if d.r.info.textOut {
		return nil
	}
	return d.r.info.outSchema
}

// Result implements strategy.Driver.Result.
func (d *seamDriver) Result(text string) (json.RawMessage, error) {
	return d.r.info.textToResult(text)
}

// Ask implements strategy.Driver.Ask.
func (d *seamDriver) Ask(ctx context.Context, key string, o seam.AskOptions, msgs []model.Message) (string, error) {
	if err := d.takeStep(key, "Ask", kindModel); err != nil {
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

// RecordEvent implements strategy.Driver.RecordEvent.
func (d *seamDriver) RecordEvent(ctx context.Context, key string, fn func(ctx context.Context) (Event, error)) (Event, error) {
	if err := d.takeStep(key, "RecordEvent", kindRecord); err != nil {
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
