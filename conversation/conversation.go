// Package conversation is the durable multi-turn conversation, a kind of
// run built on the public strategy seam, package strategy ([strategy.Strategy],
// [strategy.Driver]) and nothing else: a queen and other agents, handovers
// between them, a shared context of the user's type, and sessions that
// survive restarts.
//
// Define one with [Define], register it with a runtime like a swarm, and
// talk to it through a [Session]:
//
//	desk := conversation.Define("front-desk", "Receptionist and sales", conversation.Spec[Lead]{
//		Queen: receptionist, Agents: []*swarm.Agent{sales},
//	})
//	sess, err := desk.Start(ctx, rt)
//	reply, err := sess.Say(ctx, "Hello")
package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/strategy"
)

// ErrNoConversation: a conversation function was called outside a tool
// call of a conversation.
var ErrNoConversation = errors.New("not in a conversation")

// transferPre prefixes the tool names of handovers.
const transferPre = "transfer_to_"

// HistoryPolicy decides what an agent of a conversation sees of the
// conversation so far.
type HistoryPolicy int

// The history policies.
const (
	// HistoryOwnTools (the default) shows the user's messages, every agent's
	// text, and the agent's own tool calls and results, never another
	// agent's: an agent cannot imitate tools it does not have.
	HistoryOwnTools HistoryPolicy = iota
	// HistoryFull shows everything, other agents' tool calls and results
	// included (the behaviour of OpenAI's Swarm).
	HistoryFull
	// HistoryText shows only user and agent text, plus the agent's own tool
	// calls of the message being answered.
	HistoryText
)

// String returns the policy's name as the YAML configuration spells it.
func (h HistoryPolicy) String() string {
	switch h {
	case HistoryFull:
		return "full"
	case HistoryText:
		return "text"
	}
	return "own_tools"
}

// Handover lets an agent of a conversation transfer control to another,
// with a tool named transfer_to_<To>.
type Handover struct {
	// To is the name of the agent that takes over.
	To string
	// Description tells the model when to transfer (default: the target's
	// description).
	Description string
	// Sets names fields of the shared context (their JSON names) that the
	// model fills in when it transfers; they become required arguments of
	// the tool and are written into the context before the target runs.
	Sets []string
}

// Spec configures a conversation. Ctx is the type of its shared
// context: a struct or a map, JSON-serializable.
type Spec[Ctx any] struct {
	// Queen is the entry agent: it answers the first message and, with
	// ReturnToQueen, every message.
	Queen *swarm.Agent
	// Agents are the other agents, reachable by handover.
	Agents []*swarm.Agent
	// Handovers maps an agent's name to the agents it may transfer control
	// to. Nil means: the queen may transfer to every agent and every agent
	// back to the queen. A transfer to an agent that is not reachable from
	// the active one gets an error result.
	Handovers map[string][]Handover
	// ReturnToQueen makes the queen the active agent again after each reply;
	// otherwise the agent that answered stays active for the next message.
	ReturnToQueen bool
	// MaxTurns bounds the rounds (model responses) spent on one user
	// message, over all agents (swarm.DefaultMaxTurns when zero). Exceeding it
	// fails that message's turn, not the conversation.
	MaxTurns int
	// History is what agents see of the conversation (default
	// HistoryOwnTools); AgentHistory overrides it per agent name.
	History      HistoryPolicy
	AgentHistory map[string]HistoryPolicy
	// NameSpeakers prefixes other agents' text with "[name] " in what an
	// agent sees, so that it knows who said what.
	NameSpeakers bool
	// Context is the initial shared context of sessions started without
	// one (Start, a null input to Runtime.Start, swarm chat).
	Context Ctx
	// Guardrails guard every agent of the conversation (an agent's own
	// come after them). Their guardrail.Input check is on each user message,
	// with the guardrails of the agent that is to answer it: a rejected
	// message is answered with a failed turn (and left out of what the
	// agents see), a tripwire fails the conversation, a pause waits for a
	// resume that approves the message.
	Guardrails []guardrail.Guardrail
	// Compaction keeps each agent's view of the conversation within its
	// model's context window (an agent's own Compaction wins).
	Compaction *compact.Config
	// OnStep is called after each round of a live turn (not during
	// recovery), on the run's goroutine.
	OnStep func(ctx context.Context, step Step[Ctx])
}

