package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/openai"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/strategy"
)

// File is a loaded configuration file: checked definitions of tools, agents
// and swarms, ready to be registered with any number of runtimes. Its
// definitions never change; its exported fields are informational, except
// Model, which may be changed before Register (to override the file's
// default model, say). A File whose fields are not being changed is safe
// for concurrent use.
type File struct {
	// Path is the file name given to Load ("" for Parse).
	Path string
	// Dir is the absolute directory relative paths were resolved against.
	Dir string
	// Version is the file format version.
	Version int
	// Model is the file's default model spec ("" if none), with the path
	// of a scripted model made absolute. Agents and swarms that name no
	// model use it; when it is empty they use the runtime's default model.
	Model string
	// Serve is the file's serve section, nil if it has none.
	Serve *Serve
	// Temporal is the file's temporal section, nil if it has none: the
	// swarms it names run on Temporal.
	Temporal *Temporal
	// Limits is the file's limits section: the limits on every run
	// tree's calls (see [File.ApplyLimits]).
	Limits Limits
	// Models are the OpenAI-compatible endpoints of the models: section,
	// by name (see [File.OpenModel]).
	Models map[string]openai.Endpoint
	// Prices are the prices of the models: and prices: sections, by model
	// spec (see [File.ApplyPrices]).
	Prices map[string]model.Price

	modelLine int // line of the file's model:, 0 if none

	tools     map[string]*commandTool
	toolNames []string
	guards    map[string]*guardDef
	agents    []*agentDef
	swarms    []*swarmDef
	remotes   map[string]*remoteDef // a2a_agents, see a2a.go

	toolsets     map[string]*mcp.Toolset
	toolsetNames []string
	mcpOAuth     map[string]*oauthDef // the oauth entries of mcp_servers
	mcpMu        sync.Mutex
	mcpTools     map[string][]swarm.Tool // listed tools of connected toolsets

	// conversations: see conversation.go.
	conversations []*conversationDef
	// teams: see team.go.
	teams []*teamDef
	// workflows: see workflow.go.
	workflows []*workflowDef

	// net: the network section, shares and node (see network.go).
	net *netDef
}

// Load reads and checks the configuration file at path. Relative paths in
// the file resolve against the file's directory.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return parse(data, filepath.Dir(path), path)
}

// Parse checks a configuration held in memory. Relative paths in it resolve
// against dir ("" means the current directory). Mistakes are reported as
// [*Error]s without a file name.
func Parse(data []byte, dir string) (*File, error) {
	return parse(data, dir, "")
}

// SwarmIDs returns the ids of the file's swarms, in the order of the file.
func (f *File) SwarmIDs() []string {
	ids := make([]string, len(f.swarms))
	for i, s := range f.swarms {
		ids[i] = s.name
	}
	return ids
}

// AgentNames returns the names of the file's agents, in the order of the
// file.
func (f *File) AgentNames() []string {
	names := make([]string, len(f.agents))
	for i, a := range f.agents {
		names[i] = a.name
	}
	return names
}

// ToolNames returns the names of the file's tools, in the order of the
// file.
func (f *File) ToolNames() []string { return slices.Clone(f.toolNames) }

// Tool returns the command tool defined under name, or nil.
func (f *File) Tool(name string) swarm.Tool {
	if t, ok := f.tools[name]; ok {
		return t
	}
	return nil
}

