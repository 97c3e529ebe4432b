package absorb

import (
	"fmt"
	"slices"

	"github.com/swarmrt/swarm"
)

// Captain defines a text swarm, with a's name as its id and description,
// whose orchestrator is a: its instructions, model, tools (the siblings it
// absorbed included), handoffs, max turns and hooks. It is how a program
// whose agent is the captain runs it.
// Registering it fails (wrapping [swarm.ErrDuplicate]) if an agent below a
// absorbs or hands off to an agent of a's name: the captain cannot run
// below itself.
func Captain(a *swarm.Agent) *swarm.Swarm[string, string] {
	if a == nil {
		return swarm.Define[string, string]("", "", nil).WithError(fmt.Errorf("captain: nil agent"))
	}
	s := swarm.Define[string, string](a.Name, a.Description, func(string) swarm.Spec {
		return swarm.Spec{
			Instructions: a.Instructions,
			Model:        a.Model,
			Tools:        slices.Clone(a.Tools),
			Handoffs:     slices.Clone(a.Handoffs),
			MaxTurns:     a.MaxTurns,
			Hooks:        a.Hooks,
		}
	})
	if err := reachesBack(a); err != nil {
		s = s.WithError(fmt.Errorf("swarm %s: %w", a.Name, err))
	}
	return s
}

// reachesBack reports an agent that captain a absorbs or hands off to,
// directly or not, and that absorbs or hands off to an agent of a's name:
// a swarm led by a cannot run a below itself, so its plan would fail at
// every start. Siblings absorbed later are found when the swarm starts.
func reachesBack(a *swarm.Agent) error {
	seen := map[*swarm.Agent]bool{a: true}
	next := []*swarm.Agent{a}
	for len(next) > 0 {
		from := next[0]
		next = next[1:]
		var targets []*swarm.Agent
		verb := map[*swarm.Agent]string{}
		for _, t := range from.Tools {
			if _, remote := t.(*remoteTool); !remote {
				if to := siblingOf(t); to != nil {
					targets = append(targets, to)
					verb[to] = "absorbs"
				}
			}
		}
		for _, h := range from.Handoffs {
			if to := h.Agent(); to != nil {
				targets = append(targets, to)
				if _, ok := verb[to]; !ok {
					verb[to] = "hands off to"
				}
			}
		}
		for _, to := range targets {
			if to.Name == a.Name && from != a {
				return fmt.Errorf("%w: %s %s %q, the captain's name: the captain cannot run below itself", swarm.ErrDuplicate, from.Name, verb[to], to.Name)
			}
			if !seen[to] {
				seen[to] = true
				next = append(next, to)
			}
		}
	}
	return nil
}
