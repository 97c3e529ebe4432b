package swarm

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

	"github.com/swarmrt/swarm/model"
)

// SkillSeparator joins an agent's name and a skill's name in the name of the
// tool a captain gets for that skill: the skill "factor" of the agent "math"
// is offered as "math__factor". Model providers accept only
// [a-zA-Z0-9_-]{1,64} in tool names (OpenAI and Anthropic alike), so the
// dot of "math.factor" cannot be used; "__" is also what MCP toolsets use.
const SkillSeparator = "__"

// skillPlanSep joins an agent's name and a skill's name in the key of the
// plan of the agent's loop for a skill with instructions or tools of its
// own. Agent names cannot contain it, so that plan never takes the place of
// an agent's (an agent may well be named "shop__restock"). The key names
// a plan only: events and step keys of the loop are those of the agent.
const skillPlanSep = "/"

// Skill is one thing an agent can do, declared so that a captain that
// absorbs the agent (see [Agent.Absorb]) can offer it as a tool of its own.
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
	Remote Tool
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
// tool's schema and resolved schema. Text gives the request schema of a
// handoff.
func (in Input) resolve(what string) (json.RawMessage, *jsonschema.Resolved, error) {
	if in.err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, in.err)
	}
	if in.schema == nil {
		rs, err := resolveSchema(handoffParams)
		return handoffParams, rs, err
	}
	if in.typ != "" {
		what += ", whose input is " + in.typ + ","
	}
	return objectSchema(in.schema, what, false)
}

// objectSchema resolves schema, which must describe a JSON object, the only
// kind of tool arguments models produce: its type is "object", or
// ["object"] or ["object", "null"] (given to the model as "object"), or,
// when untyped is set (a remote tool's schema: MCP allows {}), absent
// (taken as "object").
func objectSchema(schema json.RawMessage, what string, untyped bool) (json.RawMessage, *jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, nil, fmt.Errorf("input schema of %s: %w", what, err)
	}
	switch {
	case s.Type == "object":
	case s.Type == "" && (slices.Equal(s.Types, []string{"object"}) || slices.Equal(s.Types, []string{"object", "null"}) || slices.Equal(s.Types, []string{"null", "object"})),
		s.Type == "" && len(s.Types) == 0 && untyped:
		s.Type, s.Types = "object", nil
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(schema, &fields); err != nil {
			return nil, nil, fmt.Errorf("input schema of %s: %w", what, err)
		}
		if fields == nil { // the schema null
			fields = map[string]json.RawMessage{}
		}
		fields["type"] = json.RawMessage(`"object"`)
		var err error
		if schema, err = json.Marshal(fields); err != nil {
			return nil, nil, fmt.Errorf("input schema of %s: %w", what, err)
		}
	default:
		t := s.Type
		if t == "" {
			t = strings.Join(s.Types, " or ")
		}
		if t == "" {
			t = "any value"
		}
		return nil, nil, fmt.Errorf("%w: %s takes %s; an absorbed agent takes text or a JSON object (a struct)", ErrIncompatible, what, t)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("input schema of %s: %w", what, err)
	}
	return schema, rs, nil
}

// ErrIncompatible: an agent cannot be absorbed because of the type of its
// input (see [Input]).
var ErrIncompatible = errors.New("incompatible input type")

// Absorb makes each sibling a tool of a, the captain: a's model is offered,
// on every call of a, one tool per skill of the sibling. A sibling with no
// skill or one skill gives one tool named after the sibling, whose
// description lists its skills; a sibling with more skills gives one tool per
// skill, named <sibling>__<skill> (see [SkillSeparator]). Each tool takes
// the skill's [Input].
//
// Every call of such a tool runs a fresh loop of the sibling, with its own
// instructions (plus the skill's), model, tools, handoffs, max turns and
// hooks, on the call's request, inside the captain's run: it is journaled
// like an agent handoff (handoff_started and handoff_returned events whose
// Agent is the captain and Target the sibling, the sibling's steps under
// the call's step key), so a run recovered after a crash resumes the
// sibling's loop without redoing its recorded steps, and it counts towards
// [Config.MaxDepth]. A call whose arguments are invalid is no delegation:
// the captain's model gets an error tool result. A skill with Remote set is performed by that tool
// instead, as an ordinary tool call of the captain.
//
// Absorb checks everything at once and changes nothing on error: a sibling
// may not be a itself (or share its name), its tools may not collide with
// a's tools (earlier absorbed siblings included) or reserved names, a's
// handoffs may not name a different agent of the sibling's name (errors
// wrapping [ErrInvalid] or [ErrDuplicate]), and each skill's input must be
// text or a JSON object ([ErrIncompatible]). The tools are appended to
// a.Tools.
func (a *Agent) Absorb(siblings ...*Agent) error {
	if a == nil {
		return fmt.Errorf("%w: absorb into a nil agent", ErrInvalid)
	}
	taken := map[string]bool{}
	for _, t := range a.Tools {
		if t != nil && toolErr(t) == nil {
			taken[t.Name()] = true
		}
	}
	var add []Tool
	for _, s := range siblings {
		ts, err := absorbTools(a, s)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if taken[t.Name()] {
				return fmt.Errorf("%w: %s cannot absorb %s: it already has a tool named %q", ErrDuplicate, a.Name, s.Name, t.Name())
			}
			taken[t.Name()] = true
		}
		add = append(add, ts...)
	}
	a.Tools = append(slices.Clip(a.Tools), add...)
	return nil
}

