package config

import (
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/team"
)

// The fields of a team and of one of its declared members.
var (
	teamFields   = []string{"description", "lead", "members", "teammate", "autonomous", "request_timeout", "max_wakes", "max_turns", "max_members", "compaction", "guardrails"}
	memberFields = []string{"role", "prompt", "agent", "plan_approval"}
)

// teamDef is a checked team of the file.
type teamDef struct {
	name, description string
	lead              string
	members           []memberDef
	teammate          string // the agent spawned teammates are made of
	autonomous        bool
	timeout           time.Duration
	maxWakes          int
	maxTurns          int
	maxMembers        int
	compaction        *compact.Config
	guardrails        []*guardDef
}

// memberDef is a declared teammate.
type memberDef struct {
	name, role, prompt, agent string
	planApproval              bool
}

// TeamIDs returns the ids of the file's teams, in the order of the file.
func (f *File) TeamIDs() []string {
	ids := make([]string, len(f.teams))
	for i, t := range f.teams {
		ids[i] = t.name
	}
	return ids
}

// teams reads the teams section. Teams share the namespace of agents,
// swarms and conversations, and name agents of the file.
func (p *parser) teams(top map[string]field, conversations []*conversationDef) []*teamDef {
	var out []*teamDef
	for _, e := range p.entries(top, "teams", "team") {
		p.checkName(e.key, "team", e.name, maxName)
		if line, dup := p.agentLines[e.name]; dup {
			p.errf(e.key, "team %s: the name is already used by the agent defined at line %d (agents, swarms, conversations and teams share one namespace)", e.name, line)
		}
		if line, dup := p.swarmLines[e.name]; dup {
			p.errf(e.key, "team %s: the name is already used by the swarm defined at line %d (agents, swarms, conversations and teams share one namespace)", e.name, line)
		}
		for _, c := range conversations {
			if c.name == e.name {
				p.errf(e.key, "team %s: the name is already used by a conversation (agents, swarms, conversations and teams share one namespace)", e.name)
			}
		}
		what := "team " + e.name
		fs := p.fields(e.val, what, teamFields)
		t := &teamDef{name: e.name}
		if fd, ok := fs["description"]; ok {
			t.description = p.str(fd.val, what, "description")
		}
		if fd, ok := fs["lead"]; !ok {
			p.errf(e.key, "%s: missing lead (the agent that leads the team and talks with the user)", what)
		} else if t.lead = p.str(fd.val, what, "lead"); t.lead != "" {
			p.agentRef(fd.val, what+": lead", t.lead)
		}
		if fd, ok := fs["teammate"]; ok && !isNull(fd.val) {
			if t.teammate = p.str(fd.val, what, "teammate"); t.teammate != "" {
				p.agentRef(fd.val, what+": teammate", t.teammate)
			}
		}
		if fd, ok := fs["members"]; ok && !isNull(fd.val) {
			t.members = p.members(fd.val, what, t.lead)
		}
		if fd, ok := fs["autonomous"]; ok {
			t.autonomous = p.boolean(fd.val, what, "autonomous")
		}
		if fd, ok := fs["request_timeout"]; ok && !isNull(fd.val) {
			s := p.str(fd.val, what, "request_timeout")
			if d, err := time.ParseDuration(s); err != nil || d <= 0 {
				p.errf(fd.val, "%s: invalid request_timeout %q: want a positive duration such as 10m", what, s)
			} else {
				t.timeout = d
			}
		}
		p.whole(fs, what, "max_wakes", 1, &t.maxWakes)
		p.whole(fs, what, "max_turns", 1, &t.maxTurns)
		p.whole(fs, what, "max_members", 1, &t.maxMembers)
		if fd, ok := fs["compaction"]; ok {
			t.compaction = p.compaction(fd.val, what)
		}
		if fd, ok := fs["guardrails"]; ok {
			t.guardrails = p.guardrailRefs(fd.val, what)
		}
		out = append(out, t)
	}
	return out
}

// members reads a team's declared teammates: a mapping from name to role,
// prompt, agent and plan_approval.
func (p *parser) members(n *yaml.Node, what, lead string) []memberDef {
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: members: want a mapping from teammate name to its role and prompt, got %s", what, describe(n))
		return nil
	}
	var out []memberDef
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		m := memberDef{name: k.Value}
		mw := what + ": member " + m.name
		switch {
		case k.Kind != yaml.ScalarNode || team.CheckMemberName(m.name) != nil:
			p.errf(k, "%s: member name %s: want 1 to 32 letters, digits, '_' or '-'", what, describe(k))
			continue
		case m.name == lead:
			p.errf(k, "%s: member %s has the name of the lead", what, m.name)
			continue
		case seen[m.name]:
			p.errf(k, "%s: member %s is listed twice", what, m.name)
			continue
		}
		seen[m.name] = true
		fs := p.fields(v, mw, memberFields)
		if fd, ok := fs["role"]; ok {
			m.role = p.str(fd.val, mw, "role")
		}
		if fd, ok := fs["prompt"]; ok {
			m.prompt = p.str(fd.val, mw, "prompt")
		}
		if fd, ok := fs["agent"]; ok && !isNull(fd.val) {
			if m.agent = p.str(fd.val, mw, "agent"); m.agent != "" {
				p.agentRef(fd.val, mw+": agent", m.agent)
			}
		}
		if fd, ok := fs["plan_approval"]; ok {
			m.planApproval = p.boolean(fd.val, mw, "plan_approval")
		}
		out = append(out, m)
	}
	return out
}

// define makes the team's definition from the file's agents.
func (t *teamDef) define(byName map[string]*swarm.Agent) *team.Team {
	spec := team.TeamSpec{Lead: byName[t.lead], Autonomous: t.autonomous, RequestTimeout: t.timeout,
		MaxWakes: t.maxWakes, MaxTurns: t.maxTurns, MaxMembers: t.maxMembers, Compaction: t.compaction,
		Guardrails: guardrails(t.guardrails)}
	if a := byName[t.teammate]; a != nil {
		spec.Template = teammateOf(a)
	}
	for _, m := range t.members {
		tm := team.Teammate{}
		if a := byName[m.agent]; a != nil {
			tm = teammateOf(a)
		} else {
			tm = spec.Template
		}
		tm.Name, tm.Role, tm.Prompt = m.name, m.role, m.prompt
		tm.PlanApproval = tm.PlanApproval || m.planApproval
		spec.Members = append(spec.Members, tm)
	}
	return team.DefineTeam(t.name, t.description, spec)
}

// teammateOf is a teammate made of agent a: its instructions, model,
// tools, compaction and guardrails.
func teammateOf(a *swarm.Agent) team.Teammate {
	return team.Teammate{Instructions: a.Instructions, Model: a.Model, Tools: a.Tools, Compaction: a.Compaction, Guardrails: a.Guardrails}
}
