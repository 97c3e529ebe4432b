package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/strategy"
)

// Agent is a node that hands its input to agent a and returns its answer:
// the agent runs its own tool-calling loop inside the workflow's run, its
// steps journaled below the node's key. A string input is the request as
// it is, any other input goes as JSON; a string Out is the answer as it
// is, any other Out is read from the JSON of the answer (a failure, which
// [Step.Retry] can retry, when it is not valid). The node is named after
// the agent (see [Step.Named] to use one agent twice).
func Agent[In, Out any](a *swarm.Agent) Step[In, Out] {
	if a == nil {
		return Step[In, Out]{err: errors.New("workflow.Agent: nil agent")}
	}
	return delegate[In, Out](a.Name, "agent", swarm.ToAgent(a))
}

// AgentID is [Agent] for an agent registered with the runtime under name
// (swarm.Runtime.RegisterAgent), resolved when a run starts.
func AgentID[In, Out any](name string) Step[In, Out] {
	return delegate[In, Out](name, "agent", swarm.ToAgentID(name))
}

// Swarm is a node that runs def as a child run (a swarm, a team or a
// workflow: each is a definition) with its input and returns the child's
// result. A conversation returns none (a run handing off to one is
// refused when it starts): talk to it with [Talk]. A child that waits for a human pauses the workflow
// without holding its lease; one that fails fails the node. In and Out are
// def's input and result types (a string for a text input or result).
func Swarm[In, Out any](def swarm.Definition) Step[In, Out] {
	if def == nil {
		return Step[In, Out]{err: errors.New("workflow.Swarm: nil definition")}
	}
	return delegate[In, Out](def.ID(), "swarm", swarm.ToSwarm(def))
}

// SwarmID is [Swarm] for a definition registered with the runtime under
// id, resolved when a run starts.
func SwarmID[In, Out any](id string) Step[In, Out] {
	return delegate[In, Out](id, "swarm", swarm.ToSwarmID(id))
}

func delegate[In, Out any](name, kind string, h swarm.Handoff) Step[In, Out] {
	target := h.Target()
	return Step[In, Out]{name: name, kind: kind, err: checkName(name), targets: []swarm.Handoff{h},
		run: func(ctx context.Context, x *exec, key string, in In) (Out, error) {
			var zero Out
			req, err := text(in)
			if err != nil {
				return zero, &strategy.Failure{Reason: "step " + key + ": input: " + err.Error()}
			}
			answer, err := x.d.Delegate(ctx, key, target, withFeedback(ctx, req))
			if err != nil {
				return zero, err
			}
			out, err := parse[Out](answer)
			if err != nil {
				return zero, &strategy.Failure{Reason: fmt.Sprintf("step %s: the answer of %s is not a valid result: %v", key, target, err)}
			}
			return out, nil
		}}
}

// Func is a node that runs fn, a Go function, once: its result (or its
// error, which fails the node) is journaled under the node's key, so a
// replay returns it without running fn. fn may have side effects; a crash
// before its result was journaled runs it again (at least once, like a
// tool: make its effects idempotent by the key, swarm.IdempotencyKey).
func Func[In, Out any](name string, fn func(ctx context.Context, in In) (Out, error)) Step[In, Out] {
	err := checkName(name)
	if fn == nil && err == nil {
		err = fmt.Errorf("workflow.Func %s: nil function", name)
	}
	return Step[In, Out]{name: name, kind: "func", err: err,
		run: func(ctx context.Context, x *exec, key string, in In) (Out, error) {
			var zero Out
			raw, err := x.d.Record(ctx, key, "workflow.func", func(ctx context.Context) (json.RawMessage, error) {
				out, err := fn(ctx, in)
				if err != nil {
					return nil, err
				}
				return encode(out)
			})
			if err != nil {
				return zero, err
			}
			return decode[Out](raw)
		}}
}

// DefaultAsks is how many times a [Human] node asks before it fails.
const DefaultAsks = 3

