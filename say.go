package swarm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// EventReply is a run's answer to a user message (a conversation's, a
// team lead's): Agent (who answered), Text, Target (the agent active for
// the next message), Shared (a conversation's context after the turn) and
// Turn; IsError and Reason when the turn failed. It is journaled under
// "m<n>/reply" together with the paused event that awaits the next
// message.
const EventReply EventType = "reply"

// AwaitingMessage is the reason of a run paused between user messages
// (see Runtime.Say).
const AwaitingMessage = "awaiting user message"

// ErrTurnFailed: a user message got no answer (the model failed, or the
// agents exceeded the max turns of one message). The run stays open and
// awaits the next message.
var ErrTurnFailed = errors.New("conversation turn failed")

// SayOption configures [Runtime.Say] (and the Say of a conversation's
// session).
type SayOption func(*sayConfig)

type sayConfig struct {
	stream func(Event)
	parts  []model.Part
}

// WithMessageParts attaches parts (images, files, audio) to the message:
// the model that answers it gets them with its text, on the user message
// of that turn ("what is in this screenshot?"), and a handoff in the turn
// passes them on. Parts are given with their bytes or a URL ([model.Image],
// [model.File], [model.Attachment]), or by reference to a blob the run
// already refers to (a part of an earlier message, as its events show
// it). The bytes of large parts are kept once in the store's blob table
// before the message is sent; the message, and the resumed event that
// journals it, hold references, so a run continued after a crash gives
// the model the same parts. A message that answers a question a child
// run asked (a swarm the run handed off to) passes the parts down with
// the answer, by reference to the same blobs. An invalid part, one over
// store.MaxBlobBytes or a reference to a blob the run does not have is
// refused ([ErrInvalidInput]) and nothing is sent or stored.
func WithMessageParts(parts ...model.Part) SayOption {
	return func(c *sayConfig) { c.parts = append(c.parts, parts...) }
}

// WithStream passes the streamed model text of the turn to fn as it
// arrives: delta events (Agent, Call, Text) of every model call made in
// this process while answering, including those of agents that hand over.
// fn runs on Say's goroutine.
func WithStream(fn func(delta Event)) SayOption { return func(c *sayConfig) { c.stream = fn } }

// Say sends a user message to run id, which awaits one (a conversation, a
// team's lead: any run paused at a pause whose key is "m<n>/await"), and
// returns the run's reply to it (the EventReply journaled under
// "m<n>/reply", Text its answer) once the run has settled: durable once
// sent, continued by another process if this one dies. A run that pauses
// for something else instead (a human's answer) returns a nil reply and
// its status. Streamed text goes to WithStream's function.
func (rt *Runtime) Say(ctx context.Context, id, message string, opts ...SayOption) (*Event, Status, error) {
	_, ev, st, err := rt.say(ctx, "run", id, message, opts)
	return ev, st, err
}

// Settle waits until run id is not running (paused, or ended) and returns
// its status, driving it here when its owner is gone.
func (rt *Runtime) Settle(ctx context.Context, id string) (Status, error) {
	st, err := rt.settle(ctx, id, nil, nil)
	if err != nil {
		return st, fmt.Errorf("settle %s: %w", id, err)
	}
	return st, nil
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
	if strings.TrimSpace(message) == "" && len(sc.parts) == 0 {
		return 0, nil, st, fmt.Errorf("%w: empty message", ErrInvalidInput)
	}
	if err := rt.checkRunParts(ctx, id, sc.parts); err != nil {
		return 0, nil, st, fmt.Errorf("say to %s %s: %w", what, id, err)
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
	e, run, err := rt.engineOf(ctx, id)
	if err != nil {
		return n, nil, st, fmt.Errorf("say to %s %s: %w", what, id, err)
	}
	if e != nil && len(sc.parts) > 0 {
		return n, nil, st, fmt.Errorf("say to %s %s: %w: it runs on another engine (Config.Engine), which takes a message's text only", what, id, ErrInvalidInput)
	}
	var sub *liveSub
	if sc.stream != nil {
		sub = rt.live.subscribe(id)
		defer rt.live.unsubscribe(id, sub)
	}
	if e != nil {
		if err := rt.resumeOnEngine(ctx, e, run, message, p.Seq, nil); err != nil {
			if errors.Is(err, store.ErrInvalidState) {
				return n, nil, st, fmt.Errorf("%s %s is answering another message: %w", what, id, err)
			}
			return n, nil, st, fmt.Errorf("say to %s %s: %w", what, id, err)
		}
	} else if err := rt.sendSay(ctx, what, id, message, p.Seq, sc.parts); err != nil {
		return n, nil, st, err
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

// messageNumber is n of a pause key "m<n>/...".
func messageNumber(key string) int {
	head, _, _ := strings.Cut(strings.TrimPrefix(key, "m"), "/")
	n, _ := strconv.Atoi(head)
	return n
}

// sendSay delivers a user's message to run id, paused at pause, and
// continues it.
func (rt *Runtime) sendSay(ctx context.Context, what, id, message string, pause int64, ps []model.Part) error {
	parts, err := rt.storeParts(ctx, id, ps)
	if err != nil {
		return fmt.Errorf("say to %s %s: store the parts: %w", what, id, err)
	}
	if _, err := rt.store.Send(ctx, id, store.Message{Kind: store.MsgResume, Text: message, Time: time.Now(), Pause: pause, Parts: parts}); err != nil {
		if errors.Is(err, store.ErrInvalidState) {
			return fmt.Errorf("%s %s is answering another message: %w", what, id, err)
		}
		return fmt.Errorf("say to %s %s: %w", what, id, err)
	}
	if err := rt.wake(ctx, id); err != nil {
		return fmt.Errorf("say to %s %s: %w", what, id, err)
	}
	return nil
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
