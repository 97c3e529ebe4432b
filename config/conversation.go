package config

import (
	"encoding/json"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/conversation"
)

// The fields of a conversation and of one of its handovers.
var (
	conversationFields = []string{"description", "queen", "agents", "handovers", "return_to_queen", "max_turns", "history", "agent_history", "name_speakers", "context", "guardrails", "compaction"}
	handoverFields     = []string{"agent", "description", "sets"}
	historyPolicies    = []string{"own_tools", "full", "text"}
)

// conversationDef is a checked conversation of the file.
type conversationDef struct {
	name, description string
	queen             string
	agents            []string
	// handovers is nil when the file gives none (the default topology).
	handovers     map[string][]conversation.Handover
	returnToQueen bool
	maxTurns      int
	history       conversation.HistoryPolicy
	agentHistory  map[string]conversation.HistoryPolicy
	nameSpeakers  bool
	context       map[string]any
	guardrails    []*guardDef
	compaction    *compact.Config
}

// ConversationIDs returns the ids of the file's conversations, in the
// order of the file.
func (f *File) ConversationIDs() []string {
	ids := make([]string, len(f.conversations))
	for i, c := range f.conversations {
		ids[i] = c.name
	}
	return ids
}

// conversations reads the conversations section. Conversations share the
// namespace of agents and swarms, and name agents of the file.
func (p *parser) conversations(top map[string]field) []*conversationDef {
	var out []*conversationDef
	for _, e := range p.entries(top, "conversations", "conversation") {
		p.checkName(e.key, "conversation", e.name, maxName)
		if line, dup := p.agentLines[e.name]; dup {
			p.errf(e.key, "conversation %s: the name is already used by the agent defined at line %d (agents, swarms and conversations share one namespace)", e.name, line)
		}
		if line, dup := p.swarmLines[e.name]; dup {
			p.errf(e.key, "conversation %s: the name is already used by the swarm defined at line %d (agents, swarms and conversations share one namespace)", e.name, line)
		}
		what := "conversation " + e.name
		fs := p.fields(e.val, what, conversationFields)
		c := &conversationDef{name: e.name}
		if fd, ok := fs["description"]; ok {
			c.description = p.str(fd.val, what, "description")
		}
		members := map[string]bool{}
		if fd, ok := fs["queen"]; !ok {
			p.errf(e.key, "%s: missing queen (the agent that answers first)", what)
		} else if c.queen = p.str(fd.val, what, "queen"); c.queen != "" && p.agentRef(fd.val, what+": queen", c.queen) {
			members[c.queen] = true
		}
		if fd, ok := fs["agents"]; ok {
			names := p.strList(fd.val, what, "agents")
			for i, name := range names {
				at := fd.val
				if len(names) == len(fd.val.Content) {
					at = deref(fd.val.Content[i])
				}
				switch {
				case members[name]:
					p.errf(at, "%s: agent %q is listed twice (the queen is a member already)", what, name)
				case p.agentRef(at, what+": agents", name):
					members[name] = true
					c.agents = append(c.agents, name)
				}
			}
		}
		if fd, ok := fs["handovers"]; ok && !isNull(fd.val) {
			c.handovers = p.handovers(fd.val, what, members)
		}
		if fd, ok := fs["return_to_queen"]; ok {
			c.returnToQueen = p.boolean(fd.val, what, "return_to_queen")
		}
		if fd, ok := fs["name_speakers"]; ok {
			c.nameSpeakers = p.boolean(fd.val, what, "name_speakers")
		}
		if fd, ok := fs["max_turns"]; ok && !isNull(fd.val) {
			v := fd.val
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&c.maxTurns) != nil || c.maxTurns < 0 {
				p.errf(v, "%s: max_turns: want a positive number, got %s", what, describe(v))
				c.maxTurns = 0
			}
		}
		if fd, ok := fs["history"]; ok {
			c.history = p.history(fd.val, what+": history")
		}
		if fd, ok := fs["agent_history"]; ok && !isNull(fd.val) {
			c.agentHistory = p.agentHistory(fd.val, what, members)
		}
		if fd, ok := fs["context"]; ok && !isNull(fd.val) {
			c.context = p.context(fd.val, what)
		}
		if fd, ok := fs["guardrails"]; ok {
			c.guardrails = p.guardrailRefs(fd.val, what)
		}
		if fd, ok := fs["compaction"]; ok {
			c.compaction = p.compaction(fd.val, what)
		}
		for _, hs := range c.handovers {
			for _, h := range hs {
				for _, f := range h.Sets {
					if _, ok := c.context[f]; !ok {
						p.errf(e.key, "%s: the handover to %s sets %q, which is not a key of the conversation's context", what, h.To, f)
					}
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// agentRef reports whether name is an agent of the file, and says so when
// it is not.
func (p *parser) agentRef(at *yaml.Node, what, name string) bool {
	if _, ok := p.agentLines[name]; ok {
		return true
	}
	p.errf(at, "%s: unknown agent %q (%s)", what, name, known(p.agentNames, "agents"))
	return false
}

// handovers reads a mapping from agent to the agents it may transfer to:
// names, or mappings with agent, description and sets.
func (p *parser) handovers(n *yaml.Node, what string, members map[string]bool) map[string][]conversation.Handover {
	out := map[string][]conversation.Handover{}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: handovers: want a mapping from agent name to the agents it may transfer to, got %s", what, describe(n))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		from := k.Value
		if k.Kind != yaml.ScalarNode || !members[from] {
			p.errf(k, "%s: handovers of %s, which is not the queen or one of the agents of the conversation", what, describe(k))
			continue
		}
		if _, dup := out[from]; dup {
			p.errf(k, "%s: handovers of %s are given twice", what, from)
			continue
		}
		out[from] = []conversation.Handover{}
		if isNull(v) {
			continue
		}
		if v.Kind != yaml.SequenceNode {
			p.errf(v, "%s: handovers of %s: want a list of agent names, got %s", what, from, describe(v))
			continue
		}
		for _, e := range v.Content {
			e = deref(e)
			var h conversation.Handover
			at := e
			switch {
			case e.Kind == yaml.ScalarNode && !isNull(e):
				h.To = e.Value
			case e.Kind == yaml.MappingNode:
				fs := p.fields(e, what+": handover", handoverFields)
				fd, ok := fs["agent"]
				if !ok {
					p.errf(e, "%s: handover: missing field \"agent\"", what)
					continue
				}
				h.To, at = p.str(fd.val, what+": handover", "agent"), fd.val
				if fd, ok := fs["description"]; ok {
					h.Description = p.str(fd.val, what+": handover", "description")
				}
				if fd, ok := fs["sets"]; ok {
					h.Sets = p.strList(fd.val, what+": handover", "sets")
				}
			default:
				p.errf(e, "%s: handovers of %s: want an agent name or a mapping with agent, description and sets, got %s", what, from, describe(e))
				continue
			}
			switch {
			case h.To == "":
			case !members[h.To]:
				p.errf(at, "%s: handover from %s to %q, which is not the queen or one of the agents of the conversation", what, from, h.To)
			case h.To == from:
				p.errf(at, "%s: handover from %s to itself", what, from)
			case slices.ContainsFunc(out[from], func(o conversation.Handover) bool { return o.To == h.To }):
				p.errf(at, "%s: handover from %s to %s is listed twice", what, from, h.To)
			default:
				out[from] = append(out[from], h)
			}
		}
	}
	return out
}

func (p *parser) history(n *yaml.Node, what string) conversation.HistoryPolicy {
	s := p.str(n, what, "")
	i := slices.Index(historyPolicies, s)
	if s != "" && i < 0 {
		p.errf(n, "%s: unknown policy %q (want one of %s)", what, s, strings.Join(historyPolicies, ", "))
	}
	return conversation.HistoryPolicy(max(i, 0))
}

func (p *parser) agentHistory(n *yaml.Node, what string, members map[string]bool) map[string]conversation.HistoryPolicy {
	out := map[string]conversation.HistoryPolicy{}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: agent_history: want a mapping from agent name to policy, got %s", what, describe(n))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || !members[k.Value] {
			p.errf(k, "%s: agent_history of %s, which is not the queen or one of the agents of the conversation", what, describe(k))
			continue
		}
		out[k.Value] = p.history(v, what+": agent_history: "+k.Value)
	}
	return out
}

func (p *parser) boolean(n *yaml.Node, what, name string) bool {
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		p.errf(n, "%s: %s: want true or false, got %s", what, name, describe(n))
	}
	return b
}