// Step is one round of a conversation: an agent's model
// response and the results of its tool calls.
type Step[Ctx any] struct {
	// Message is the number of the user message being answered (from 1).
	Message int
	// Turn is the round's number within that message (from 1).
	Turn      int
	Agent     string
	Text      string
	ToolCalls []model.ToolCall
	// Results are the tool results, in call order.
	Results []model.Message
	// HandoverTo is the agent that takes over, if the round transferred.
	HandoverTo string
	// Context is the shared context after the round.
	Context Ctx
}

// Conversation is a durable multi-turn conversation definition with a
// queen, agents, handovers between them and a shared context of type Ctx.
// Define one with [Define], register it with
// [swarm.Runtime.Register] like a swarm, and talk to it through a [Session].
//
// Each session is a run. Between user messages it is paused (reason
// [swarm.AwaitingMessage]) and holds no lease; a user message is delivered through
// the run's inbox and answered by the active agent, which may hand over to
// other agents until one answers with text. Every step is journaled under
// keys m<n>/... (n the user message), so a session survives restarts and a
// killed process continues from the last completed step.
//
// Instructions of the agents are rendered as text/template before each model
// call with the shared context as {{.Context}} (a struct's fields as
// {{.Context.Field}}, a map's keys as {{.Context.key}}) and the run's values
// ([swarm.WithValues]) at top level. Tools read and change the context with
// [Context] and [UpdateContext]; it never appears
// in tool schemas.
type Conversation[Ctx any] struct {
	// The conversation is a swarm whose runs its strategy drives: it is
	// registered, started, listed and served like one.
	*swarm.Swarm[json.RawMessage, string]
	spec   Spec[Ctx]
	cd     *convDef
	schema json.RawMessage
}

// convDef is the untyped view of a conversation used by its strategy.
type convDef struct {
	id            string
	queen         string
	agents        map[string]*swarm.Agent
	offered       map[string]map[string]string // agent -> transfer tool -> target
	transfers     map[string][]swarm.Tool      // agent -> every transfer tool
	returnToQueen bool
	maxTurns      int
	history       HistoryPolicy
	agentHistory  map[string]HistoryPolicy
	nameSpeakers  bool
	initial       json.RawMessage
	// canonical decodes a context into Ctx and encodes it again; decode
	// returns it as a Ctx for templates.
	canonical func(json.RawMessage) (json.RawMessage, error)
	decode    func(json.RawMessage) (any, error)
	onStep    func(ctx context.Context, s Step[json.RawMessage])
	// guards are the conversation's guardrails, compaction its
	// compaction (each agent's own come after them).
	guards     []guardrail.Guardrail
	compaction *compact.Config
}

func (cd *convDef) policy(agent string) HistoryPolicy {
	if p, ok := cd.agentHistory[agent]; ok {
		return p
	}
	return cd.history
}

// Define makes a conversation definition. Mistakes (a missing queen, an
// agent listed twice, a handover to an unknown agent, a context field that
// does not exist) are reported when it is registered.
func Define[Ctx any](id, description string, spec Spec[Ctx]) *Conversation[Ctx] {
	c := &Conversation[Ctx]{spec: spec}
	cd, schema, err := define(id, spec)
	c.cd, c.schema = cd, schema
	queenModel, maxTurns := "", 0
	if spec.Queen != nil {
		queenModel = spec.Queen.Model
	}
	if cd != nil {
		maxTurns = cd.maxTurns
	}
	// The run's own plan is not used to talk; it names the queen's model
	// so that planning needs no other model.
	c.Swarm = swarm.Define[json.RawMessage, string](id, description, func(json.RawMessage) swarm.Spec {
		return swarm.Spec{Model: queenModel, MaxTurns: maxTurns, NoBuiltins: true, Strategy: strategy.Of(convStrategy{cd: cd})}
	}).Invalid(err).RefuseHandoffs(refusal)
	return c
}

