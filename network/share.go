package network

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
)

// Shared is something a node shares: a tool, an agent or a swarm of its
// runtime, made with [ShareTool], [ShareAgent] or [ShareSwarm].
type Shared struct {
	cap     Capability
	tool    swarm.Tool
	agent   *swarm.Agent
	swarmID string
}

// ShareTool shares tool t under its name, with tags.
func ShareTool(t swarm.Tool, tags ...string) Shared {
	s := Shared{tool: t, cap: Capability{Kind: KindTool, Tags: slices.Clone(tags)}}
	if t != nil {
		s.cap.Name, s.cap.Description, s.cap.InputSchema = t.Name(), t.Description(), t.Schema()
	}
	return s
}

// ShareSwarm shares the swarm id of the node's runtime (registered with it
// by the time the node starts), with tags (default: the swarm's own). A
// call is a run of the swarm on the providing node; its input is the
// swarm's input (a text swarm takes {"request": "..."}).
func ShareSwarm(id string, tags ...string) Shared {
	return Shared{swarmID: id, cap: Capability{Name: id, Kind: KindSwarm, Tags: slices.Clone(tags)}}
}

// ShareAgent shares agent a, with tags: the node registers a text swarm
// named after the agent whose orchestrator is the agent (its instructions,
// model, tools, handoffs and max turns), so that a call is a durable run
// and the agent is an A2A agent of the node like any swarm.
func ShareAgent(a *swarm.Agent, tags ...string) Shared {
	s := Shared{agent: a, cap: Capability{Kind: KindAgent, Tags: slices.Clone(tags)}}
	if a != nil {
		s.cap.Name, s.cap.Description = a.Name, a.Description
	}
	return s
}

// WithVersion sets the capability's version.
func (s Shared) WithVersion(v string) Shared { s.cap.Version = v; return s }

// WithDescription replaces the capability's description.
func (s Shared) WithDescription(d string) Shared { s.cap.Description = d; return s }

// Capability returns the capability as peers will see it (a swarm's
// description and schemas are filled in when the node starts).
func (s Shared) Capability() Capability { return s.cap.clone() }

type sharedItem struct {
	Shared
	// text: the swarm takes text, offered as {"request": string}.
	text bool
}

var requestSchema = json.RawMessage(`{"type":"object","properties":{"request":{"type":"string","description":"The task, with all the context it needs."}},"required":["request"]}`)

// Share adds items to what the node shares. It checks them all and
// changes nothing on error: names must be valid tool names, unique among
// the node's shared items. Sharing after Start pushes the change to the
// peers' feeds.
func (n *Node) Share(items ...Shared) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	seen := map[string]bool{}
	for _, it := range items {
		switch {
		case it.tool == nil && it.agent == nil && it.swarmID == "":
			return fmt.Errorf("%w: a shared item needs a tool, an agent or a swarm", ErrInvalid)
		case it.cap.Kind == KindTool && it.tool == nil, it.cap.Kind == KindAgent && it.agent == nil:
			return fmt.Errorf("%w: shared %s %q is nil", ErrInvalid, it.cap.Kind, it.cap.Name)
		}
		c := it.cap
		if c.Kind == KindAgent || c.Kind == KindSwarm {
			c.InputSchema = nil // checked at bind
		}
		if err := c.Validate(); err != nil {
			return err
		}
		if _, dup := n.shared[c.Name]; dup || seen[c.Name] {
			return fmt.Errorf("%w: capability %q is shared twice", ErrInvalid, c.Name)
		}
		seen[c.Name] = true
	}
	for _, it := range items {
		si := &sharedItem{Shared: it}
		if n.running {
			if err := si.bind(n.rt); err != nil {
				return err
			}
		}
		n.shared[it.cap.Name] = si
		n.order = append(n.order, it.cap.Name)
	}
	if n.running {
		n.bumpLocked()
	}
	return nil
}

// bind resolves a shared swarm or agent against the runtime.
func (si *sharedItem) bind(rt *swarm.Runtime) error {
	if si.cap.Kind == KindTool {
		return nil
	}
	if rt == nil {
		return fmt.Errorf("%w: shared %s %s needs the node to start with a runtime", ErrInvalid, si.cap.Kind, si.cap.Name)
	}
	if si.agent != nil {
		a := si.agent
		id := a.Name
		found := false
		for _, d := range rt.Swarms() {
			if d.ID() == id {
				found = true
			}
		}
		if !found {
			def := swarm.Define[string, string](id, a.Description, func(string) swarm.Spec {
				return swarm.Spec{Instructions: a.Instructions, Model: a.Model, Tools: a.Tools, Handoffs: a.Handoffs, MaxTurns: a.MaxTurns, Hooks: a.Hooks}
			}).WithTags(si.cap.Tags...)
			if err := rt.Register(def); err != nil {
				return fmt.Errorf("share agent %s: %w", id, err)
			}
		}
		si.swarmID = id
	}
	for _, d := range rt.Swarms() {
		if d.ID() != si.swarmID {
			continue
		}
		if si.cap.Description == "" {
			si.cap.Description = d.Description()
		}
		if len(si.cap.Tags) == 0 {
			if t, ok := d.(interface{ Tags() []string }); ok {
				si.cap.Tags = slices.Clone(t.Tags())
			}
		}
		in := d.InputSchema()
		si.text = isText(in)
		if si.text {
			si.cap.InputSchema = requestSchema
		} else {
			si.cap.InputSchema = in
		}
		si.cap.OutputSchema = d.ResultSchema()
		if isText(si.cap.OutputSchema) {
			si.cap.OutputSchema = nil
		}
		return si.cap.Validate()
	}
	return fmt.Errorf("%w: shared swarm %q is not registered with the runtime", ErrInvalid, si.swarmID)
}

func isText(schema json.RawMessage) bool {
	var s struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(schema, &s) == nil && s.Type == "string"
}

// Shared returns the capabilities the node shares, in the order shared.
func (n *Node) Shared() []Capability {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Capability, 0, len(n.order))
	for _, name := range n.order {
		out = append(out, n.shared[name].cap.clone())
	}
	return out
}

// hello is the node's hello as the caller in ctx may see it (nil ctx:
// everything).
func (n *Node) hello(ctx context.Context) Hello {
	caps := n.Shared()
	if ctx != nil {
		caps = slices.DeleteFunc(caps, func(c Capability) bool { return !auth.CapabilityAllowed(ctx, c.Name) })
	}
	n.mu.Lock()
	gen := n.gen
	n.mu.Unlock()
	return Hello{Type: "hello", Node: n.Info(), Generation: gen, Capabilities: caps, Peers: n.peerURLs()}
}
