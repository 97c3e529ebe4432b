package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/swarmrt/swarm"
)

// Session is a handle on one conversation run. It holds no state of its
// own: every method asks the runtime's store, so a handle made with Attach
// in another process continues the same conversation.
type Session[Ctx any] struct {
	rt   *swarm.Runtime
	id   string
	conv *Conversation[Ctx]
}

// Reply is a conversation's answer to one user message.
type Reply[Ctx any] struct {
	// Message is the number of the user message (from 1).
	Message int
	// Text is the answer.
	Text string
	// Agent is the agent that answered.
	Agent string
	// Active is the agent that will answer the next message.
	Active string
	// Context is the shared context after the turn.
	Context Ctx
	// Waiting, when not empty, says that the turn is paused because a
	// child swarm asks a human (Text is then empty); the next Say answers
	// that question, and its reply is the answer to this message.
	Waiting string
}

// Utterance is one message of a conversation's transcript.
type Utterance struct {
	// Message is the number of the user message it belongs to.
	Message int `json:"message"`
	// Agent is the agent that spoke, "" for the user.
	Agent string `json:"agent,omitempty"`
	Text  string `json:"text"`
}

// Start begins a session with the spec's initial context and waits until
// it awaits its first message. With [swarm.WithID] it is idempotent: starting an
// existing session returns a handle on it.
func (c *Conversation[Ctx]) Start(ctx context.Context, rt *swarm.Runtime, opts ...swarm.StartOption) (*Session[Ctx], error) {
	return c.start(ctx, rt, nil, opts)
}

// StartWith begins a session whose shared context starts as initial.
func (c *Conversation[Ctx]) StartWith(ctx context.Context, rt *swarm.Runtime, initial Ctx, opts ...swarm.StartOption) (*Session[Ctx], error) {
	raw, err := json.Marshal(initial)
	if err != nil {
		return nil, fmt.Errorf("conversation %s: encode context: %w", c.ID(), err)
	}
	return c.start(ctx, rt, raw, opts)
}

