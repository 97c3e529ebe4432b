package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/swarmrt/swarm/store"
)

// Session is a handle on one conversation run. It holds no state of its
// own: every method asks the runtime's store, so a handle made with Attach
// in another process continues the same conversation.
type Session[Ctx any] struct {
	rt   *Runtime
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

// SayOption configures [Session.Say].
type SayOption func(*sayConfig)

type sayConfig struct{ stream func(Event) }

// WithStream passes the streamed model text of the turn to fn as it
// arrives: delta events (Agent, Call, Text) of every model call made in
// this process while answering, including those of agents that hand over.
// fn runs on Say's goroutine.
func WithStream(fn func(delta Event)) SayOption { return func(c *sayConfig) { c.stream = fn } }

// Start begins a session with the spec's initial context and waits until
// it awaits its first message. With [WithID] it is idempotent: starting an
// existing session returns a handle on it.
func (c *Conversation[Ctx]) Start(ctx context.Context, rt *Runtime, opts ...StartOption) (*Session[Ctx], error) {
	return c.start(ctx, rt, nil, opts)
}

// StartWith begins a session whose shared context starts as initial.
func (c *Conversation[Ctx]) StartWith(ctx context.Context, rt *Runtime, initial Ctx, opts ...StartOption) (*Session[Ctx], error) {
	raw, err := json.Marshal(initial)
	if err != nil {
		return nil, fmt.Errorf("conversation %s: encode context: %w", c.id, err)
	}
	return c.start(ctx, rt, raw, opts)
}

func (c *Conversation[Ctx]) start(ctx context.Context, rt *Runtime, raw json.RawMessage, opts []StartOption) (*Session[Ctx], error) {
	if err := registerOnce(rt, c); err != nil {
		return nil, err
	}
	id, err := rt.Start(ctx, c.id, raw, opts...)
	if err != nil {
		return nil, err
	}
	s := &Session[Ctx]{rt: rt, id: id, conv: c}
	if _, err := s.settle(ctx, nil, nil); err != nil {
		return nil, err
	}
	return s, nil
}

// Attach returns a handle on an existing session of c (registering c with
// rt if it is not yet, so that rt can drive the session). It fails with
// ErrNotFound for an unknown id and ErrUnknownSwarm if the run is not a
// session of c.
func (c *Conversation[Ctx]) Attach(ctx context.Context, rt *Runtime, id string) (*Session[Ctx], error) {
	if err := registerOnce(rt, c); err != nil {
		return nil, err
	}
	r, err := rt.store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", id, err)
	}
	if r.Swarm != c.id {
		return nil, fmt.Errorf("attach %s: run belongs to %q, not conversation %q: %w", id, r.Swarm, c.id, ErrUnknownSwarm)
	}
	return &Session[Ctx]{rt: rt, id: id, conv: c}, nil
}

// ID returns the session's run id.
func (s *Session[Ctx]) ID() string { return s.id }

// Status returns the session's run status; Agent is the active agent.
func (s *Session[Ctx]) Status(ctx context.Context) (Status, error) { return s.rt.Status(ctx, s.id) }

// Events replays and follows the session's events (see [Runtime.Events]).
func (s *Session[Ctx]) Events(ctx context.Context, after int64, opts ...EventsOption) iter.Seq2[Event, error] {
	return s.rt.Events(ctx, s.id, after, opts...)
}

// Wait blocks until the session awaits a message (or a human answer) or
// has ended, and returns its status. A turn whose process died is
// continued here once that process's lease has expired.
func (s *Session[Ctx]) Wait(ctx context.Context) (Status, error) { return s.settle(ctx, nil, nil) }

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
// error wrapping ErrTurnFailed; the session stays open. Say on a closed
// session fails with ErrInvalidState.
func (s *Session[Ctx]) Say(ctx context.Context, message string, opts ...SayOption) (Reply[Ctx], error) {
	var rep Reply[Ctx]
	n, ev, st, err := s.rt.say(ctx, "conversation", s.id, message, opts)
	switch {
	case ev != nil:
		return s.replyOf(n, *ev), err
	case err != nil:
		return rep, err
	}
	// Paused without an answer: a child swarm asks a human.
	rep.Message, rep.Waiting, rep.Active = n, st.Reason, st.Agent
	return rep, nil
}