// context reads the initial context: a mapping whose values become JSON.
func (p *parser) context(n *yaml.Node, what string) map[string]any {
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: context: want a mapping from key to initial value, got %s", what, describe(n))
		return nil
	}
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		p.errf(n, "%s: context: %v", what, err)
		return nil
	}
	if _, err := json.Marshal(m); err != nil {
		p.errf(n, "%s: context cannot be represented as JSON: %v", what, err)
		return nil
	}
	return m
}

// define makes the conversation with the file's agents. Its context is a
// map[string]any.
func (c *conversationDef) define(byName map[string]*swarm.Agent) swarm.Definition {
	spec := conversation.Spec[map[string]any]{
		Queen:         byName[c.queen],
		ReturnToQueen: c.returnToQueen,
		MaxTurns:      c.maxTurns,
		History:       c.history,
		AgentHistory:  c.agentHistory,
		NameSpeakers:  c.nameSpeakers,
		Context:       c.context,
		Guardrails:    guardrails(c.guardrails),
		Compaction:    c.compaction,
	}
	for _, a := range c.agents {
		spec.Agents = append(spec.Agents, byName[a])
	}
	if c.handovers != nil {
		spec.Handovers = map[string][]conversation.Handover{}
		for from, hs := range c.handovers {
			spec.Handovers[from] = slices.Clone(hs)
		}
	}
	return conversation.Define(c.name, c.description, spec)
}