func (c *Conversation[Ctx]) start(ctx context.Context, rt *swarm.Runtime, raw json.RawMessage, opts []swarm.StartOption) (*Session[Ctx], error) {
	if err := registerOnce(rt, c); err != nil {
		return nil, err
	}
	id, err := rt.Start(ctx, c.ID(), raw, opts...)
	if err != nil {
		return nil, err
	}
	s := &Session[Ctx]{rt: rt, id: id, conv: c}
	if _, err := s.settle(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Attach returns a handle on an existing session of c (registering c with
// rt if it is not yet, so that rt can drive the session). It fails with
// swarm.ErrNotFound for an unknown id and swarm.ErrUnknownSwarm if the run is not a
// session of c.
func (c *Conversation[Ctx]) Attach(ctx context.Context, rt *swarm.Runtime, id string) (*Session[Ctx], error) {
	if err := registerOnce(rt, c); err != nil {
		return nil, err
	}
	r, err := rt.Store().Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", id, err)
	}
	if r.Swarm != c.ID() {
		return nil, fmt.Errorf("attach %s: run belongs to %q, not conversation %q: %w", id, r.Swarm, c.ID(), swarm.ErrUnknownSwarm)
	}
	return &Session[Ctx]{rt: rt, id: id, conv: c}, nil
}

// ID returns the session's run id.
func (s *Session[Ctx]) ID() string { return s.id }

// Status returns the session's run status; Agent is the active agent.
func (s *Session[Ctx]) Status(ctx context.Context) (swarm.Status, error) {
	return s.rt.Status(ctx, s.id)
}

// Events replays and follows the session's events (see [swarm.Runtime.Events]).
func (s *Session[Ctx]) Events(ctx context.Context, after int64, opts ...swarm.EventsOption) iter.Seq2[swarm.Event, error] {
	return s.rt.Events(ctx, s.id, after, opts...)
}

// Wait blocks until the session awaits a message (or a human answer) or
// has ended, and returns its status. A turn whose process died is
// continued here once that process's lease has expired.
func (s *Session[Ctx]) Wait(ctx context.Context) (swarm.Status, error) { return s.settle(ctx) }

// Close ends the session (state stopped).
func (s *Session[Ctx]) Close(ctx context.Context) error {
	return s.rt.Stop(ctx, s.id, "conversation closed")
}

// Say sends a user message and returns the answer. The message goes
// through the run's inbox, so it is durable once sent: if this process
// dies, another one continues the turn (Say or Start on the session in
// that process finishes it first). A turn still in progress is waited for
// (and continued here if its process died) before the message is sent.
//
// A turn that gets no answer returns the Reply (Agent, Context) and an
// error wrapping swarm.ErrTurnFailed; the session stays open. Say on a closed
// session fails with swarm.ErrInvalidState.
func (s *Session[Ctx]) Say(ctx context.Context, message string, opts ...swarm.SayOption) (Reply[Ctx], error) {
	var rep Reply[Ctx]
	ev, st, err := s.rt.Say(ctx, s.id, message, opts...)
	switch {
	case ev != nil:
		return s.replyOf(messageNumber(ev.Key), *ev), err
	case err != nil:
		return rep, err
	}
	// Paused without an answer: a child swarm asks a human.
	rep.Waiting, rep.Active = st.Reason, st.Agent
	evs, err := s.rt.History(ctx, s.id, 0)
	if err != nil {
		return rep, err
	}
	for _, ev := range slices.Backward(evs) {
		if ev.Type == swarm.EventResumed && strings.HasSuffix(ev.Key, "/await/resumed") {
			rep.Message = messageNumber(ev.Key)
			break
		}
	}
	return rep, nil
}

// messageNumber is n of a key "m<n>/...".
func messageNumber(key string) int {
	head, _, _ := strings.Cut(strings.TrimPrefix(key, "m"), "/")
	n, _ := strconv.Atoi(head)
	return n
}

func (s *Session[Ctx]) replyOf(n int, ev swarm.Event) Reply[Ctx] {
	rep := Reply[Ctx]{Message: n, Text: ev.Text, Agent: ev.Agent, Active: ev.Target}
	_ = json.Unmarshal(ev.Shared, &rep.Context)
	return rep
}

// settle waits until the session is not running, driving it here when
// its owner is gone.
func (s *Session[Ctx]) settle(ctx context.Context) (swarm.Status, error) {
	return s.rt.Settle(ctx, s.id)
}

// Context returns the newest shared context in the session's journal.
func (s *Session[Ctx]) Context(ctx context.Context) (Ctx, error) {
	var v Ctx
	evs, err := s.rt.History(ctx, s.id, 0)
	if err != nil {
		return v, err
	}
	raw := s.conv.cd.initial
	for _, ev := range evs {
		switch {
		case ev.Type == swarm.EventStarted && len(ev.Input) > 0 && string(ev.Input) != "null":
			raw = ev.Input
		case len(ev.Shared) > 0:
			raw = ev.Shared
		}
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("conversation %s: decode context: %w", s.id, err)
	}
	initMap(&v)
	return v, nil
}

// Transcript returns the user messages and the answers so far.
func (s *Session[Ctx]) Transcript(ctx context.Context) ([]Utterance, error) {
	evs, err := s.rt.History(ctx, s.id, 0)
	if err != nil {
		return nil, err
	}
	var out []Utterance
	for _, ev := range evs {
		switch {
		case ev.Type == swarm.EventResumed && strings.HasSuffix(ev.Key, "/await/resumed"):
			out = append(out, Utterance{Message: messageNumber(ev.Key), Text: ev.Message})
		case ev.Type == swarm.EventReply && !ev.IsError:
			out = append(out, Utterance{Message: messageNumber(ev.Key), Agent: ev.Agent, Text: ev.Text})
		}
	}
	return out, nil
}

// registerOnce registers d with rt unless it is; another definition with
// d's id is an error.
func registerOnce(rt *swarm.Runtime, d swarm.Definition) error {
	for _, r := range rt.Swarms() {
		switch {
		case r.ID() != d.ID():
		case r == d:
			return nil
		default:
			return fmt.Errorf("%w: another definition is registered as %q", swarm.ErrDuplicate, d.ID())
		}
	}
	if err := rt.Register(d); err != nil && !errors.Is(err, swarm.ErrDuplicate) {
		return err
	}
	return nil
}
