package absorb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/swarmrt/swarm"
)

// Separator joins an agent's name and a skill's name in the name of the
// tool a captain gets for that skill: the skill "factor" of the agent
// "math" is offered as "math__factor". Model providers accept only
// [a-zA-Z0-9_-]{1,64} in tool names (OpenAI and Anthropic alike), so the
// dot of "math.factor" cannot be used; "__" is also what MCP toolsets use.
const Separator = "__"

// Sibling is an agent as a captain absorbs it: the agent and the skills it
// offers. A sibling without skills gives the captain one text tool.
type Sibling struct {
	*swarm.Agent
	// Skills are what the agent offers a captain that absorbs it: one
	// tool per skill, each with its input type.
	Skills []Skill
}

// Skill is one thing an agent can do, declared so that a captain that
// absorbs the agent (see [Into]) can offer it as a tool of its own.
type Skill struct {
	// Name identifies the skill within its agent ([a-zA-Z0-9_-]+).
	Name string
	// Description tells the captain's model what the skill does.
	Description string
	// Instructions, when set, are added to the agent's system prompt when
	// a call is routed to this skill.
	Instructions string
	// Tools, when set, names the agent's tools the skill may use; the
	// others are not offered while the agent works on the skill. Empty
	// means all of them.
	Tools []string
	// Input is the skill's input type: text (the zero value) or a JSON
	// object ([InputOf], [InputSchema]).
	Input Input
	// Remote, when set, performs the skill in another process: the
	// captain's tool calls Remote (an A2A agent made with a2a.Remote, a
	// tool of an mcp.Toolset) instead of running the agent's loop, and
	// Remote's argument schema is the skill's input (Input must be unset).
	Remote swarm.Tool
}

// Input is the type of what an absorbed agent (or one of its skills) is
// asked: text, the zero value, offered to the captain's model as a tool
// taking one string argument, request; or a JSON object described by a
// schema, offered as a tool taking that object, whose arguments are
// validated against the schema before the agent runs and given to it as
// its request, in JSON.
type Input struct {
	schema json.RawMessage
	typ    string
	err    error
}

// InputOf is the input type T: text when T is a string type, otherwise the
// JSON schema of T (of *T's element for a pointer), which must describe an
// object (a struct or a map).
func InputOf[T any]() Input {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.String {
		return Input{}
	}
	in := Input{typ: t.String()}
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		in.err = fmt.Errorf("input type %s: %w", t, err)
		return in
	}
	in.schema, in.err = json.Marshal(s)
	return in
}

// InputSchema is an input described by a JSON schema, which must describe an
// object. A nil schema means text.
func InputSchema(schema json.RawMessage) Input {
	if len(schema) == 0 {
		return Input{}
	}
	return Input{schema: slices.Clone(schema), typ: "the given schema"}
}

// IsText reports whether the input is text.
func (in Input) IsText() bool { return in.schema == nil && in.err == nil }

// Schema returns the JSON schema of a structured input, nil for text.
func (in Input) Schema() json.RawMessage { return in.schema }

// resolve checks that the input can be a tool's arguments and returns the
// tool's schema (nil for text: a handoff's).
func (in Input) resolve(what string) (json.RawMessage, error) {
	if in.err != nil {
		return nil, fmt.Errorf("%s: %w", what, in.err)
	}
	if in.schema == nil {
		return nil, nil
	}
	if in.typ != "" {
		what += ", whose input is " + in.typ + ","
	}
	return objectSchema(in.schema, what, false)
}

// objectSchema checks schema, which must describe a JSON object, the only
// kind of tool arguments models produce, and returns the tool's: its type
// is "object", or ["object"] or ["object", "null"] (given to the model as
// "object"), or, when untyped is set (a remote tool's schema: MCP allows
// {}), absent (taken as "object").
func objectSchema(schema json.RawMessage, what string, untyped bool) (json.RawMessage, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", what, err)
	}
	switch {
	case s.Type == "object":
	case s.Type == "" && (slices.Equal(s.Types, []string{"object"}) || slices.Equal(s.Types, []string{"object", "null"}) || slices.Equal(s.Types, []string{"null", "object"})),
		s.Type == "" && len(s.Types) == 0 && untyped:
		s.Type, s.Types = "object", nil
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(schema, &fields); err != nil {
			return nil, fmt.Errorf("input schema of %s: %w", what, err)
		}
		if fields == nil { // the schema null
			fields = map[string]json.RawMessage{}
		}
		fields["type"] = json.RawMessage(`"object"`)
		var err error
		if schema, err = json.Marshal(fields); err != nil {
			return nil, fmt.Errorf("input schema of %s: %w", what, err)
		}
	default:
		t := s.Type
		if t == "" {
			t = strings.Join(s.Types, " or ")
		}
		if t == "" {
			t = "any value"
		}
		return nil, fmt.Errorf("%w: %s takes %s; an absorbed agent takes text or a JSON object (a struct)", ErrIncompatible, what, t)
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", what, err)
	}
	return schema, nil
}