// refusal is why no handoff may target a conversation.
const refusal = "a conversation answers a user, message after message, and never returns a result to a caller: talk to it with Session.Say or Runtime.Say (in a workflow, with workflow.Talk)"

// checkName is the rule of names of package swarm, checked here when a
// conversation is defined rather than when its agent first runs.
var checkName = model.CheckName

func define[Ctx any](id string, spec Spec[Ctx]) (*convDef, json.RawMessage, error) {
	if err := checkName(id); err != nil {
		return nil, nil, fmt.Errorf("conversation %q: %w", id, err)
	}
	fail := func(format string, args ...any) (*convDef, json.RawMessage, error) {
		return nil, nil, fmt.Errorf("conversation %s: "+format, append([]any{id}, args...)...)
	}
	if spec.Queen == nil {
		return fail("no queen agent")
	}
	cd := &convDef{
		id: id, queen: spec.Queen.Name, agents: map[string]*swarm.Agent{}, offered: map[string]map[string]string{}, transfers: map[string][]swarm.Tool{},
		returnToQueen: spec.ReturnToQueen, maxTurns: spec.MaxTurns, history: spec.History, agentHistory: spec.AgentHistory, nameSpeakers: spec.NameSpeakers,
		guards: spec.Guardrails, compaction: spec.Compaction,
	}
	if cd.maxTurns <= 0 {
		cd.maxTurns = swarm.DefaultMaxTurns
	}
	names := []string{}
	for _, a := range append([]*swarm.Agent{spec.Queen}, spec.Agents...) {
		if a == nil {
			return fail("nil agent")
		}
		if err := checkName(a.Name); err != nil {
			return fail("agent: %w", err)
		}
		if len(transferPre+a.Name) > 64 {
			return fail("agent name %q is too long for its handover tool (%s<name> is limited to 64 characters)", a.Name, transferPre)
		}
		if a.Name == id {
			return fail("agent %q has the id of its conversation", a.Name)
		}
		if _, dup := cd.agents[a.Name]; dup {
			return fail("agent %q appears twice", a.Name)
		}
		cd.agents[a.Name] = a
		names = append(names, a.Name)
	}
	// The conversation's guardrails and compaction, then each agent's.
	if err := (strategy.AgentRun{Agent: &swarm.Agent{Name: cd.queen}, Guardrails: spec.Guardrails, Compaction: spec.Compaction, Strategy: convStrategy{}}).Check(); err != nil {
		return fail("%w", err)
	}
	for _, name := range names {
		if err := (strategy.AgentRun{Agent: cd.agents[name], Compaction: spec.Compaction, Strategy: convStrategy{}}).Check(); err != nil {
			return fail("agent %s: %w", name, err)
		}
	}
	for name := range spec.AgentHistory {
		if _, ok := cd.agents[name]; !ok {
			return fail("history policy for unknown agent %q", name)
		}
	}

	// The context: canonical JSON of Ctx.
	schema, err := schemaFor[Ctx]()
	if err != nil {
		return fail("context type: %w", err)
	}
	cd.canonical = func(raw json.RawMessage) (json.RawMessage, error) {
		var v Ctx
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("%w: conversation %s: context does not match its type: %w", swarm.ErrInvalidInput, id, err)
			}
		}
		initMap(&v)
		return json.Marshal(v)
	}
	cd.decode = func(raw json.RawMessage) (any, error) {
		var v Ctx
		err := json.Unmarshal(raw, &v)
		return v, err
	}
	initial := spec.Context
	initMap(&initial)
	if cd.initial, err = json.Marshal(initial); err != nil {
		return fail("initial context: %w", err)
	}
	if spec.OnStep != nil {
		cd.onStep = func(ctx context.Context, s Step[json.RawMessage]) {
			var v Ctx
			_ = json.Unmarshal(s.Context, &v)
			spec.OnStep(ctx, Step[Ctx]{Message: s.Message, Turn: s.Turn, Agent: s.Agent, Text: s.Text,
				ToolCalls: s.ToolCalls, Results: s.Results, HandoverTo: s.HandoverTo, Context: v})
		}
	}

	// Handovers: the default is a star around the queen.
	handovers := spec.Handovers
	if handovers == nil {
		handovers = map[string][]Handover{}
		for _, n := range names[1:] {
			handovers[cd.queen] = append(handovers[cd.queen], Handover{To: n})
			handovers[n] = []Handover{{To: cd.queen}}
		}
	}
	props := contextProperties(schema, cd.initial)
	for from, hs := range handovers {
		if _, ok := cd.agents[from]; !ok {
			return fail("handovers of unknown agent %q", from)
		}
		cd.offered[from] = map[string]string{}
		for _, h := range hs {
			to, ok := cd.agents[h.To]
			switch {
			case !ok:
				return fail("handover from %s to unknown agent %q", from, h.To)
			case h.To == from:
				return fail("handover from %s to itself", from)
			}
			if _, dup := cd.offered[from][transferPre+h.To]; dup {
				return fail("handover from %s to %s appears twice", from, h.To)
			}
			t, err := newTransfer(from, to, h, props)
			if err != nil {
				return fail("handover from %s to %s: %w", from, h.To, err)
			}
			cd.offered[from][t.Name()] = h.To
			cd.transfers[from] = append(cd.transfers[from], t)
		}
	}
	// Every agent also knows the transfers it may not make, so that a
	// model calling one learns why it cannot.
	for _, from := range names {
		for _, to := range names {
			if to == from {
				continue
			}
			if _, ok := cd.offered[from][transferPre+to]; !ok {
				cd.transfers[from] = append(cd.transfers[from], &transferTool{from: from, to: to, blocked: reachable(cd.offered[from])})
			}
		}
	}
	return cd, schema, nil
}

