package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/model"
)

// The built-in tools of every swarm orchestrator.
const (
	toolComplete = "complete"
	toolPause    = "pause"
	toolFail     = "fail"
	handoffPre   = "handoff_to_"
)

// agentPlan is an agent (or the orchestrator) resolved for one run: its
// rendered system prompt, model and tool table.
type agentPlan struct {
	name     string
	root     bool
	system   string
	model    model.Model
	price    *model.Price // nil: unknown
	tools    map[string]Tool
	schemas  map[string]*jsonschema.Resolved // argument schemas the runtime checks
	handoffs map[string]string               // tool name -> agent name
	children map[string]*childTarget         // tool name -> swarm handoff
	toolDefs []model.ToolDef
	// builtins: the orchestrator is offered pause and fail (and complete,
	// unless a text answer completes).
	builtins bool
	maxTurns int
	hooks    *Hooks
	registry *RegistryAccess // root only: the registry tools are offered
	// schema is the structured output asked of the agent's replies, if
	// any (the orchestrator's result schema is added by modelStep).
	schema json.RawMessage
	// textOnly: the agent was offered no tools and its replies are text;
	// tool calls in them are dropped before they are recorded.
	textOnly bool
	// delegates: tool name -> the tool of a Delegation (see
	// Delegation), which is in handoffs too.
	delegates map[string]*delegateTool
	// dynamic: the agent's dynamic tool sets (see DynamicTools), nil
	// when it has none.
	dynamic *dynamicSets
	// guards are the agent's guardrails by point (guardrail.go).
	guards guards
	// modelSpec names the agent's model ("" if unknown), for telemetry.
	modelSpec string
	// compaction keeps the agent's history within its window (nil: off).
	compaction *compact.Config
}

// plan is everything a run needs to execute, resolved and validated once.
type plan struct {
	root   *agentPlan
	agents map[string]*agentPlan
	// srcs is where the plan first met the agent of each name.
	srcs map[string]agentSrc
	// strategy is what the run does (see strategy.go).
	strategy strategy
	// holdStream: streamed text waits for the output guardrails.
	holdStream bool
	// lazyModel: the run has a Strategy, and its orchestrator needs a
	// model only when the strategy calls it.
	lazyModel bool
}

// noModel is the model of an orchestrator that has none: every call fails
// with err, as a request the runtime cannot send.
func noModel(err error) model.Model {
	return model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		return nil, &model.Error{Kind: model.KindBadRequest, Provider: "none", Message: err.Error(), Err: err}
	})
}

// agentSrc is an agent of a plan and where the plan first met it.
type agentSrc struct {
	agent *Agent
	place string
}

// claim adds agent a, met at place, to the plan's agents by name. Agents are
// told apart by name only (handoff_to_<name>), so a different agent with the
// name of one already met is an error naming both places. The same agent
// met twice is fine.
func (p *plan) claim(a *Agent, place string) error {
	if p.srcs == nil {
		p.srcs = map[string]agentSrc{}
	}
	prev, ok := p.srcs[a.Name]
	switch {
	case !ok:
		p.srcs[a.Name] = agentSrc{agent: a, place: place}
	case prev.agent != a:
		return fmt.Errorf("%w: two different agents are named %q: one in %s, another in %s", ErrDuplicate, a.Name, prev.place, place)
	}
	return nil
}

var handoffParams = json.RawMessage(`{"type":"object","properties":{"request":{"type":"string","description":"The task and its context."}},"required":["request"]}`)

// plan resolves a swarm's spec and every agent reachable from it. Errors
// name the offending swarm, agent, tool or handoff.
func (rt *Runtime) plan(info *defInfo, spec Spec, input json.RawMessage, values map[string]any) (*plan, error) {
	if info.agentRun != nil {
		return rt.planAgentRun(info, input, values)
	}
	data := make(map[string]any, len(values)+1)
	for k, v := range values {
		data[k] = v
	}
	if _, ok := data["Input"]; !ok {
		var in any
		_ = json.Unmarshal(input, &in)
		data["Input"] = in
	}
	p := &plan{agents: map[string]*agentPlan{}, lazyModel: spec.Strategy != nil}
	root, err := rt.planAgent(p, info.id, true, spec.Instructions, spec.Model, spec.Tools, spec.Handoffs, spec.MaxTurns, &spec.Hooks, data, info)
	if err != nil {
		return nil, fmt.Errorf("swarm %s: %w", info.id, err)
	}
	p.root = root
	p.strategy = strategyFor(info, spec)
	if err := p.planGuards(spec.Guardrails); err != nil {
		return nil, fmt.Errorf("swarm %s: %w", info.id, err)
	}
	p.holdStream = spec.HoldStream
	if err := p.planCompaction(spec.Compaction); err != nil {
		return nil, fmt.Errorf("swarm %s: %w", info.id, err)
	}
	root.builtins = !spec.NoBuiltins
	root.toolDefs = append(root.toolDefs, builtinDefs(root.builtins, info)...)
	if spec.Registry != nil {
		root.registry = spec.Registry
		root.toolDefs = append(root.toolDefs,
			model.ToolDef{Name: toolRegistrySearch, Description: "Search the registry of swarms by what you need done; returns matching swarm ids with descriptions and capabilities.", Parameters: registrySearchParams},
			model.ToolDef{Name: toolRegistryHandoff, Description: "Hand a task to a swarm that swarm_registry_search returned; its result comes back as this tool's result.", Parameters: registryHandoffParams},
		)
	}
	if err := rt.checkStrategy(p, info, input); err != nil {
		return nil, fmt.Errorf("swarm %s: %w", info.id, err)
	}
	return p, nil
}