// ErrIncompatible: an agent cannot be absorbed because of the type of its
// input (see [Input]).
var ErrIncompatible = errors.New("incompatible input type")

// Into makes each sibling a tool of captain: captain's model is offered,
// on every call of captain, one tool per skill of the sibling. A sibling
// with no skill or one skill gives one tool named after the sibling, whose
// description lists its skills; a sibling with more skills gives one tool
// per skill, named <sibling>__<skill> (see [Separator]). Each tool takes
// the skill's [Input].
//
// Every call of such a tool runs a fresh loop of the sibling, with its own
// instructions (plus the skill's), model, tools, handoffs, max turns and
// hooks, on the call's request, inside the captain's run: it is a
// [swarm.Delegation], journaled like an agent handoff (handoff_started and
// handoff_returned events whose Agent is the captain and Target the
// sibling), so a run recovered after a crash resumes the sibling's loop
// without redoing its recorded steps, and it counts towards
// [swarm.Config.MaxDepth]. A call whose arguments are invalid is no
// delegation: the captain's model gets an error tool result. A skill with
// Remote set is performed by that tool instead, as an ordinary tool call
// of the captain.
//
// Into checks everything at once and changes nothing on error: a sibling
// may not be the captain itself (or share its name), its tools may not
// collide with the captain's tools (earlier absorbed siblings included) or
// reserved names, the captain's handoffs may not name a different agent of
// the sibling's name (errors wrapping [swarm.ErrInvalid] or
// [swarm.ErrDuplicate]), and each skill's input must be text or a JSON
// object ([ErrIncompatible]). The tools are appended to captain.Tools.
func Into(captain *swarm.Agent, siblings ...Sibling) error {
	if captain == nil {
		return fmt.Errorf("%w: absorb into a nil agent", swarm.ErrInvalid)
	}
	taken := map[string]bool{}
	for _, t := range captain.Tools {
		if usable(t) {
			taken[t.Name()] = true
		}
	}
	var add []swarm.Tool
	for _, s := range siblings {
		ts, err := tools(captain, s)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if taken[t.Name()] {
				return fmt.Errorf("%w: %s cannot absorb %s: it already has a tool named %q", swarm.ErrDuplicate, captain.Name, s.Name, t.Name())
			}
			taken[t.Name()] = true
		}
		add = append(add, ts...)
	}
	captain.Tools = append(slices.Clip(captain.Tools), add...)
	return nil
}

// usable reports whether t is a tool with a name: not nil, and not one
// that reports a problem of its own.
func usable(t swarm.Tool) bool {
	if t == nil {
		return false
	}
	if v := reflect.ValueOf(t); v.Kind() == reflect.Pointer && v.IsNil() {
		return false
	}
	e, ok := t.(interface{ Err() error })
	return !ok || e.Err() == nil
}