// Register adds the file's agents (with [swarm.Runtime.RegisterAgent], so
// that Go code can hand off to them by name), swarms, conversations, teams
// and workflows (with
// [swarm.Runtime.Register]) to rt. Each call makes new values, using the
// current f.Model as the default model. Nothing is registered if a name is
// already taken in rt.
func (f *File) Register(rt *swarm.Runtime) error {
	if rt == nil {
		return errors.New("config: Register with a nil runtime")
	}
	name := f.Path
	if name == "" {
		name = "config"
	}
	taken := map[string]bool{}
	for _, a := range rt.Agents() {
		taken["agent "+a.Name] = true
	}
	for _, d := range rt.Swarms() {
		taken["swarm "+d.ID()] = true
	}
	for _, a := range f.agents {
		if taken["agent "+a.name] {
			return fmt.Errorf("%s: %w: agent %q is already registered", name, swarm.ErrDuplicate, a.name)
		}
	}
	for _, s := range f.swarms {
		if taken["swarm "+s.name] {
			return fmt.Errorf("%s: %w: swarm %q is already registered", name, swarm.ErrDuplicate, s.name)
		}
	}
	for _, c := range f.conversations {
		if taken["swarm "+c.name] {
			return fmt.Errorf("%s: %w: conversation %q is already registered", name, swarm.ErrDuplicate, c.name)
		}
	}
	for _, t := range f.teams {
		if taken["swarm "+t.name] {
			return fmt.Errorf("%s: %w: team %q is already registered", name, swarm.ErrDuplicate, t.name)
		}
	}
	for _, w := range f.workflows {
		if taken["swarm "+w.name] {
			return fmt.Errorf("%s: %w: workflow %q is already registered", name, swarm.ErrDuplicate, w.name)
		}
	}
	if err := f.openOAuth(rt.Store()); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := f.connectToolsets(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	agents, defs, err := f.build(rt.Store())
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	// The file's tools are registered too, so that customizations and
	// call-site params can name them.
	for _, n := range f.toolNames {
		if _, ok := f.tools[n]; !ok {
			continue
		}
		if err := rt.RegisterTool(f.tools[n]); err != nil && !errors.Is(err, swarm.ErrDuplicate) {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := rt.RegisterAgent(agents...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := rt.Register(defs...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := f.share(agents); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// build makes the runtime values of the file's agents and swarms, with
// memory banks in st. All agents exist before handoffs are wired and agents
// absorbed, so handoffs and absorbs may form cycles.
func (f *File) build(st store.Store) ([]*swarm.Agent, []swarm.Definition, error) {
	agents := make([]*swarm.Agent, len(f.agents))
	byName := make(map[string]*swarm.Agent, len(f.agents))
	for i, a := range f.agents {
		agents[i] = &swarm.Agent{
			Name:         a.name,
			Description:  a.description,
			Instructions: a.instructions,
			Model:        f.modelFor(a.model),
			Tools:        append(append(f.withToolsets(append(tools(a.tools), f.remoteTools(a.handoffs)...), a.toolsets), f.catalog(a.networkTools)...), memoryTools(a, st)...),
			MaxTurns:     a.maxTurns,
			Guardrails:   guardrails(a.guardrails),
			Compaction:   a.compaction,
		}
		byName[a.name] = agents[i]
	}
	for i, a := range f.agents {
		agents[i].Handoffs = handoffs(a.handoffs, byName)
	}
	x := &absorber{f: f, agents: make([]absorb.Sibling, len(agents))}
	for i, a := range f.agents {
		x.agents[i] = absorb.Sibling{Agent: agents[i], Skills: agentSkills(a.skills)}
	}
	for i, a := range f.agents {
		if err := x.into(agents[i], a.absorb); err != nil {
			return nil, nil, err
		}
	}
	defs := make([]swarm.Definition, len(f.swarms))
	for i, s := range f.swarms {
		spec := swarm.Spec{
			Instructions: s.instructions,
			Handoffs:     handoffs(s.handoffs, byName),
			Tools:        append(append(f.withToolsets(append(tools(s.tools), f.remoteTools(s.handoffs)...), s.toolsets), f.catalog(s.networkTools)...), memoryTools(&s.agentDef, st)...),
			MaxTurns:     s.maxTurns,
			Model:        f.modelFor(s.model),
			NoBuiltins:   s.noBuiltins,
			Guardrails:   guardrails(s.guardrails),
			HoldStream:   s.holdStream,
			Compaction:   s.compaction,
		}
		if s.loop != nil {
			spec.Strategy = strategy.Of(s.loop)
		}
		// A swarm's orchestrator absorbs as an agent of its name would.
		captain := &swarm.Agent{Name: s.name, Tools: spec.Tools, Handoffs: spec.Handoffs}
		if err := x.into(captain, s.absorb); err != nil {
			return nil, nil, err
		}
		spec.Tools = captain.Tools
		defs[i] = s.define(spec)
	}
	for _, c := range f.conversations {
		defs = append(defs, c.define(byName))
	}
	for _, t := range f.teams {
		defs = append(defs, t.define(byName))
	}
	jsonIn := f.jsonInput()
	for _, w := range f.workflows {
		def, err := w.define(byName, jsonIn)
		if err != nil {
			return nil, nil, err
		}
		defs = append(defs, def)
	}
	return agents, defs, nil
}

func (f *File) modelFor(spec string) string {
	if spec != "" {
		return spec
	}
	return f.Model
}

func tools(ts []*commandTool) []swarm.Tool {
	if len(ts) == 0 {
		return nil
	}
	out := make([]swarm.Tool, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}

func handoffs(refs []handoffRef, byName map[string]*swarm.Agent) []swarm.Handoff {
	if len(refs) == 0 {
		return nil
	}
	out := make([]swarm.Handoff, 0, len(refs))
	for _, h := range refs {
		var ho swarm.Handoff
		switch {
		case h.remote:
			continue // a tool: see remoteTools
		case h.swarm:
			ho = swarm.ToSwarmID(h.target)
			if h.customizable {
				ho = ho.Customizable()
			}
		default:
			ho = swarm.ToAgent(byName[h.target])
		}
		if h.description != "" {
			ho = ho.WithDescription(h.description)
		}
		out = append(out, ho)
	}
	return out
}

// define makes the swarm definition: text or JSON input, text or JSON
// result. A JSON input is validated against the input schema by the runtime
// when a run starts.
func (s *swarmDef) define(spec swarm.Spec) swarm.Definition {
	textIn, textOut := s.inSchema == nil, s.resultSchema == nil
	switch {
	case textIn && textOut:
		return swarm.Define[string, string](s.name, s.description, func(string) swarm.Spec {
			return cloneSpec(spec)
		}).WithTags(s.tags...)
	case textIn:
		return swarm.Define[string, json.RawMessage](s.name, s.description, func(string) swarm.Spec {
			return cloneSpec(spec)
		}).WithResultSchema(s.resultSchema).WithTags(s.tags...)
	case textOut:
		return swarm.Define[json.RawMessage, string](s.name, s.description, func(json.RawMessage) swarm.Spec {
			return cloneSpec(spec)
		}).WithInputSchema(s.inSchema).WithTags(s.tags...)
	default:
		return swarm.Define[json.RawMessage, json.RawMessage](s.name, s.description, func(json.RawMessage) swarm.Spec {
			return cloneSpec(spec)
		}).WithInputSchema(s.inSchema).WithResultSchema(s.resultSchema).WithTags(s.tags...)
	}
}

// cloneSpec copies a spec, so that no run shares its slices with another.
func cloneSpec(spec swarm.Spec) swarm.Spec {
	spec.Handoffs = slices.Clone(spec.Handoffs)
	spec.Tools = slices.Clone(spec.Tools)
	return spec
}

// Limits bounds the calls of every run tree (limits: in the file); a
// conversation's or a team's counts them per piece of outside work (each
// user message, mail or task: see swarm.Budget.PerWork):
//
//	limits:
//	  model_calls: 2000   # default 1000 (swarm.DefaultMaxModelCalls); -1: no limit
//	  tool_calls: 10000   # default 5000 (swarm.DefaultMaxToolCalls); -1: no limit
type Limits struct {
	// ModelCalls is swarm.Config.MaxModelCalls (0: the default).
	ModelCalls int64
	// ToolCalls is swarm.Config.MaxToolCalls (0: the default).
	ToolCalls int64
}

// ApplyLimits sets the runtime limits of cfg from the file's limits:
// section, where it sets them.
func (f *File) ApplyLimits(cfg *swarm.Config) {
	if f.Limits.ModelCalls != 0 {
		cfg.MaxModelCalls = f.Limits.ModelCalls
	}
	if f.Limits.ToolCalls != 0 {
		cfg.MaxToolCalls = f.Limits.ToolCalls
	}
}