// initMap makes a nil map usable: a tool may then set keys of an empty
// context.
func initMap[T any](v *T) {
	rv := reflect.ValueOf(v).Elem()
	if rv.Kind() == reflect.Map && rv.IsNil() {
		rv.Set(reflect.MakeMap(rv.Type()))
	}
}

func reachable(offered map[string]string) []string {
	out := make([]string, 0, len(offered))
	for _, to := range offered {
		out = append(out, to)
	}
	slices.Sort(out)
	return out
}

// contextProperties returns the JSON schemas of the context's fields: from
// Ctx's schema for a struct, from the initial value's JSON types for a map.
func contextProperties(schema, initial json.RawMessage) map[string]json.RawMessage {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	if len(s.Properties) > 0 {
		return s.Properties
	}
	var m map[string]any
	_ = json.Unmarshal(initial, &m)
	props := map[string]json.RawMessage{}
	for k, v := range m {
		t := "string"
		switch v.(type) {
		case float64:
			t = "number"
		case bool:
			t = "boolean"
		case []any:
			t = "array"
		case map[string]any:
			t = "object"
		}
		props[k] = json.RawMessage(`{"type":"` + t + `"}`)
	}
	return props
}

// InputSchema returns the JSON schema of the shared context, which is the
// input of a session's run (null starts from the spec's Context).
func (c *Conversation[Ctx]) InputSchema() json.RawMessage { return c.schema }

// schemaFor is the JSON schema of T.
func schemaFor[T any]() (json.RawMessage, error) {
	if reflect.TypeFor[T]() == reflect.TypeFor[json.RawMessage]() {
		return json.RawMessage(`{}`), nil
	}
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(sc)
}

// transferTool is a handover: transfer_to_<to> offered to agent from. It
// is self-validating so that a blocked transfer reports itself before any
// argument check.
type transferTool struct {
	from, to    string
	description string
	sets        []string
	schema      json.RawMessage
	// blocked: not reachable from "from"; the agents that are.
	blocked []string
}