// Absorbed returns the agents a has absorbed, in the order of its tools.
func (a *Agent) Absorbed() []*Agent {
	var out []*Agent
	for _, t := range a.Tools {
		if at, ok := t.(*agentTool); ok && !slices.Contains(out, at.sibling) {
			out = append(out, at.sibling)
		}
	}
	return out
}

// absorbTools checks sibling s for captain a and makes its tools.
func absorbTools(a, s *Agent) ([]Tool, error) {
	switch {
	case s == nil:
		return nil, fmt.Errorf("%w: %s cannot absorb a nil agent", ErrInvalid, a.Name)
	case s == a || s.Name == a.Name:
		return nil, fmt.Errorf("%w: agent %q cannot absorb itself", ErrInvalid, a.Name)
	}
	if err := checkName(s.Name); err != nil {
		return nil, fmt.Errorf("%w: %s cannot absorb an agent: %w", ErrInvalid, a.Name, err)
	}
	for _, h := range a.Handoffs {
		if h.agent != nil && h.agent != s && h.agent.Name == s.Name {
			return nil, fmt.Errorf("%w: %s cannot absorb %s: it hands off to a different agent of that name", ErrDuplicate, a.Name, s.Name)
		}
	}
	skills := s.Skills
	if len(skills) == 0 {
		skills = []Skill{{}}
	}
	seen := map[string]bool{}
	out := make([]Tool, 0, len(skills))
	for i := range skills {
		sk := &skills[i]
		what := "agent " + s.Name
		if len(s.Skills) > 0 {
			what = "skill " + sk.Name + " of agent " + s.Name
			if err := checkName(sk.Name); err != nil {
				return nil, fmt.Errorf("%w: skill of %s: %w", ErrInvalid, s.Name, err)
			}
			if seen[sk.Name] {
				return nil, fmt.Errorf("%w: skill %q appears twice in %s", ErrDuplicate, sk.Name, s.Name)
			}
			seen[sk.Name] = true
			for _, n := range sk.Tools {
				if !slices.Contains(toolNamesOf(s.Tools), n) {
					return nil, fmt.Errorf("%w: %s names tool %q, which %s does not have", ErrInvalid, what, n, s.Name)
				}
			}
		} else {
			sk = nil
		}
		at := &agentTool{sibling: s, skill: sk, name: s.Name, key: s.Name}
		if len(s.Skills) > 1 {
			at.name = s.Name + SkillSeparator + sk.Name
		}
		if sk != nil && (sk.Instructions != "" || len(sk.Tools) > 0) {
			at.key = s.Name + skillPlanSep + sk.Name
		}
		if err := checkName(at.name); err != nil {
			return nil, fmt.Errorf("%w: tool for %s: %w", ErrInvalid, what, err)
		}
		if strings.HasPrefix(at.name, handoffPre) || at.name == toolComplete || at.name == toolPause || at.name == toolFail ||
			at.name == toolRegistrySearch || at.name == toolRegistryHandoff {
			return nil, fmt.Errorf("%w: %s cannot absorb %s: tool name %q is reserved", ErrInvalid, a.Name, s.Name, at.name)
		}
		var err error
		switch {
		case sk != nil && sk.Remote != nil:
			if !sk.Input.IsText() {
				return nil, fmt.Errorf("%w: %s has both a remote tool and an input type; the remote tool's schema is its input", ErrInvalid, what)
			}
			if err := toolErr(sk.Remote); err != nil {
				return nil, fmt.Errorf("%w: remote tool of %s: %w", ErrInvalid, what, err)
			}
			at.remote = sk.Remote
			sch := sk.Remote.Schema()
			if len(sch) == 0 {
				sch = json.RawMessage(`{}`)
			}
			at.schema, at.resolved, err = objectSchema(sch, what, true)
		case sk != nil:
			at.schema, at.resolved, err = sk.Input.resolve(what)
			at.text = sk.Input.IsText()
		default:
			at.schema, at.resolved, err = Input{}.resolve(what)
			at.text = true
		}
		if err != nil {
			if !errors.Is(err, ErrIncompatible) {
				err = fmt.Errorf("%w: %w", ErrIncompatible, err)
			}
			return nil, fmt.Errorf("%s cannot absorb %s: %w", a.Name, s.Name, err)
		}
		at.description = describeSibling(s, sk, len(s.Skills) > 1)
		out = append(out, at)
	}
	return out, nil
}