// say sends message from the user to run id (what names it in errors: a
// conversation, a team), which waits for it, and waits for the answer. The
// message is a resume pinned to the pause the run waits at, so that of two
// messages sent at once one is refused (ErrInvalidState) rather than both
// answering the same pause. A run still working is waited for (and driven
// here if its process died) before the message is sent.
//
// It returns the number n of the message and the run's status once it has
// settled. ev is the run's answer to message n (its "m<n>/reply"
// record), nil when the run paused again without one (a child swarm asks a
// human; err is nil) or ended (err says how). An answer that is a failure
// comes with an error wrapping ErrTurnFailed.
func (rt *Runtime) say(ctx context.Context, what, id, message string, opts []SayOption) (n int, ev *Event, st Status, err error) {
	var sc sayConfig
	for _, o := range opts {
		o(&sc)
	}
	if strings.TrimSpace(message) == "" {
		return 0, nil, st, fmt.Errorf("%w: empty message", ErrInvalidInput)
	}
	if st, err = rt.settle(ctx, id, nil, nil); err != nil {
		return 0, nil, st, err
	}
	if st.State != StatePaused {
		return 0, nil, st, fmt.Errorf("%s %s is %s: %w", what, id, st.State, ErrInvalidState)
	}
	p, ok := rt.lastPause(ctx, id, st.LastSeq)
	if !ok {
		return 0, nil, st, fmt.Errorf("%s %s: no pause in its journal: %w", what, id, ErrInvalidState)
	}
	n = messageNumber(p.Key)
	var sub *liveSub
	if sc.stream != nil {
		sub = rt.live.subscribe(id)
		defer rt.live.unsubscribe(id, sub)
	}
	if _, err := rt.store.Send(ctx, id, store.Message{Kind: store.MsgResume, Text: message, Time: time.Now(), Pause: p.Seq}); err != nil {
		if errors.Is(err, store.ErrInvalidState) {
			return n, nil, st, fmt.Errorf("%s %s is answering another message: %w", what, id, err)
		}
		return n, nil, st, fmt.Errorf("say to %s %s: %w", what, id, err)
	}
	if err := rt.wake(ctx, id); err != nil {
		return n, nil, st, fmt.Errorf("say to %s %s: %w", what, id, err)
	}
	if st, err = rt.settle(ctx, id, sub, sc.stream); err != nil {
		return n, nil, st, err
	}
	evs, err := rt.History(ctx, id, p.Seq)
	if err != nil {
		return n, nil, st, err
	}
	key := "m" + strconv.Itoa(n) + "/reply"
	for i := range evs {
		if evs[i].Key != key {
			continue
		}
		if evs[i].IsError {
			err = fmt.Errorf("%w: message %d: %s", ErrTurnFailed, n, evs[i].Reason)
		}
		return n, &evs[i], st, err
	}
	if st.State == StatePaused {
		return n, nil, st, nil
	}
	return n, nil, st, fmt.Errorf("%s %s ended before answering: %s %s: %w", what, id, st.State, st.Reason, ErrInvalidState)
}

func (s *Session[Ctx]) replyOf(n int, ev Event) Reply[Ctx] {
	rep := Reply[Ctx]{Message: n, Text: ev.Text, Agent: ev.Agent, Active: ev.Target}
	_ = json.Unmarshal(ev.Shared, &rep.Context)
	return rep
}

// messageNumber is n of a pause key "m<n>/...".
func messageNumber(key string) int {
	head, _, _ := strings.Cut(strings.TrimPrefix(key, "m"), "/")
	n, _ := strconv.Atoi(head)
	return n
}

// settle waits until the session is not running, driving it here when its
// owner is gone. With sub, streamed deltas go to fn meanwhile.
func (s *Session[Ctx]) settle(ctx context.Context, sub *liveSub, fn func(Event)) (Status, error) {
	return s.rt.settle(ctx, s.id, sub, fn)
}

// settle waits until run id is not running, driving it here when its
// owner is gone. With sub, streamed deltas go to fn meanwhile, and those of
// a turn that ended before settle looked go to fn before it returns.
func (rt *Runtime) settle(ctx context.Context, id string, sub *liveSub, fn func(Event)) (Status, error) {
	for {
		st, err := rt.Status(ctx, id)
		if err != nil || st.State != StateRunning {
			sub.drain(fn)
			return st, err
		}
		rt.adoptChild(ctx, id)
		wctx, cancel := context.WithTimeout(ctx, rt.cfg.Lease)
		st, err = rt.waitLive(wctx, id, sub, fn)
		cancel()
		switch {
		case err == nil:
			return st, nil
		case ctx.Err() != nil:
			return st, ctx.Err()
		case wctx.Err() == nil:
			return st, err
		}
		// The lease of a dead owner may have expired by now: adopt again.
	}
}

// waitLive is Wait, passing the run's streamed deltas to fn meanwhile.
func (rt *Runtime) waitLive(ctx context.Context, id string, sub *liveSub, fn func(Event)) (Status, error) {
	if sub == nil {
		return rt.Wait(ctx, id)
	}
	type result struct {
		st  Status
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := rt.Wait(ctx, id)
		done <- result{st, err}
	}()
	for {
		select {
		case d := <-sub.ch:
			fn(d)
		case res := <-done:
			sub.drain(fn)
			return res.st, res.err
		}
	}
}

// drain passes the deltas waiting in s (if not nil) to fn. Once a turn's
// end is journaled, all its deltas are waiting: they were published
// before.
func (s *liveSub) drain(fn func(Event)) {
	if s == nil {
		return
	}
	for {
		select {
		case d := <-s.ch:
			fn(d)
		default:
			return
		}
	}
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
		case ev.Type == EventStarted && len(ev.Input) > 0 && string(ev.Input) != "null":
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
		case ev.Type == EventResumed && strings.HasSuffix(ev.Key, "/await/resumed"):
			out = append(out, Utterance{Message: messageNumber(ev.Key), Text: ev.Message})
		case ev.Type == EventReply && !ev.IsError:
			out = append(out, Utterance{Message: messageNumber(ev.Key), Agent: ev.Agent, Text: ev.Text})
		}
	}
	return out, nil
}

// registerOnce registers d with rt unless it is; another definition with
// d's id is an error.
func registerOnce(rt *Runtime, d Definition) error {
	rt.mu.RLock()
	registered := rt.defs[d.ID()]
	rt.mu.RUnlock()
	switch registered {
	case nil:
		if err := rt.Register(d); err != nil && !errors.Is(err, ErrDuplicate) {
			return err
		}
		return registerOnce(rt, d)
	case d:
		return nil
	}
	return fmt.Errorf("%w: another definition is registered as %q", ErrDuplicate, d.ID())
}