func newTransfer(from string, to *swarm.Agent, h Handover, props map[string]json.RawMessage) (*transferTool, error) {
	t := &transferTool{from: from, to: to.Name, description: h.Description, sets: h.Sets}
	if t.description == "" {
		t.description = "Transfer the conversation to " + to.Name + ", who takes over from you."
		if to.Description != "" {
			t.description += " " + to.Name + ": " + to.Description
		}
	}
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i, f := range h.Sets {
		p, ok := props[f]
		if !ok {
			return nil, fmt.Errorf("the context has no field %q", f)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f)
		b.Write(k)
		b.WriteByte(':')
		b.Write(p)
	}
	b.WriteString(`},"additionalProperties":false`)
	if len(h.Sets) > 0 {
		req, _ := json.Marshal(h.Sets)
		b.WriteString(`,"required":`)
		b.Write(req)
	}
	b.WriteByte('}')
	t.schema = json.RawMessage(b.String())
	var sc jsonschema.Schema
	if err := json.Unmarshal(t.schema, &sc); err != nil {
		return nil, fmt.Errorf("argument schema: %w", err)
	}
	if _, err := sc.Resolve(nil); err != nil {
		return nil, fmt.Errorf("argument schema: %w", err)
	}
	return t, nil
}

func (t *transferTool) Name() string        { return transferPre + t.to }
func (t *transferTool) Description() string { return t.description }
func (t *transferTool) Schema() json.RawMessage {
	if t.schema == nil {
		return json.RawMessage(`{"type":"object"}`) // a blocked transfer says why it is
	}
	return t.schema
}

func (t *transferTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	st, ok := ctx.Value(convKey{}).(*convState)
	if !ok {
		return "", ErrNoConversation
	}
	if t.blocked != nil {
		if len(t.blocked) == 0 {
			return "", fmt.Errorf("cannot transfer to %s: %s may not transfer to any agent", t.to, t.from)
		}
		return "", fmt.Errorf("cannot transfer to %s: it is not reachable from %s (reachable: %s)", t.to, t.from, strings.Join(t.blocked, ", "))
	}
	key := swarm.StepKey(ctx)
	st.mu.Lock()
	honoured, to := st.honoured, st.honouredTo
	st.mu.Unlock()
	if key != honoured {
		if to == "" {
			return "", fmt.Errorf("%s can only be used by the agent in charge of the conversation", t.Name())
		}
		return "", fmt.Errorf("not transferred: only the first handover in a response is honoured, and control passes to %s", to)
	}
	if len(t.sets) > 0 {
		var set map[string]json.RawMessage
		if err := json.Unmarshal(args, &set); err != nil {
			return "", &swarm.ArgumentError{Tool: t.Name(), Err: err}
		}
		if err := st.merge(key, set); err != nil {
			return "", err
		}
	}
	return "Transferred to " + t.to + ", who now continues the conversation.", nil
}

// Context returns the shared context of the conversation a tool
// runs in, decoded into T (normally the conversation's context type; any
// type its JSON fits works, such as map[string]any). Outside a
// conversation it fails with ErrNoConversation.
func Context[T any](ctx context.Context) (T, error) {
	var v T
	st, ok := ctx.Value(convKey{}).(*convState)
	if !ok {
		return v, ErrNoConversation
	}
	err := json.Unmarshal(st.get(), &v)
	initMap(&v)
	return v, err
}

// UpdateContext changes the shared context of the conversation
// a tool runs in: fn edits a copy decoded into T, and the result becomes
// the context if it still fits the conversation's context type. The change
// is journaled with the tool's result, in the same append, so recovery
// restores it without running the tool again. It returns the new value.
func UpdateContext[T any](ctx context.Context, fn func(*T)) (T, error) {
	var v T
	st, ok := ctx.Value(convKey{}).(*convState)
	key := swarm.StepKey(ctx)
	if !ok || key == "" {
		return v, ErrNoConversation
	}
	// Updates are serialized; fn may read the context (it sees the value
	// before the update).
	st.upd.Lock()
	defer st.upd.Unlock()
	if err := json.Unmarshal(st.get(), &v); err != nil {
		return v, fmt.Errorf("decode the conversation context: %w", err)
	}
	initMap(&v)
	fn(&v)
	raw, err := json.Marshal(v)
	if err != nil {
		return v, fmt.Errorf("encode the conversation context: %w", err)
	}
	if raw, err = st.def.canonical(raw); err != nil {
		return v, err
	}
	st.set(key, raw)
	return v, nil
}