func (rt *Runtime) planAgent(p *plan, name string, root bool, instructions, modelSpec string, tools []Tool, handoffs []Handoff, maxTurns int, hooks *Hooks, data map[string]any, info *defInfo) (*agentPlan, error) {
	ap := &agentPlan{name: name, root: root, tools: map[string]Tool{}, handoffs: map[string]string{}, maxTurns: maxTurns, hooks: hooks}
	if ap.maxTurns <= 0 {
		ap.maxTurns = DefaultMaxTurns
	}
	if !root {
		p.agents[name] = ap
	}
	sys, err := rt.render(instructions, data)
	if err != nil {
		return nil, fmt.Errorf("instructions of %s: %w", name, err)
	}
	ap.system = sys
	ap.model, err = rt.model(modelSpec)
	if err != nil && root && p.lazyModel && errors.Is(err, ErrNoModel) {
		// A strategy may never call its orchestrator's model (a workflow
		// of agents with models of their own): it fails only if it does.
		ap.model, err = noModel(err), nil
	}
	if err != nil {
		return nil, fmt.Errorf("model of %s: %w", name, err)
	}
	if modelSpec == "" {
		modelSpec = rt.cfg.ModelSpec
	}
	ap.modelSpec = modelSpec
	if p, ok := model.LookupPrice(modelSpec); ok {
		ap.price = &p
	}
	for _, t := range tools {
		if err := toolErr(t); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
		}
		n := t.Name()
		if err := checkName(n); err != nil {
			return nil, fmt.Errorf("%w: tool of %s: %w", ErrInvalid, name, err)
		}
		if strings.HasPrefix(n, handoffPre) || (root && reservedTool(n)) {
			return nil, fmt.Errorf("%w: tool name %q of %s is reserved", ErrInvalid, n, name)
		}
		if _, dup := ap.tools[n]; dup {
			return nil, fmt.Errorf("%w: tool %q appears twice in %s", ErrDuplicate, n, name)
		}
		if dt, ok := t.(*dynamicTool); ok {
			if ap.dynamic == nil {
				ap.dynamic = &dynamicSets{}
			}
			ap.dynamic.sets = append(ap.dynamic.sets, dt)
			continue
		}
		if dt, ok := t.(*delegateTool); ok {
			if err := rt.planDelegate(p, ap, dt, data, info); err != nil {
				return nil, err
			}
			continue
		}
		ap.tools[n] = t
		if _, self := t.(selfValidating); !self {
			rs, err := rt.toolSchema(t)
			if err != nil {
				return nil, fmt.Errorf("%w: schema of tool %s of %s: %w", ErrInvalid, n, name, err)
			}
			if ap.schemas == nil {
				ap.schemas = map[string]*jsonschema.Resolved{}
			}
			ap.schemas[n] = rs
		}
		ap.toolDefs = append(ap.toolDefs, model.ToolDef{Name: n, Description: t.Description(), Parameters: t.Schema()})
	}
	for _, h := range handoffs {
		if h.isSwarm {
			if err := rt.planChild(ap, name, h); err != nil {
				return nil, err
			}
			continue
		}
		target, place := h.agent, "the handoffs of "+name
		if target == nil {
			if h.id == "" {
				return nil, fmt.Errorf("%w: empty handoff in %s", ErrInvalid, name)
			}
			a, ok := rt.agent(h.id)
			if !ok {
				return nil, fmt.Errorf("%w %q in the handoffs of %s", ErrUnknownAgent, h.id, name)
			}
			target, place = a, place+" (the registered agent)"
		}
		if err := checkName(target.Name); err != nil {
			return nil, fmt.Errorf("%w: agent in the handoffs of %s: %w", ErrInvalid, name, err)
		}
		if err := p.claim(target, place); err != nil {
			return nil, err
		}
		tn := handoffPre + target.Name
		if len(tn) > 64 {
			return nil, fmt.Errorf("%w: handoff tool name %q is longer than 64 characters", ErrInvalid, tn)
		}
		if _, dup := ap.children[tn]; dup {
			return nil, fmt.Errorf("%w: handoff to %q appears twice in %s", ErrDuplicate, target.Name, name)
		}
		if _, dup := ap.handoffs[tn]; dup {
			return nil, fmt.Errorf("%w: handoff to %q appears twice in %s", ErrDuplicate, target.Name, name)
		}
		ap.handoffs[tn] = target.Name
		desc := h.description
		if desc == "" {
			desc = target.Description
		}
		if desc == "" {
			desc = "Delegate a task to the " + target.Name + " agent and get its answer."
		}
		ap.toolDefs = append(ap.toolDefs, model.ToolDef{Name: tn, Description: desc, Parameters: handoffParams})
		if _, seen := p.agents[target.Name]; seen {
			continue
		}
		if target.Name == info.id {
			return nil, fmt.Errorf("%w: agent %q has the id of its swarm", ErrDuplicate, target.Name)
		}
		if _, err := rt.planAgent(p, target.Name, false, target.Instructions, target.Model, target.Tools, target.Handoffs, target.MaxTurns, &target.Hooks, data, info); err != nil {
			return nil, err
		}
	}
	return ap, nil
}

