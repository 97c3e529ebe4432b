package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/swarmrt/swarm/model"
)

// Delegation describes a tool whose calls delegate to an agent, as a
// handoff to it does, under a name, description and argument schema of
// the tool's own: package absorb makes one for each skill of an agent a
// captain absorbs. [Delegation.Tool] makes the tool, to be one of an
// agent's (or a swarm's) Tools.
//
// Every call of the tool runs a fresh loop of Agent (its instructions,
// model, tools, handoffs, max turns and hooks) on the call's request,
// inside the caller's run: it is journaled like an agent handoff
// (handoff_started and handoff_returned events whose Agent is the caller
// and Target the agent, the agent's steps under the call's step key), so a
// run recovered after a crash resumes the agent's loop without redoing its
// recorded steps, and it counts towards [Config.MaxDepth]. A call whose
// arguments do not match Schema, or of which Request makes no request, is
// no delegation: the caller's model gets an error tool result.
type Delegation struct {
	// Agent is the agent a call runs. It is told apart from the run's
	// other agents by its name, as the target of a handoff is.
	Agent *Agent
	// Name and Description make the tool the caller's model is offered.
	Name, Description string
	// Schema is the JSON schema of the call's arguments, an object. Nil
	// means a handoff's: one string argument, request, which is the
	// agent's request.
	Schema json.RawMessage
	// Request, when set, makes the agent's request of a call's
	// arguments (valid against Schema); its error is the call's result,
	// told to the model. Nil takes the argument request, which must not
	// be blank.
	Request func(args json.RawMessage) (string, error)
	// Variant, when set, names a variant of the agent's loop (a valid
	// name): one whose system prompt adds Instructions to the agent's and
	// whose tools are those of the agent named in Tools (empty: all).
	// Events and step keys of a variant's loop are the agent's. Without
	// a Variant, Instructions and Tools must be empty.
	Variant      string
	Instructions string
	Tools        []string
}

// variantSep joins an agent's name and a variant's in the key of the plan
// of the variant's loop. Agent names cannot contain it, so that plan never
// takes the place of an agent's (an agent may well be named
// "shop__restock"). The key names a plan only.
const variantSep = "/"

// Tool checks d and returns its tool. Errors wrap [ErrInvalid]: a nil
// agent, a name that is not [a-zA-Z0-9_-]{1,64} or is reserved (a handoff's
// or a built-in tool's), a schema that is not one, a Tools entry the agent
// does not have. The tool's Call fails: an agent runs only inside a run.
// The tool has a method Delegation() Delegation that returns d.
func (d Delegation) Tool() (Tool, error) {
	if d.Agent == nil {
		return nil, fmt.Errorf("%w: delegation %s to a nil agent", ErrInvalid, d.Name)
	}
	for _, n := range []string{d.Agent.Name, d.Name} {
		if err := checkName(n); err != nil {
			return nil, fmt.Errorf("%w: delegation to %s: %w", ErrInvalid, d.Agent.Name, err)
		}
	}
	if reservedTool(d.Name) {
		return nil, fmt.Errorf("%w: delegation to %s: tool name %q is reserved", ErrInvalid, d.Agent.Name, d.Name)
	}
	key := d.Agent.Name
	if d.Variant != "" {
		if err := checkName(d.Variant); err != nil {
			return nil, fmt.Errorf("%w: variant of %s: %w", ErrInvalid, d.Agent.Name, err)
		}
		if d.Instructions != "" || len(d.Tools) > 0 {
			key += variantSep + d.Variant
		}
	} else if d.Instructions != "" || len(d.Tools) > 0 {
		return nil, fmt.Errorf("%w: delegation %s to %s: instructions or tools of its own need a variant", ErrInvalid, d.Name, d.Agent.Name)
	}
	for _, n := range d.Tools {
		if !slices.Contains(toolNamesOf(d.Agent.Tools), n) {
			return nil, fmt.Errorf("%w: %s names tool %q, which %s does not have", ErrInvalid, d.Name, n, d.Agent.Name)
		}
	}
	schema := d.Schema
	if schema == nil {
		schema = handoffParams
	}
	rs, err := resolveSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: input schema of %s: %w", ErrInvalid, d.Name, err)
	}
	return &delegateTool{d: d, schema: schema, resolved: rs, key: key}, nil
}

// Agent returns the agent of a handoff made with [ToAgent], nil for any
// other handoff.
func (h Handoff) Agent() *Agent {
	if h.isSwarm {
		return nil
	}
	return h.agent
}