// Absorbed returns the agents captain has absorbed, in the order of its
// tools.
func Absorbed(captain *swarm.Agent) []*swarm.Agent {
	var out []*swarm.Agent
	for _, t := range captain.Tools {
		if a := siblingOf(t); a != nil && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// siblingOf returns the agent whose skill tool t is, nil if t is none.
func siblingOf(t swarm.Tool) *swarm.Agent {
	switch t := t.(type) {
	case *remoteTool:
		return t.sibling
	case interface{ Delegation() swarm.Delegation }:
		return t.Delegation().Agent
	}
	return nil
}

// tools checks sibling s for captain a and makes its tools.
func tools(a *swarm.Agent, s Sibling) ([]swarm.Tool, error) {
	switch {
	case s.Agent == nil:
		return nil, fmt.Errorf("%w: %s cannot absorb a nil agent", swarm.ErrInvalid, a.Name)
	case s.Agent == a || s.Name == a.Name:
		return nil, fmt.Errorf("%w: agent %q cannot absorb itself", swarm.ErrInvalid, a.Name)
	}
	for _, h := range a.Handoffs {
		if to := h.Agent(); to != nil && to != s.Agent && to.Name == s.Name {
			return nil, fmt.Errorf("%w: %s cannot absorb %s: it hands off to a different agent of that name", swarm.ErrDuplicate, a.Name, s.Name)
		}
	}
	skills := s.Skills
	if len(skills) == 0 {
		skills = []Skill{{}}
	}
	seen := map[string]bool{}
	out := make([]swarm.Tool, 0, len(skills))
	for i := range skills {
		sk := &skills[i]
		what := "agent " + s.Name
		if len(s.Skills) > 0 {
			what = "skill " + sk.Name + " of agent " + s.Name
			if seen[sk.Name] {
				return nil, fmt.Errorf("%w: skill %q appears twice in %s", swarm.ErrDuplicate, sk.Name, s.Name)
			}
			seen[sk.Name] = true
		} else {
			sk = nil
		}
		d := swarm.Delegation{Agent: s.Agent, Name: s.Name, Description: describe(s, sk, len(s.Skills) > 1)}
		if len(s.Skills) > 1 {
			d.Name = s.Name + Separator + sk.Name
		}
		if sk != nil {
			d.Variant, d.Instructions, d.Tools = sk.Name, sk.Instructions, sk.Tools
		}
		t, err := tool(d, sk, what)
		if err != nil {
			if !errors.Is(err, ErrIncompatible) && !errors.Is(err, swarm.ErrInvalid) {
				err = fmt.Errorf("%w: %w", ErrIncompatible, err)
			}
			return nil, fmt.Errorf("%s cannot absorb %s: %w", a.Name, s.Name, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// tool makes the tool of delegation d for skill sk (nil: the agent has
// none), described as what in errors.
func tool(d swarm.Delegation, sk *Skill, what string) (swarm.Tool, error) {
	if sk == nil || sk.Remote == nil {
		var in Input
		if sk != nil {
			in = sk.Input
		}
		schema, err := in.resolve(what)
		if err != nil {
			return nil, err
		}
		if schema != nil {
			d.Schema, d.Request = schema, objectRequest(d.Name)
		}
		return d.Tool()
	}
	if !sk.Input.IsText() {
		return nil, fmt.Errorf("%w: %s has both a remote tool and an input type; the remote tool's schema is its input", swarm.ErrInvalid, what)
	}
	if !usable(sk.Remote) {
		return nil, fmt.Errorf("%w: remote tool of %s is unusable", swarm.ErrInvalid, what)
	}
	// The delegation's checks (names, the skill's tools) hold for a
	// remote skill's tool too; nothing else of the delegation is used.
	if _, err := d.Tool(); err != nil {
		return nil, err
	}
	sch := sk.Remote.Schema()
	if len(sch) == 0 {
		sch = json.RawMessage(`{}`)
	}
	schema, err := objectSchema(sch, what, true)
	if err != nil {
		return nil, err
	}
	return &remoteTool{sibling: d.Agent, name: d.Name, description: d.Description, schema: schema, remote: sk.Remote}, nil
}

// objectRequest makes the request of a call of the tool named name taking
// a JSON object: the object, in compact JSON.
func objectRequest(name string) func(json.RawMessage) (string, error) {
	return func(args json.RawMessage) (string, error) {
		var b bytes.Buffer
		if err := json.Compact(&b, args); err != nil {
			return "", &swarm.ArgumentError{Tool: name, Err: err}
		}
		return b.String(), nil
	}
}

// describe is the description of the tool for skill sk of s (nil: s has no
// skills).
func describe(s Sibling, sk *Skill, perSkill bool) string {
	var b strings.Builder
	if perSkill {
		fmt.Fprintf(&b, "Delegate to the %q agent's skill %q", s.Name, sk.Name)
		if sk.Description != "" {
			b.WriteString(": " + sk.Description)
		}
		b.WriteString(".")
		if s.Description != "" {
			b.WriteString(" The agent: " + s.Description)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "Delegate to the %q agent", s.Name)
	if s.Description != "" {
		b.WriteString(": " + s.Description)
	}
	b.WriteString(".")
	if len(s.Skills) > 0 {
		b.WriteString(" Skills: ")
		for i, k := range s.Skills {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(k.Name)
			if k.Description != "" {
				b.WriteString(" — " + k.Description)
			}
		}
		b.WriteString(".")
	}
	return b.String()
}

// remoteTool is the tool a captain gets for a remote skill: it calls the
// skill's remote tool with the arguments the runtime checked against its
// schema, the skill's input.
type remoteTool struct {
	sibling     *swarm.Agent
	name        string
	description string
	schema      json.RawMessage
	remote      swarm.Tool
}

func (t *remoteTool) Name() string            { return t.name }
func (t *remoteTool) Description() string     { return t.description }
func (t *remoteTool) Schema() json.RawMessage { return t.schema }

func (t *remoteTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.remote.Call(ctx, args)
}