// Human is a node that asks a human ask(in) and returns the answer as an
// Out. The question carries the JSON schema of Out (Kind "input", the
// schema in its Context); an answer that does not parse as an Out or does
// not conform to the schema is refused, and the human asked again with
// the reason, at most asks times in all (DefaultAsks when asks is 0)
// before the node fails. A string Out takes any answer as it is. The
// workflow pauses while it waits: no goroutine, no lease.
func Human[In, Out any](name string, asks int, ask func(in In) string) Step[In, Out] {
	schema, resolved, err := schemaOf[Out]()
	return human[In, Out](name, asks, schema, resolved, err, ask)
}

// HumanSchema is [Human] for answers whose schema is known only at run
// time (a workflow read from a file): the answer must be JSON that
// conforms to schema, and is the node's output as it is.
func HumanSchema[In any](name string, asks int, schema json.RawMessage, ask func(in In) string) Step[In, json.RawMessage] {
	var sc jsonschema.Schema
	err := json.Unmarshal(schema, &sc)
	var resolved *jsonschema.Resolved
	if err == nil {
		resolved, err = sc.Resolve(nil)
	}
	return human[In, json.RawMessage](name, asks, schema, resolved, err, ask)
}

func human[In, Out any](name string, asks int, schema json.RawMessage, resolved *jsonschema.Resolved, serr error, ask func(in In) string) Step[In, Out] {
	err := checkName(name)
	if asks == 0 {
		asks = DefaultAsks
	}
	if asks < 0 && err == nil {
		err = fmt.Errorf("workflow.Human %s: asks must not be negative, got %d", name, asks)
	}
	if ask == nil && err == nil {
		err = fmt.Errorf("workflow.Human %s: nil question", name)
	}
	if serr != nil && err == nil {
		err = fmt.Errorf("workflow.Human %s: schema: %w", name, serr)
	}
	return Step[In, Out]{name: name, kind: "human", err: err,
		run: func(ctx context.Context, x *exec, key string, in In) (Out, error) {
			var zero Out
			q := strategy.Question{Reason: ask(in), Context: string(schema), Kind: "input"}
			if q.Reason == "" {
				q.Reason = "Input for " + key
			}
			for i := 1; ; i++ {
				k := key
				if i > 1 {
					k = key + "/ask/" + strconv.Itoa(i)
				}
				answer, err := x.d.Await(ctx, k, q)
				if err != nil {
					return zero, err
				}
				out, verr := validate[Out](answer, resolved)
				if verr == nil {
					return out, nil
				}
				if i >= asks {
					return zero, &strategy.Failure{Reason: fmt.Sprintf("step %s: no valid answer after %d asks: %v", key, i, verr)}
				}
				q.Reason = fmt.Sprintf("%s (the answer was refused: %v)", ask(in), verr)
			}
		}}
}

// schemaOf is the JSON schema of T, resolved for validation (nil for a
// string, which takes any answer).
func schemaOf[T any]() (json.RawMessage, *jsonschema.Resolved, error) {
	var v T
	if _, ok := any(v).(string); ok {
		return json.RawMessage(`{"type":"string"}`), nil, nil
	}
	if _, ok := any(v).(json.RawMessage); ok {
		return json.RawMessage(`{}`), nil, nil
	}
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(sc)
	if err != nil {
		return nil, nil, err
	}
	rs, err := sc.Resolve(nil)
	if err != nil {
		return nil, nil, err
	}
	return raw, rs, nil
}

// validate reads answer as a T checked against rs.
func validate[T any](answer string, rs *jsonschema.Resolved) (T, error) {
	var zero T
	if rs == nil {
		if _, ok := any(zero).(json.RawMessage); ok && !json.Valid([]byte(answer)) {
			return zero, errors.New("not JSON")
		}
		return parse[T](answer)
	}
	var v any
	if err := json.Unmarshal([]byte(answer), &v); err != nil {
		return zero, fmt.Errorf("not JSON: %w", err)
	}
	if err := rs.Validate(v); err != nil {
		return zero, err
	}
	return parse[T](answer)
}

