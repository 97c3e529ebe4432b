package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/swarmrt/swarm/model"
)

// Toolset is a set of tools that changes while a program runs, such as the
// tools that peers of a network share (see package network). An agent
// offers it through [DynamicTools]: it is resolved at every model call of
// the agent, so tools that appeared since the last call are offered and
// those that disappeared are not.
type Toolset interface {
	// Tools returns the tools offered now. An error leaves the set out of
	// this model call (the agent's other tools are still offered).
	Tools(ctx context.Context) ([]Tool, error)
}

// DynamicTools makes ts an entry of an agent's (or a swarm's) Tools: not a
// tool itself, but the tools ts returns at each model call. name labels the
// set in errors. A dynamic tool whose name is already a tool of the agent
// (a static one, or one of an earlier set) is left out. A tool call runs
// the tool offered at the model call that asked for it; when that offer is
// not known (a run recovered after a crash replays a recorded response),
// the set is resolved again, and a tool no longer there is an unknown tool
// to the model.
func DynamicTools(name string, ts Toolset) Tool { return &dynamicTool{name: name, ts: ts} }

type dynamicTool struct {
	name string
	ts   Toolset
}

func (d *dynamicTool) Name() string            { return d.name }
func (d *dynamicTool) Description() string     { return "dynamic tool set " + d.name }
func (d *dynamicTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (d *dynamicTool) Call(context.Context, json.RawMessage) (string, error) {
	return "", errors.New("a dynamic tool set is not a tool")
}
func (d *dynamicTool) Err() error {
	if d.ts == nil {
		return fmt.Errorf("dynamic tool set %s has a nil Toolset", d.name)
	}
	return nil
}

// dynamicSets is an agent plan's dynamic tool sets and what they offered at
// the last model call.
type dynamicSets struct {
	sets []*dynamicTool
	mu   sync.Mutex
	last map[string]Tool
}

// offered returns the tool definitions of ap for a model call: its static
// tools and the current tools of its dynamic sets.
func (r *runner) offered(ctx context.Context, ap *agentPlan) []model.ToolDef {
	if ap.dynamic == nil {
		return ap.toolDefs
	}
	tools := ap.dynamic.resolve(ctx, ap)
	defs := append([]model.ToolDef(nil), ap.toolDefs...)
	for _, t := range tools {
		defs = append(defs, model.ToolDef{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()})
	}
	return defs
}

// resolve asks every set for its tools, keeps those whose names are free,
// and remembers them for the tool calls of the response.
func (d *dynamicSets) resolve(ctx context.Context, ap *agentPlan) []Tool {
	var out []Tool
	seen := map[string]bool{}
	for _, s := range d.sets {
		ts, err := s.ts.Tools(ctx)
		if err != nil {
			continue
		}
		for _, t := range ts {
			if toolErr(t) != nil {
				continue
			}
			n := t.Name()
			if checkName(n) != nil || seen[n] || ap.tools[n] != nil || ap.handoffs[n] != "" || ap.children[n] != nil || reservedTool(n) {
				continue
			}
			seen[n] = true
			out = append(out, t)
		}
	}
	last := make(map[string]Tool, len(out))
	for _, t := range out {
		last[t.Name()] = t
	}
	d.mu.Lock()
	d.last = last
	d.mu.Unlock()
	return out
}

// reservedTool reports whether n names a built-in tool or a handoff.
func reservedTool(n string) bool {
	switch n {
	case toolComplete, toolPause, toolFail, toolRegistrySearch, toolRegistryHandoff:
		return true
	}
	return strings.HasPrefix(n, handoffPre)
}

// toolNamed returns ap's tool called name: a static one, or one its
// dynamic sets offered (resolved again when the last offer lacks it).
func (r *runner) toolNamed(ctx context.Context, ap *agentPlan, name string) (Tool, bool) {
	if t, ok := ap.tools[name]; ok || ap.dynamic == nil {
		return t, ok
	}
	ap.dynamic.mu.Lock()
	t, ok := ap.dynamic.last[name]
	ap.dynamic.mu.Unlock()
	if ok {
		return t, true
	}
	for _, t := range ap.dynamic.resolve(ctx, ap) {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// WithCallKey returns a context in which [RunID], [StepKey] and
// [IdempotencyKey] report runID and stepKey: how a program that executes a
// tool on behalf of another process (a node of a network serving a peer's
// call) gives the tool the caller's idempotency key.
func WithCallKey(ctx context.Context, runID, stepKey string) context.Context {
	return context.WithValue(ctx, ctxKey{}, &callInfo{runID: runID, step: stepKey})
}
