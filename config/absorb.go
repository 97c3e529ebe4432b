package config

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/absorb"
)

var skillFields = []string{"description", "instructions", "tools", "input"}

// skillDef is a skill of an agent of the file.
type skillDef struct {
	name, description, instructions string
	tools                           []string
	input                           json.RawMessage // nil: text
}

// absorbDef is an agent's absorb: "all" or a list of names.
type absorbDef struct {
	all   bool
	names []string
	line  int
}

// skills reads an agent's skills: a mapping from skill name to its fields.
func (p *parser) skills(n *yaml.Node, what string) []skillDef {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: skills: want a mapping from skill names to skills, got %s", what, describe(n))
		return nil
	}
	var out []skillDef
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		sk := skillDef{name: k.Value}
		sw := what + ": skill " + sk.name
		if !p.checkName(k, "skill", sk.name, maxName) {
			continue
		}
		fs := p.fields(v, sw, skillFields)
		if fd, ok := fs["description"]; ok {
			sk.description = p.str(fd.val, sw, "description")
		}
		if fd, ok := fs["instructions"]; ok {
			sk.instructions = p.str(fd.val, sw, "instructions")
		}
		if fd, ok := fs["tools"]; ok {
			sk.tools = p.strList(fd.val, sw, "tools")
		}
		if fd, ok := fs["input"]; ok {
			sk.input = p.input(fd, sw)
		}
		out = append(out, sk)
	}
	return out
}

// absorb reads an agent's absorb: "all", or a list of the names of other
// agents of the file or of agents provided to the program (absorb.Provide),
// the latter by agent name or provider id. self is the name of the agent
// or swarm that absorbs.
func (p *parser) absorb(n *yaml.Node, what, self string) absorbDef {
	n = deref(n)
	ab := absorbDef{line: n.Line}
	switch {
	case isNull(n):
	case n.Kind == yaml.ScalarNode && n.Value == "all":
		ab.all = true
	case n.Kind == yaml.SequenceNode:
		ab.names = p.strList(n, what, "absorb")
		for _, name := range ab.names {
			_, inFile := p.agentLines[name]
			provided := providersNamed(name)
			_, remote := p.remotes[name]
			_, server := p.toolsets[name]
			switch {
			case name == self:
				p.errf(n, "%s: absorb: an agent cannot absorb itself", what)
			case len(provided) > 1:
				p.errf(n, "%s: absorb: %q names %d provided agents (%s); name the one to absorb by its provider id", what, name, len(provided), strings.Join(providerIDs(provided), ", "))
			case len(provided) == 1 && provided[0].Name() == self:
				p.errf(n, "%s: absorb: %q provides an agent named %q, the name of this one: an agent cannot absorb an agent of its own name", what, name, self)
			case (inFile || remote) && (len(provided) > 0 || server):
				p.errf(n, "%s: absorb: %q names two agents: one of this file and a provided agent or an MCP server", what, name)
			case !inFile && len(provided) == 0 && !remote && !server:
				p.errf(n, "%s: absorb: unknown agent %q (agents of this file: %v; provided agents: %v; a2a_agents and mcp_servers may be named too)", what, name, p.agentNames, providerIDs(absorb.Providers()))
			}
		}
	default:
		p.errf(n, "%s: absorb: want \"all\" or a list of agent names, got %s", what, describe(n))
	}
	if ab.all {
		ps, err := allProvided(self)
		if err != nil {
			p.errf(n, "%s: absorb: all: %v", what, err)
		}
		for _, pr := range ps {
			if _, inFile := p.agentLines[pr.Name()]; inFile {
				p.errf(n, "%s: absorb: all: the agent %q of this file has the name of an agent provided to the program (%s)", what, pr.Name(), pr.ID)
			}
		}
	}
	return ab
}

// providersNamed returns the providers of the agents provided under name:
// the one whose provider id it is, or every one whose agent it names.
func providersNamed(name string) []absorb.Provider {
	var out []absorb.Provider
	for _, p := range absorb.Providers() {
		if p.ID == name {
			return []absorb.Provider{p}
		}
		if p.Name() == name {
			out = append(out, p)
		}
	}
	return out
}

