package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// maxTreeDepth bounds the walk down a case's run tree.
const maxTreeDepth = 64

// builtinTools are the tool-calling loop's own tools, which are not calls
// of a trajectory.
var builtinTools = []string{"complete", "pause", "fail"}

// Observe reads what run id of rt did from its journal and those of the
// runs below it, once it has settled (and each run below, when it is
// reached, too): its status, output, the tool calls
// and handoffs of the whole tree in order, the transcript, and what it
// spent. A conversation or a team's lead (a run that takes user
// messages) that waits for the next message has completed: its output is
// its last reply.
func Observe(ctx context.Context, rt *swarm.Runtime, id string) (Observed, error) {
	if _, err := rt.Settle(ctx, id); err != nil {
		return Observed{RunID: id}, err
	}
	return observe(ctx, rt, id, false)
}

// observe reads run id's observation; the run has settled (messages: it
// took user messages).
func observe(ctx context.Context, rt *swarm.Runtime, id string, messages bool) (Observed, error) {
	o := Observed{RunID: id}
	st, err := rt.Settle(ctx, id)
	if err != nil {
		return o, err
	}
	o.Status, o.Reason, o.Turns = string(st.State), st.Reason, st.Turn
	evs, err := rt.History(ctx, id, 0)
	if err != nil {
		return o, fmt.Errorf("observe %s: %w", id, err)
	}
	w := &walker{ctx: ctx, rt: rt, seen: map[string]bool{id: true}}
	if err := w.calls(id, evs, 0); err != nil {
		return o, err
	}
	o.Calls = w.out
	first, last := w.first, w.last
	if len(evs) > 0 {
		first = evs[0].Time
	}
	var replies int
	for _, ev := range evs {
		switch {
		case ev.Type == swarm.EventStarted && !messages:
			if text := inputText(ev.Input); text != "" {
				o.Transcript = append(o.Transcript, model.Message{Role: model.RoleUser, Content: text})
			}
		case ev.Type == swarm.EventResumed && isMessageKey(ev.Key):
			o.Transcript = append(o.Transcript, model.Message{Role: model.RoleUser, Content: ev.Message})
		case ev.Type == swarm.EventReply:
			replies++
			o.Transcript = append(o.Transcript, model.Message{Role: model.RoleAssistant, Content: ev.Text, Name: ev.Agent})
			o.Output = ev.Text
			if ev.IsError {
				o.Status, o.Reason = string(swarm.StateFailed), ev.Reason
			}
		}
	}
	if st.State == swarm.StatePaused && st.Reason == swarm.AwaitingMessage && replies > 0 && o.Status == string(swarm.StatePaused) {
		// A conversation waiting for the next message has done what it
		// was asked.
		o.Status, o.Reason = string(swarm.StateCompleted), ""
	}
	if st.State == swarm.StateCompleted {
		o.Output = inputText(st.Result)
		o.Transcript = append(o.Transcript, model.Message{Role: model.RoleAssistant, Content: o.Output})
	}
	u, err := rt.TreeUsage(ctx, id)
	if err != nil {
		return o, fmt.Errorf("observe %s: %w", id, err)
	}
	o.ModelCalls, o.Tokens, o.Cost = int(u.Calls), int(u.InputTokens+u.OutputTokens), u.Cost
	if !first.IsZero() && last.After(first) {
		o.Duration = Duration(last.Sub(first))
	}
	return o, nil
}

// inputText is a run's input or result as text: a JSON string's text,
// other JSON as it is, nothing for null.
func inputText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// walker collects the calls of a run tree in order: a child run's calls
// where the handoff that started it is, the other runs below a run (a
// team's members) after its own, in the order they were created.
type walker struct {
	ctx         context.Context
	rt          *swarm.Runtime
	out         []ObservedCall
	seen        map[string]bool
	first, last time.Time
}

func (w *walker) calls(id string, evs []swarm.Event, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("observe %s: run tree deeper than %d", id, maxTreeDepth)
	}
	for _, ev := range evs {
		if ev.Time.After(w.last) {
			w.last = ev.Time
		}
		switch ev.Type {
		case swarm.EventToolCall:
			if slices.Contains(builtinTools, ev.Tool) {
				continue
			}
			w.out = append(w.out, ObservedCall{Kind: "tool", Name: ev.Tool, Agent: ev.Agent, Args: ev.Arguments})
		case swarm.EventHandoffStarted:
			args := ev.Arguments
			if len(args) == 0 {
				args, _ = json.Marshal(map[string]string{"request": ev.Request})
			}
			w.out = append(w.out, ObservedCall{Kind: "handoff", Name: ev.Target, Agent: ev.Agent, Args: args})
			if ev.Child != "" && !w.seen[ev.Child] {
				if err := w.child(ev.Child, depth); err != nil {
					return err
				}
			}
		}
	}
	kids, err := w.rt.Store().List(w.ctx, store.Filter{Parent: id})
	if err != nil {
		return fmt.Errorf("observe %s: %w", id, err)
	}
	slices.Reverse(kids) // oldest first
	for _, k := range kids {
		if !w.seen[k.ID] {
			if err := w.child(k.ID, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *walker) child(id string, depth int) error {
	w.seen[id] = true
	// A run below that is still working (a team's member busy after its
	// lead answered) is observed once it has settled.
	if _, err := w.rt.Settle(w.ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("observe %s: %w", id, err)
	}
	evs, err := w.rt.History(w.ctx, id, 0)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil // refused before it started
		}
		return fmt.Errorf("observe %s: %w", id, err)
	}
	return w.calls(id, evs, depth+1)
}
