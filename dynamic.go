package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/swarmrt/swarm/internal/seam"
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
// the last model call: last by name, names in the order offered (last is
// nil until an offer is known).
type dynamicSets struct {
	sets  []*dynamicTool
	mu    sync.Mutex
	last  map[string]Tool
	names []string
}

// offered returns the tool definitions of ap for a model call: its static
// tools and the current tools of its dynamic sets.
func (r *runner) offered(ctx context.Context, ap *agentPlan) []model.ToolDef {
	if ap.dynamic == nil {
		return ap.toolDefs
	}
	tools := ap.dynamic.resolve(ctx, ap)
	ap.dynamic.remember(tools)
	defs := append([]model.ToolDef(nil), ap.toolDefs...)
	for _, t := range tools {
		defs = append(defs, model.ToolDef{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()})
	}
	return defs
}

// resolve asks every set for its tools and keeps those whose names are
// free.
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
	return out
}

// remember keeps tools as the offer the tool calls of a response run.
func (d *dynamicSets) remember(tools []Tool) {
	last := make(map[string]Tool, len(tools))
	names := make([]string, len(tools))
	for i, t := range tools {
		last[t.Name()], names[i] = t, t.Name()
	}
	d.mu.Lock()
	d.last, d.names = last, names
	d.mu.Unlock()
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
// dynamic sets offered (resolved again when the last offer lacks it; when
// no offer is known, as for a response recorded before a crash, that
// resolution stands for the offer).
func (r *runner) toolNamed(ctx context.Context, ap *agentPlan, name string) (Tool, bool) {
	if t, ok := ap.tools[name]; ok || ap.dynamic == nil {
		return t, ok
	}
	ap.dynamic.mu.Lock()
	t, ok := ap.dynamic.last[name]
	known := ap.dynamic.last != nil
	ap.dynamic.mu.Unlock()
	if ok {
		return t, true
	}
	tools := ap.dynamic.resolve(ctx, ap)
	if !known {
		ap.dynamic.remember(tools)
	}
	for _, t := range tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// unknownTool is the error result of a call to name, which ap does not
// have: it lists the tools of the offer the call answered, the dynamic
// ones included.
func unknownTool(ap *agentPlan, name string) string {
	names := make([]string, 0, len(ap.toolDefs))
	for _, d := range ap.toolDefs {
		names = append(names, d.Name)
	}
	if ap.dynamic != nil {
		ap.dynamic.mu.Lock()
		names = append(names, ap.dynamic.names...)
		ap.dynamic.mu.Unlock()
	}
	return fmt.Sprintf("error: unknown tool %q; the available tools are: %s", name, strings.Join(names, ", "))
}

// WithCallKey returns a context in which [RunID], [StepKey] and
// [IdempotencyKey] report runID and stepKey: how a program that executes a
// tool on behalf of another process (a node of a network serving a peer's
// call) gives the tool the caller's idempotency key.
func WithCallKey(ctx context.Context, runID, stepKey string) context.Context {
	return context.WithValue(ctx, seam.CallKey{}, &callInfo{runID: runID, step: stepKey})
}