// planChild adds a swarm handoff to ap. A swarm given by value is
// registered if it is not yet.
func (rt *Runtime) planChild(ap *agentPlan, name string, h Handoff) error {
	if h.id == "" {
		return fmt.Errorf("%w: empty swarm handoff in %s", ErrInvalid, name)
	}
	info, err := rt.info(h.id)
	if err != nil && h.swarm != nil {
		if rerr := rt.Register(h.swarm); rerr != nil && !errors.Is(rerr, ErrDuplicate) {
			return fmt.Errorf("swarm handoff of %s: %w", name, rerr)
		}
		info, err = rt.info(h.id)
	}
	if err != nil {
		return fmt.Errorf("%w in the handoffs of %s", err, name)
	}
	if info.noTarget != "" {
		return fmt.Errorf("%w: %s hands off to %q, which cannot be a handoff target: %s", ErrInvalid, name, h.id, info.noTarget)
	}
	tn := handoffPre + h.id
	if len(tn) > 64 {
		return fmt.Errorf("%w: handoff tool name %q is longer than 64 characters", ErrInvalid, tn)
	}
	if _, dup := ap.handoffs[tn]; dup {
		return fmt.Errorf("%w: handoff to %q appears twice in %s", ErrDuplicate, h.id, name)
	}
	if _, dup := ap.children[tn]; dup {
		return fmt.Errorf("%w: handoff to %q appears twice in %s", ErrDuplicate, h.id, name)
	}
	ct := &childTarget{swarm: h.id, info: info, customizable: h.customizable, params: recordParams(h.params)}
	if ap.children == nil {
		ap.children = map[string]*childTarget{}
	}
	ap.children[tn] = ct
	desc := h.description
	if desc == "" {
		desc = info.description
	}
	if desc == "" {
		desc = "Delegate a task to the " + h.id + " swarm and get its result."
	}
	ap.toolDefs = append(ap.toolDefs, model.ToolDef{Name: tn, Description: desc, Parameters: ct.schema()})
	return nil
}

// The built-in tools' definitions go out with every orchestrator call, so
// they are kept short: names and descriptions carry the meaning.
var (
	pauseDef = model.ToolDef{Name: toolPause, Description: "Ask a human; their answer is the result.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"},"context":{"type":"string"}},"required":["reason"]}`)}
	// fail's reason may be left out: the run then fails "the model gave up".
	failDef = model.ToolDef{Name: toolFail, Description: "Give up on the task.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}}}`)}
	textBuiltins = []model.ToolDef{pauseDef, failDef}
)

// builtinDefs returns the built-in tools offered to the orchestrator of
// swarm info: none when off; pause and fail; and complete unless the
// swarm's result is text, which a text answer already completes.
func builtinDefs(on bool, info *defInfo) []model.ToolDef {
	switch {
	case !on:
		return nil
	case info.textOut:
		return textBuiltins
	}
	return []model.ToolDef{{Name: toolComplete, Description: "Finish the task with its result.", Parameters: completeParams(info.outSchema)}, pauseDef, failDef}
}

func completeParams(out json.RawMessage) json.RawMessage {
	if len(out) == 0 {
		out = json.RawMessage(`{}`)
	}
	return json.RawMessage(`{"type":"object","properties":{"result":` + string(out) + `},"required":["result"]}`)
}

// selfValidating tools check their arguments in Call, so the runtime need
// not check them again.
type selfValidating interface{ validatesArguments() }

func (t *funcTool[In, Out]) validatesArguments() {}

// toolSchema resolves a tool's argument schema, cached per schema text.
func (rt *Runtime) toolSchema(t Tool) (*jsonschema.Resolved, error) {
	key := string(t.Schema())
	if v, ok := rt.schemas.Load(key); ok {
		return v.(*jsonschema.Resolved), nil
	}
	if key == "" {
		key = "{}"
	}
	rs, err := resolveSchema(json.RawMessage(key))
	if err != nil {
		return nil, err
	}
	rt.schemas.Store(string(t.Schema()), rs)
	return rs, nil
}

// render executes instructions as a text/template against data. Parsed
// templates are cached by their source.
func (rt *Runtime) render(instructions string, data map[string]any) (string, error) {
	if !strings.Contains(instructions, "{{") {
		return instructions, nil
	}
	var t *template.Template
	if v, ok := rt.tmpls.Load(instructions); ok {
		t = v.(*template.Template)
	} else {
		var err error
		t, err = template.New("instructions").Option("missingkey=zero").Parse(instructions)
		if err != nil {
			return "", err
		}
		rt.tmpls.Store(instructions, t)
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}
