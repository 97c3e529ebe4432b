package swarm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Params replaces parts of a swarm's spec at the call site, for one run
// ([WithParams]) or for every child run of a handoff ([Handoff.WithParams]).
// Each field that is set replaces the spec's field entirely; zero fields
// keep the spec's. The result type always stays the swarm's.
//
// Params are recorded in the run's journal by name so that any process can
// recover the run: tools must be registered with [Runtime.RegisterTool] or
// belong to the swarm's own spec, and agent handoffs must name registered
// agents or agents reachable from the swarm's own spec.
type Params struct {
	Instructions string
	Handoffs     []Handoff
	Tools        []Tool
	MaxTurns     int
}

// WithParams runs the swarm with p replacing parts of its spec.
func WithParams(p Params) StartOption { return func(c *startConfig) { c.params = &p } }

// Customization is what a parent's model may add to a customizable child
// swarm (see [Handoff.Customizable]). It is recorded in the child's journal
// and shown in its status.
type Customization struct {
	// AdditionalInstructions are appended to the child's instructions.
	AdditionalInstructions string `json:"additional_instructions,omitempty"`
	// AdditionalAgents are registered agents the child may also hand off to.
	AdditionalAgents []string `json:"additional_agents,omitempty"`
	// AdditionalTools are registered tools the child may also use.
	AdditionalTools []string `json:"additional_tools,omitempty"`
	// MaxTurnsOverride, when positive, replaces the child's max turns
	// (at most MaxTurnsLimit).
	MaxTurnsOverride int `json:"max_turns_override,omitempty"`
}

// MaxTurnsLimit bounds the max turns a customization may ask for.
const MaxTurnsLimit = 100

// customizationSchema is the customization argument of customizable swarm
// handoff tools.
var customizationSchema = json.RawMessage(`{"type":"object","description":"Optional additions to the child swarm. Additive only: the child keeps its own instructions, agents and tools.","properties":{"additional_instructions":{"type":"string","description":"Instructions appended to the child's own."},"additional_agents":{"type":"array","items":{"type":"string"},"description":"Ids of registered agents the child may also delegate to."},"additional_tools":{"type":"array","items":{"type":"string"},"description":"Names of registered tools the child may also use."},"max_turns_override":{"type":"integer","minimum":1,"maximum":100,"description":"Max turns for the child."}},"additionalProperties":false}`)

// paramsRecord is Params as journaled: by name.
type paramsRecord struct {
	Instructions string       `json:"instructions,omitempty"`
	Handoffs     []handoffRef `json:"handoffs,omitempty"`
	SetHandoffs  bool         `json:"set_handoffs,omitempty"`
	Tools        []string     `json:"tools,omitempty"`
	SetTools     bool         `json:"set_tools,omitempty"`
	MaxTurns     int          `json:"max_turns,omitempty"`
}

type handoffRef struct {
	ID           string `json:"id"`
	Swarm        bool   `json:"swarm,omitempty"`
	Description  string `json:"description,omitempty"`
	Customizable bool   `json:"customizable,omitempty"`
}

func recordParams(p *Params) *paramsRecord {
	if p == nil {
		return nil
	}
	pr := &paramsRecord{Instructions: p.Instructions, MaxTurns: p.MaxTurns, SetHandoffs: p.Handoffs != nil, SetTools: p.Tools != nil}
	for _, h := range p.Handoffs {
		pr.Handoffs = append(pr.Handoffs, handoffRef{ID: h.id, Swarm: h.isSwarm, Description: h.description, Customizable: h.customizable})
	}
	for _, t := range p.Tools {
		if t != nil {
			pr.Tools = append(pr.Tools, t.Name())
		}
	}
	return pr
}

// RegisterTool adds tools that params and customizations can name.
func (rt *Runtime) RegisterTool(tools ...Tool) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.tools == nil {
		rt.tools = map[string]Tool{}
	}
	for _, t := range tools {
		if err := toolErr(t); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if err := checkName(t.Name()); err != nil {
			return fmt.Errorf("%w: tool: %w", ErrInvalid, err)
		}
		if _, dup := rt.tools[t.Name()]; dup {
			return fmt.Errorf("%w: tool %q registered twice", ErrDuplicate, t.Name())
		}
		rt.tools[t.Name()] = t
	}
	return nil
}

// Tools returns the registered tools.
func (rt *Runtime) Tools() []Tool {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	out := make([]Tool, 0, len(rt.tools))
	for _, t := range rt.tools {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Tool) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

func (rt *Runtime) tool(name string) (Tool, bool) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	t, ok := rt.tools[name]
	return t, ok
}