// allProvided returns the providers absorb: all takes for the agent named
// self: all but those of agents named self. Two of them whose agents share
// a name cannot both be absorbed (their tools would have one name); that
// is an error naming both.
func allProvided(self string) ([]absorb.Provider, error) {
	var out []absorb.Provider
	byName := map[string]string{}
	for _, p := range absorb.Providers() {
		if p.Name() == self {
			continue
		}
		if id, dup := byName[p.Name()]; dup {
			return nil, fmt.Errorf("%w: the provided agents %s and %s are both named %q; list the agents to absorb, naming that one by its provider id", swarm.ErrDuplicate, id, p.ID, p.Name())
		}
		byName[p.Name()] = p.ID
		out = append(out, p)
	}
	return out, nil
}

func providerIDs(ps []absorb.Provider) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

// absorber absorbs, for the agents and swarms of a file, the agents they
// name: the file's agents by value, provided agents built anew, once per
// Register and provider.
type absorber struct {
	f        *File
	agents   []absorb.Sibling
	provided map[string]absorb.Sibling // by provider id
}

// into makes captain absorb what ab names; line is where ab is.
func (x *absorber) into(captain *swarm.Agent, ab absorbDef) error {
	if !ab.all && len(ab.names) == 0 {
		return nil
	}
	fail := func(err error) error { return fmt.Errorf("%s (line %d): %w", captain.Name, ab.line, err) }
	var siblings []absorb.Sibling
	for _, b := range x.agents {
		if b.Name != captain.Name && (ab.all || slices.Contains(ab.names, b.Name)) {
			siblings = append(siblings, b)
		}
	}
	var ps []absorb.Provider
	if ab.all {
		var err error
		if ps, err = allProvided(captain.Name); err != nil {
			return fail(err)
		}
	}
	for _, n := range ab.names {
		named := providersNamed(n)
		if len(named) > 1 {
			return fail(fmt.Errorf("%w: %q names the provided agents %s; name one by its provider id", swarm.ErrDuplicate, n, strings.Join(providerIDs(named), ", ")))
		}
		for _, p := range named {
			if !slices.ContainsFunc(ps, func(q absorb.Provider) bool { return q.ID == p.ID }) {
				ps = append(ps, p)
			}
		}
	}
	for _, p := range ps {
		a, ok := x.provided[p.ID]
		if !ok {
			var err error
			if a, err = p.Sibling(); err != nil {
				return err
			}
			if x.provided == nil {
				x.provided = map[string]absorb.Sibling{}
			}
			x.provided[p.ID] = a
		}
		siblings = append(siblings, a)
	}
	for _, n := range ab.names {
		sib, err := x.f.remoteSibling(n)
		if err != nil {
			return fail(err)
		}
		if sib.Agent != nil {
			siblings = append(siblings, sib)
		}
	}
	if err := absorb.Into(captain, siblings...); err != nil {
		return fail(err)
	}
	return nil
}

// remoteSibling returns the agent of another process named name: an entry
// of a2a_agents or of mcp_servers (connected by Register); nil for other
// names.
func (f *File) remoteSibling(name string) (absorb.Sibling, error) {
	if r := f.remotes[name]; r != nil {
		return a2a.Sibling(r.name, r.description, r.url, r.options()...)
	}
	if ts := f.toolsets[name]; ts != nil {
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		defer cancel()
		return ts.Sibling(ctx, name, "")
	}
	return absorb.Sibling{}, nil
}

// agentSkills makes the skills of an agent of the file.
func agentSkills(defs []skillDef) []absorb.Skill {
	if len(defs) == 0 {
		return nil
	}
	out := make([]absorb.Skill, len(defs))
	for i, d := range defs {
		out[i] = absorb.Skill{Name: d.name, Description: d.description, Instructions: d.instructions, Tools: d.tools, Input: absorb.InputSchema(d.input)}
	}
	return out
}

// AgentInfo describes an agent of a file for listings.
type AgentInfo struct {
	// Name and Description are the agent's.
	Name, Description string
	// Skills are the agent's skills.
	Skills []absorb.Skill
	// Absorbs names the agents it absorbs ("all" for all).
	Absorbs []string
}

// Agents describes the file's agents, in the order of the file.
func (f *File) Agents() []AgentInfo {
	out := make([]AgentInfo, len(f.agents))
	for i, a := range f.agents {
		out[i] = AgentInfo{Name: a.name, Description: a.description, Skills: agentSkills(a.skills), Absorbs: slices.Clone(a.absorb.names)}
		if a.absorb.all {
			out[i].Absorbs = []string{"all"}
		}
	}
	return out
}
