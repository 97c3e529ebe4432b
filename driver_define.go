package swarm

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
	"github.com/swarmrt/swarm/internal/seam"
)

// Definitions of agent runs: a kind of run whose runs are each one agent
// driven by a Strategy, planned from the run's input and start values. A
// team is one: its lead's run and each teammate's (a child run started
// with StartChildren, whose values name the member) are runs of the
// team's definition, each its member's agent.

func init() {
	seam.DefineAgentRuns = func(id, description string, plan func(json.RawMessage, map[string]any) (seam.AgentRun, error), err error) any {
		return defineAgentRuns(id, description, plan, err)
	}
	seam.CheckAgentRun = checkAgentRun
}

// checkAgentRun reports what would make a run planned as ar fail: no
// agent or strategy, a bad guardrail or compaction.
func checkAgentRun(ar seam.AgentRun) error {
	a, _ := ar.Agent.(*Agent)
	if a == nil || ar.Strategy == nil {
		return fmt.Errorf("%w: an agent run needs an agent and a strategy", ErrInvalid)
	}
	_, err := resolveAgentRun(&agentPlan{name: a.Name}, a, ar.Guardrails, ar.Compaction)
	return err
}

// resolveAgentRun adds to ap, the plan of agent a, the guardrails gs (before
// a's own) and the compaction c (when a has none of its own).
func resolveAgentRun(ap *agentPlan, a *Agent, gs []guardrail.Guardrail, c *compact.Config) (*agentPlan, error) {
	for _, gs := range [][]guardrail.Guardrail{gs, a.Guardrails} {
		if err := ap.addGuards(gs); err != nil {
			return nil, err
		}
	}
	if err := ap.setCompaction(c, a.Compaction); err != nil {
		return nil, err
	}
	return ap, nil
}

// agentRuns is a definition made with strategy.DefineAgentRuns.
type agentRuns struct{ info *defInfo }

// defineAgentRuns makes a definition whose runs are agent runs planned by
// plan (see strategy.DefineAgentRuns).
func defineAgentRuns(id, description string, plan func(input json.RawMessage, values map[string]any) (seam.AgentRun, error), err error) Definition {
	if err == nil {
		if cerr := checkName(id); cerr != nil {
			err = fmt.Errorf("%w: %q: %w", ErrInvalid, id, cerr)
		}
	}
	return &agentRuns{info: &defInfo{
		id: id, description: description, err: err, textIn: true, textOut: true,
		inSchema: json.RawMessage(`{"type":["string","null"]}`), outSchema: json.RawMessage(`{"type":"string"}`),
		agentRun: plan,
		spec: func(raw json.RawMessage) (Spec, error) {
			var s *string
			if err := json.Unmarshal(raw, &s); err != nil {
				return Spec{}, fmt.Errorf("%w: %s: input must be a string or null: %w", ErrInvalidInput, id, err)
			}
			return Spec{}, nil
		},
		output: func(raw json.RawMessage) (json.RawMessage, error) { return raw, nil },
	}}
}

// ID returns the definition's id.
func (a *agentRuns) ID() string { return a.info.id }

// Description says what the definition's runs do.
func (a *agentRuns) Description() string { return a.info.description }

// InputSchema returns the schema of the input: a string or null.
func (a *agentRuns) InputSchema() json.RawMessage { return a.info.inSchema }

// ResultSchema returns the schema of the result: a string.
func (a *agentRuns) ResultSchema() json.RawMessage { return a.info.outSchema }

func (a *agentRuns) def() *defInfo { return a.info }

// planAgentRun plans a run of an agent-run definition.
func (rt *Runtime) planAgentRun(info *defInfo, input json.RawMessage, values map[string]any) (*plan, error) {
	ar, err := info.agentRun(input, values)
	a, _ := ar.Agent.(*Agent)
	if err == nil && (a == nil || ar.Strategy == nil) {
		err = fmt.Errorf("%w: an agent run needs an agent and a strategy", ErrInvalid)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", info.id, err)
	}
	data := maps.Clone(values)
	if data == nil {
		data = map[string]any{}
	}
	maps.Copy(data, ar.Data)
	p := &plan{agents: map[string]*agentPlan{}}
	ap, err := rt.planAgent(p, a.Name, false, a.Instructions, a.Model, a.Tools, a.Handoffs, ar.MaxTurns, &a.Hooks, data, info)
	if err == nil {
		ap, err = resolveAgentRun(ap, a, ar.Guardrails, ar.Compaction)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", info.id, err)
	}
	p.root = ap
	p.strategy = seamStrategy{ar.Strategy.WrapWithStrategyOf()}
	return p, nil
}