// reachableAgents returns the agents reachable from handoffs, by name.
func (rt *Runtime) reachableAgents(hs []Handoff, into map[string]*Agent) {
	for _, h := range hs {
		if h.isSwarm {
			continue
		}
		a := h.agent
		if a == nil {
			a, _ = rt.agent(h.id)
		}
		if a == nil || into[a.Name] != nil {
			continue
		}
		into[a.Name] = a
		rt.reachableAgents(a.Handoffs, into)
	}
}

// applyParams returns spec with the recorded params applied. Tools and
// agents are resolved by name against the registry and the base spec, so
// a run recovered in another process gets the same ones.
func (rt *Runtime) applyParams(spec Spec, pr *paramsRecord) (Spec, error) {
	if pr == nil {
		return spec, nil
	}
	if pr.Instructions != "" {
		spec.Instructions = pr.Instructions
	}
	if pr.MaxTurns > 0 {
		spec.MaxTurns = pr.MaxTurns
	}
	if pr.SetTools {
		base := map[string]Tool{}
		for _, t := range spec.Tools {
			if t != nil {
				base[t.Name()] = t
			}
		}
		tools := make([]Tool, 0, len(pr.Tools))
		for _, n := range pr.Tools {
			t, ok := base[n]
			if !ok {
				t, ok = rt.tool(n)
			}
			if !ok {
				return spec, fmt.Errorf("%w: params name tool %q, which is neither registered nor in the swarm's spec", ErrInvalid, n)
			}
			tools = append(tools, t)
		}
		spec.Tools = tools
	}
	if pr.SetHandoffs {
		agents := map[string]*Agent{}
		rt.reachableAgents(spec.Handoffs, agents)
		hs := make([]Handoff, 0, len(pr.Handoffs))
		for _, ref := range pr.Handoffs {
			var h Handoff
			switch {
			case ref.Swarm:
				h = ToSwarmID(ref.ID)
			case agents[ref.ID] != nil:
				h = ToAgent(agents[ref.ID])
			default:
				if _, ok := rt.agent(ref.ID); !ok {
					return spec, fmt.Errorf("%w %q named by params", ErrUnknownAgent, ref.ID)
				}
				h = ToAgentID(ref.ID)
			}
			h.description, h.customizable = ref.Description, ref.Customizable
			hs = append(hs, h)
		}
		spec.Handoffs = hs
	}
	return spec, nil
}

// applyCustomization adds a customization to spec. Unknown names are
// errors meant for the model that asked for them.
func (rt *Runtime) applyCustomization(spec Spec, c *Customization) (Spec, error) {
	if c == nil {
		return spec, nil
	}
	if c.AdditionalInstructions != "" {
		if spec.Instructions != "" {
			spec.Instructions += "\n\n"
		}
		spec.Instructions += c.AdditionalInstructions
	}
	if len(c.AdditionalTools) > 0 {
		tools := slices.Clone(spec.Tools)
		for _, n := range c.AdditionalTools {
			if slices.ContainsFunc(tools, func(t Tool) bool { return t != nil && t.Name() == n }) {
				continue
			}
			t, ok := rt.tool(n)
			if !ok {
				return spec, fmt.Errorf("customization names tool %q, which is not registered (registered tools: %s)", n, strings.Join(rt.toolNames(), ", "))
			}
			tools = append(tools, t)
		}
		spec.Tools = tools
	}
	if len(c.AdditionalAgents) > 0 {
		hs := slices.Clone(spec.Handoffs)
		for _, n := range c.AdditionalAgents {
			if slices.ContainsFunc(hs, func(h Handoff) bool { return !h.isSwarm && h.id == n }) {
				continue
			}
			if _, ok := rt.agent(n); !ok {
				return spec, fmt.Errorf("customization names agent %q, which is not registered (registered agents: %s)", n, strings.Join(rt.agentNames(), ", "))
			}
			hs = append(hs, ToAgentID(n))
		}
		spec.Handoffs = hs
	}
	if c.MaxTurnsOverride != 0 {
		if c.MaxTurnsOverride < 1 || c.MaxTurnsOverride > MaxTurnsLimit {
			return spec, fmt.Errorf("customization max_turns_override %d is outside 1..%d", c.MaxTurnsOverride, MaxTurnsLimit)
		}
		spec.MaxTurns = c.MaxTurnsOverride
	}
	return spec, nil
}

func (rt *Runtime) toolNames() []string {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	names := make([]string, 0, len(rt.tools))
	for n := range rt.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}

func (rt *Runtime) agentNames() []string {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	names := make([]string, 0, len(rt.agents))
	for n := range rt.agents {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}