// Talk is a node that sends its input, as a user message, to a session of
// def (a conversation, or any definition whose runs await messages: see
// swarm.Runtime.Say) and returns the text of its reply. A workflow run
// has one session per Talk node, whose run id is the workflow run's id,
// "-" and the node's name: it is started (with def's initial context) on
// the node's first visit and continued by later ones, so a loop keeps one
// conversation going. The message's number is journaled before it is
// sent and the reply after, so a workflow killed in between finds the
// answer in the session instead of asking twice. A turn that fails fails
// the node (swarm.ErrTurnFailed); so does a session that waits for a
// human instead of answering.
func Talk(name string, def swarm.Definition) Step[string, string] {
	err := checkName(name)
	if def == nil && err == nil {
		err = fmt.Errorf("workflow.Talk %s: nil definition", name)
	}
	return Step[string, string]{name: name, kind: "conversation", err: err,
		run: func(ctx context.Context, x *exec, key string, in string) (string, error) {
			rt, sid := x.d.Runtime(), x.d.RunID()+"-"+name
			raw, err := x.d.Record(ctx, key+"/message", "workflow.talk", func(ctx context.Context) (json.RawMessage, error) {
				if err := rt.Register(def); err != nil && !errors.Is(err, swarm.ErrDuplicate) {
					return nil, err
				}
				if _, err := rt.Start(ctx, def.ID(), nil, swarm.WithID(sid)); err != nil {
					return nil, err
				}
				if _, err := rt.Settle(ctx, sid); err != nil {
					return nil, err
				}
				evs, err := rt.History(ctx, sid, 0)
				if err != nil {
					return nil, err
				}
				n := 1
				for _, ev := range evs {
					if ev.Type == swarm.EventResumed && strings.HasSuffix(ev.Key, "/await/resumed") {
						n++
					}
				}
				return json.Marshal(n)
			})
			if err != nil {
				return "", err
			}
			reply := "m" + string(raw) + "/reply"
			out, err := x.d.Record(ctx, key, "workflow.talk", func(ctx context.Context) (json.RawMessage, error) {
				ev, err := findReply(ctx, rt, sid, reply)
				if err == nil && ev == nil {
					// Not sent yet (or sent by a process that died before
					// the answer: Say then finds the session past it).
					ev, _, err = rt.Say(ctx, sid, in)
					if ev == nil && err == nil {
						ev, err = findReply(ctx, rt, sid, reply)
					}
				}
				switch {
				case err != nil:
					return nil, err
				case ev == nil:
					return nil, fmt.Errorf("step %s: session %s waits for a human instead of answering", key, sid)
				case ev.Key != reply:
					return nil, fmt.Errorf("step %s: session %s answered message %s, not the node's", key, sid, ev.Key)
				case ev.IsError:
					return nil, fmt.Errorf("%w: %s", swarm.ErrTurnFailed, ev.Reason)
				}
				return json.Marshal(ev.Text)
			})
			if err != nil {
				return "", err
			}
			var text string
			if err := json.Unmarshal(out, &text); err != nil {
				return "", &strategy.Failure{Reason: "step " + key + ": recorded reply: " + err.Error()}
			}
			return text, nil
		}}
}

// findReply waits for session sid to settle and returns its event under
// key, nil if it has none.
func findReply(ctx context.Context, rt *swarm.Runtime, sid, key string) (*swarm.Event, error) {
	if _, err := rt.Settle(ctx, sid); err != nil {
		return nil, err
	}
	evs, err := rt.History(ctx, sid, 0)
	if err != nil {
		return nil, err
	}
	for i := range evs {
		if evs[i].Key == key {
			return &evs[i], nil
		}
	}
	return nil, nil
}
