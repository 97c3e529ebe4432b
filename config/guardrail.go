package config

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm/guardrail"
)

// guardrailFields are the fields of an entry of guardrails: a command
// tool's, plus the points it checks.
var guardrailFields = []string{"description", "command", "points", "timeout", "dir", "env"}

// guardDef is a command guardrail: the command gets the check (a JSON
// guardrail.Check) on its standard input and writes its verdict as JSON
// ({"verdict": "allow|reject|tripwire|pause", "message": "..."}) on its
// standard output. Empty output is allow; a failure (a non-zero exit, a
// timeout, output that is not a verdict) trips the run.
type guardDef struct {
	name   string
	tool   *commandTool
	points []guardrail.Point
}

// guardrail returns the runtime value of the definition.
func (g *guardDef) guardrail() guardrail.Guardrail {
	return guardrail.Guardrail{Name: g.name, Points: g.points, Check: g.check}
}

func (g *guardDef) check(ctx context.Context, c guardrail.Check) (guardrail.Verdict, error) {
	in, err := json.Marshal(c)
	if err != nil {
		return guardrail.Verdict{}, fmt.Errorf("guardrail %s: encode check: %w", g.name, err)
	}
	out, err := g.tool.Call(ctx, in)
	if err != nil {
		return guardrail.Verdict{}, err
	}
	if strings.TrimSpace(out) == "" {
		return guardrail.Verdict{Action: guardrail.Allow}, nil
	}
	var v guardrail.Verdict
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return guardrail.Verdict{}, fmt.Errorf("command %q wrote no verdict (want {\"verdict\": \"allow|reject|tripwire|pause\", \"message\": \"...\"}): %w", g.tool.argv[0], err)
	}
	return v, nil
}

func guardrails(defs []*guardDef) []guardrail.Guardrail {
	var out []guardrail.Guardrail
	for _, g := range defs {
		out = append(out, g.guardrail())
	}
	return out
}

// guardrails reads the guardrails: section.
func (p *parser) guardrails(top map[string]field, f *File) {
	p.guards = map[string]*guardDef{}
	f.guards = p.guards
	for _, e := range p.entries(top, "guardrails", "guardrail") {
		before := len(p.errs)
		td, fs := p.commandDef(e, "guardrail", guardrailFields)
		g := &guardDef{name: e.name, tool: td.tool}
		what := "guardrail " + e.name
		if fd, ok := fs["points"]; !ok || isNull(fd.val) {
			p.errf(e.key, "%s: missing points (a list of %s)", what, pointList)
		} else {
			for _, s := range p.strList(fd.val, what, "points") {
				if pt := guardrail.Point(s); pt.Valid() {
					g.points = append(g.points, pt)
				} else {
					p.errf(fd.val, "%s: unknown point %q (want %s)", what, s, pointList)
				}
			}
		}
		p.guardNames = append(p.guardNames, e.name)
		if len(p.errs) == before && g.tool != nil {
			p.guards[e.name] = g
		} else {
			p.guards[e.name] = nil
		}
	}
}

const pointList = "input, output, tool_call, tool_result, handoff, handoff_result"

// guardrailRefs reads the guardrails: list of an agent or swarm.
func (p *parser) guardrailRefs(n *yaml.Node, what string) []*guardDef {
	var out []*guardDef
	for _, name := range p.strList(n, what, "guardrails") {
		g, ok := p.guards[name]
		switch {
		case !ok:
			p.errf(n, "%s: unknown guardrail %q (%s)", what, name, known(p.guardNames, "guardrails"))
		case g != nil:
			out = append(out, g)
		}
	}
	return out
}