// describeSibling is the description of the tool for skill sk of s (nil:
// s has no skills).
func describeSibling(s *Agent, sk *Skill, perSkill bool) string {
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

// agentTool is the tool a captain gets for a skill of an absorbed sibling.
// A local one is planned as a delegation (see planAbsorbed) and never
// called as a tool; a remote one calls its remote tool.
type agentTool struct {
	sibling     *Agent
	skill       *Skill // nil: the sibling has no skills
	name        string
	description string
	schema      json.RawMessage
	resolved    *jsonschema.Resolved
	text        bool   // takes {"request": "..."}
	key         string // the plan of the sibling's loop for this tool: its name, or see skillPlanSep
	remote      Tool
}

func (t *agentTool) Name() string            { return t.name }
func (t *agentTool) Description() string     { return t.description }
func (t *agentTool) Schema() json.RawMessage { return t.schema }

// Call calls the remote tool of a remote skill. A local sibling runs only as
// a delegation inside a run.
func (t *agentTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if t.remote == nil {
		return "", fmt.Errorf("%s: an absorbed agent runs only inside a run of its captain", t.name)
	}
	if err := validateJSON(t.resolved, args); err != nil {
		return "", &ArgumentError{Tool: t.name, Err: err}
	}
	return t.remote.Call(ctx, args)
}

func (t *agentTool) validatesArguments() {}

// request is the sibling's input for a call's arguments, or a problem to
// report to the captain's model.
func (t *agentTool) request(args json.RawMessage) (string, string) {
	if err := validateJSON(t.resolved, args); err != nil {
		return "", (&ArgumentError{Tool: t.name, Err: err}).Error()
	}
	if t.text {
		var a struct {
			Request string `json:"request"`
		}
		if err := json.Unmarshal(orEmpty(args), &a); err != nil || strings.TrimSpace(a.Request) == "" {
			return a.Request, t.name + " needs an object argument with a non-empty request string"
		}
		return a.Request, ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, orEmpty(args)); err != nil {
		return "", (&ArgumentError{Tool: t.name, Err: err}).Error()
	}
	return b.String(), ""
}

// delegation resolves call c, which ap plans as a delegation to the agent
// named target (a handoff or an absorbed sibling): the plan of the loop to
// run, its request, and a problem with the arguments ("" if none).
func (ap *agentPlan) delegation(c model.ToolCall, target string) (key, request, problem string) {
	if at, ok := ap.absorbed[c.Name]; ok {
		request, problem = at.request(c.Arguments)
		return at.key, request, problem
	}
	var args struct {
		Request string `json:"request"`
	}
	if err := json.Unmarshal(orEmpty(c.Arguments), &args); err != nil || strings.TrimSpace(args.Request) == "" {
		return target, args.Request, c.Name + " needs an object argument with a non-empty request string"
	}
	return target, args.Request, ""
}

// delegationProblem is what is wrong with the arguments of call c when ap
// plans it as a delegation (a handoff or an absorbed sibling), "" when
// nothing is or c is no delegation. A delegation with a problem never hands
// off: it is a tool call whose result is the problem.
func (ap *agentPlan) delegationProblem(c model.ToolCall) string {
	target, ok := ap.handoffs[c.Name]
	if !ok {
		return ""
	}
	_, _, problem := ap.delegation(c, target)
	return problem
}

// planAbsorbed plans the tool at of an absorbed sibling on ap: a remote one
// as a tool, a local one as a delegation to a plan of the sibling's loop
// (made once per plan key; cycles of captains are fine, their depth is
// bounded when they run).
func (rt *Runtime) planAbsorbed(p *plan, ap *agentPlan, at *agentTool, data map[string]any, info *defInfo) error {
	s := at.sibling
	switch {
	case s.Name == ap.name:
		return fmt.Errorf("%w: agent %q cannot absorb itself", ErrInvalid, s.Name)
	case s.Name == info.id:
		return fmt.Errorf("%w: %s absorbs agent %q, which has the id of its swarm (the swarm's captain cannot be absorbed below it)", ErrDuplicate, ap.name, s.Name)
	}
	if at.remote != nil {
		ap.tools[at.name] = at
		ap.toolDefs = append(ap.toolDefs, model.ToolDef{Name: at.name, Description: at.description, Parameters: at.schema})
		return nil
	}
	if err := p.claim(s, "the agents absorbed by "+ap.name); err != nil {
		return err
	}
	ap.tools[at.name] = at
	ap.handoffs[at.name] = s.Name
	if ap.absorbed == nil {
		ap.absorbed = map[string]*agentTool{}
	}
	ap.absorbed[at.name] = at
	ap.toolDefs = append(ap.toolDefs, model.ToolDef{Name: at.name, Description: at.description, Parameters: at.schema})
	if _, seen := p.agents[at.key]; seen {
		return nil
	}
	instructions, tools := s.Instructions, s.Tools
	if sk := at.skill; sk != nil {
		if sk.Instructions != "" {
			instructions = strings.TrimSpace(instructions + "\n\n" + sk.Instructions)
		}
		if len(sk.Tools) > 0 {
			tools = slices.DeleteFunc(slices.Clone(tools), func(t Tool) bool { return t == nil || !slices.Contains(sk.Tools, t.Name()) })
		}
	}
	sp, err := rt.planAgent(p, at.key, false, instructions, s.Model, tools, s.Handoffs, s.MaxTurns, &s.Hooks, data, info)
	if err != nil {
		return err
	}
	sp.name = s.Name
	return nil
}

// Captain defines a text swarm, with a's name as its id and description,
// whose orchestrator is a: its instructions, model, tools (the siblings it
// absorbed included), handoffs, max turns and hooks. It is how a program
// whose agent is the captain runs it.
// Registering it fails (wrapping [ErrDuplicate]) if an agent below a
// absorbs or hands off to an agent of a's name: the captain cannot run
// below itself.
func Captain(a *Agent) *Swarm[string, string] {
	if a == nil {
		s := Define[string, string]("", "", nil)
		s.err = fmt.Errorf("captain: nil agent")
		return s
	}
	s := Define[string, string](a.Name, a.Description, func(string) Spec {
		return Spec{
			Instructions: a.Instructions,
			Model:        a.Model,
			Tools:        slices.Clone(a.Tools),
			Handoffs:     slices.Clone(a.Handoffs),
			MaxTurns:     a.MaxTurns,
			Hooks:        a.Hooks,
		}
	})
	if err := reachesBack(a); err != nil && s.err == nil {
		s.err = fmt.Errorf("swarm %s: %w", a.Name, err)
	}
	return s
}

// reachesBack reports an agent that captain a absorbs or hands off to,
// directly or not, and that absorbs or hands off to an agent of a's name:
// a swarm led by a cannot run a below itself, so its plan would fail at
// every start. Siblings absorbed later are found when the swarm starts.
func reachesBack(a *Agent) error {
	seen := map[*Agent]bool{a: true}
	next := []*Agent{a}
	for len(next) > 0 {
		from := next[0]
		next = next[1:]
		var targets []*Agent
		verb := map[*Agent]string{}
		for _, t := range from.Tools {
			if at, ok := t.(*agentTool); ok && at.remote == nil {
				targets = append(targets, at.sibling)
				verb[at.sibling] = "absorbs"
			}
		}
		for _, h := range from.Handoffs {
			if h.agent != nil && !h.isSwarm {
				targets = append(targets, h.agent)
				if _, ok := verb[h.agent]; !ok {
					verb[h.agent] = "hands off to"
				}
			}
		}
		for _, to := range targets {
			if to.Name == a.Name && from != a {
				return fmt.Errorf("%w: %s %s %q, the captain's name: the captain cannot run below itself", ErrDuplicate, from.Name, verb[to], to.Name)
			}
			if !seen[to] {
				seen[to] = true
				next = append(next, to)
			}
		}
	}
	return nil
}
