package swarm

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/guardrail"
)

// Definitions of agent runs: a kind of run whose runs are each one agent
// driven by a Strategy, planned from the run's input and start values. A
// team is one: its lead's run and each teammate's (a child run started
// with StartChildren, whose values name the member) are runs of the
// team's definition, each its member's agent.

// AgentRun is the plan of one run of a definition made with
// [DefineAgentRuns].
type AgentRun struct {
	// Agent is the run's agent: its name names the run's steps in the
	// journal and its usage, and its instructions (a text/template
	// rendered with the run's start values and Data), model, tools,
	// handoffs, hooks, guardrails and compaction are the run's. It is not
	// offered the built-in tools complete, pause and fail.
	Agent *Agent
	// Data is added to the template data of the agent's instructions.
	Data map[string]any
	// MaxTurns bounds the agent's model calls per round of its strategy
	// (DefaultMaxTurns if zero).
	MaxTurns int
	// Guardrails check the run's steps before the agent's own.
	Guardrails []guardrail.Guardrail
	// Compaction is the run's when the agent has none of its own.
	Compaction *compact.Config
	// Strategy drives the run.
	Strategy Strategy
}

// Check reports what would make a run planned as ar fail: no agent or
// strategy, a bad guardrail or compaction. A definition checks its
// AgentRuns with it when it is made, to report mistakes on registration.
func (ar AgentRun) Check() error {
	if ar.Agent == nil || ar.Strategy == nil {
		return fmt.Errorf("%w: an agent run needs an agent and a strategy", ErrInvalid)
	}
	_, err := ar.resolve(&agentPlan{name: ar.Agent.Name})
	return err
}

// resolve adds ar's guardrails and compaction to ap.
func (ar AgentRun) resolve(ap *agentPlan) (*agentPlan, error) {
	for _, gs := range [][]guardrail.Guardrail{ar.Guardrails, ar.Agent.Guardrails} {
		if err := ap.addGuards(gs); err != nil {
			return nil, err
		}
	}
	if err := ap.setCompaction(ar.Compaction, ar.Agent.Compaction); err != nil {
		return nil, err
	}
	return ap, nil
}

// agentRuns is a definition made with DefineAgentRuns.
type agentRuns struct{ info *defInfo }

// DefineAgentRuns makes a definition whose runs are agent runs planned by
// plan from the run's input and start values (see [AgentRun]). Its input
// is a JSON string or null and its result a string. err, when not nil, is
// what registering the definition reports (a mistake its maker found).
func DefineAgentRuns(id, description string, plan func(input json.RawMessage, values map[string]any) (AgentRun, error), err error) Definition {
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
	if err == nil && (ar.Agent == nil || ar.Strategy == nil) {
		err = fmt.Errorf("%w: an agent run needs an agent and a strategy", ErrInvalid)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", info.id, err)
	}
	a := ar.Agent
	data := maps.Clone(values)
	if data == nil {
		data = map[string]any{}
	}
	maps.Copy(data, ar.Data)
	p := &plan{agents: map[string]*agentPlan{}}
	ap, err := rt.planAgent(p, a.Name, false, a.Instructions, a.Model, a.Tools, a.Handoffs, ar.MaxTurns, &a.Hooks, data, info)
	if err == nil {
		ap, err = ar.resolve(ap)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", info.id, err)
	}
	p.root = ap
	p.strategy = seamStrategy{ar.Strategy}
	return p, nil
}