// delegateTool is the tool of a Delegation. It is planned as a delegation
// (see planDelegate) and never called as a tool.
type delegateTool struct {
	d        Delegation
	schema   json.RawMessage
	resolved *jsonschema.Resolved
	key      string // the plan of the agent's loop: its name, or see variantSep
}

func (t *delegateTool) Name() string            { return t.d.Name }
func (t *delegateTool) Description() string     { return t.d.Description }
func (t *delegateTool) Schema() json.RawMessage { return t.schema }
func (t *delegateTool) Delegation() Delegation  { return t.d }
func (t *delegateTool) validatesArguments()     {}

func (t *delegateTool) Call(context.Context, json.RawMessage) (string, error) {
	return "", fmt.Errorf("%s: a delegation runs only inside a run of its caller", t.d.Name)
}

// request is the agent's request for a call's arguments, or a problem to
// report to the caller's model.
func (t *delegateTool) request(args json.RawMessage) (string, string) {
	if err := validateJSON(t.resolved, args); err != nil {
		return "", (&ArgumentError{Tool: t.d.Name, Err: err}).Error()
	}
	if t.d.Request == nil {
		return textRequest(t.d.Name, args)
	}
	req, err := t.d.Request(orEmpty(args))
	if err != nil {
		return "", err.Error()
	}
	return req, ""
}

// textRequest is the request argument of a call of the tool named name
// taking a handoff's arguments, or a problem.
func textRequest(name string, args json.RawMessage) (string, string) {
	var a struct {
		Request string `json:"request"`
	}
	if err := json.Unmarshal(orEmpty(args), &a); err != nil || strings.TrimSpace(a.Request) == "" {
		return a.Request, name + " needs an object argument with a non-empty request string"
	}
	return a.Request, ""
}

// delegation resolves call c, which ap plans as a delegation to the agent
// named target (a handoff or a Delegation's tool): the plan of the loop to
// run, its request, and a problem with the arguments ("" if none).
func (ap *agentPlan) delegation(c model.ToolCall, target string) (key, request, problem string) {
	if dt, ok := ap.delegates[c.Name]; ok {
		request, problem = dt.request(c.Arguments)
		return dt.key, request, problem
	}
	request, problem = textRequest(c.Name, c.Arguments)
	return target, request, problem
}

// delegationProblem is what is wrong with the arguments of call c when ap
// plans it as a delegation (a handoff or a Delegation's tool), "" when
// nothing is or c is no delegation. A delegation with a problem never
// hands off: it is a tool call whose result is the problem.
func (ap *agentPlan) delegationProblem(c model.ToolCall) string {
	target, ok := ap.handoffs[c.Name]
	if !ok {
		return ""
	}
	_, _, problem := ap.delegation(c, target)
	return problem
}

// planDelegate plans the tool dt of a Delegation on ap as a delegation to a
// plan of the agent's loop (made once per plan key; cycles of delegations
// are fine, their depth is bounded when they run).
func (rt *Runtime) planDelegate(p *plan, ap *agentPlan, dt *delegateTool, data map[string]any, info *defInfo) error {
	s := dt.d.Agent
	switch {
	case s.Name == ap.name:
		return fmt.Errorf("%w: agent %q cannot absorb itself", ErrInvalid, s.Name)
	case s.Name == info.id:
		return fmt.Errorf("%w: %s absorbs agent %q, which has the id of its swarm (the swarm's captain cannot be absorbed below it)", ErrDuplicate, ap.name, s.Name)
	}
	if err := p.claim(s, "the agents absorbed by "+ap.name); err != nil {
		return err
	}
	ap.tools[dt.d.Name] = dt
	ap.handoffs[dt.d.Name] = s.Name
	if ap.delegates == nil {
		ap.delegates = map[string]*delegateTool{}
	}
	ap.delegates[dt.d.Name] = dt
	ap.toolDefs = append(ap.toolDefs, model.ToolDef{Name: dt.d.Name, Description: dt.d.Description, Parameters: dt.schema})
	if _, seen := p.agents[dt.key]; seen {
		return nil
	}
	instructions, tools := s.Instructions, s.Tools
	if dt.d.Instructions != "" {
		instructions = strings.TrimSpace(instructions + "\n\n" + dt.d.Instructions)
	}
	if len(dt.d.Tools) > 0 {
		tools = slices.DeleteFunc(slices.Clone(tools), func(t Tool) bool { return t == nil || !slices.Contains(dt.d.Tools, t.Name()) })
	}
	sp, err := rt.planAgent(p, dt.key, false, instructions, s.Model, tools, s.Handoffs, s.MaxTurns, &s.Hooks, data, info)
	if err != nil {
		return err
	}
	sp.name = s.Name
	return nil
}
