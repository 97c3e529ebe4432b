package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/registry"
)

// The registry tools of orchestrators whose spec grants registry access.
const (
	toolRegistrySearch  = "swarm_registry_search"
	toolRegistryHandoff = "swarm_registry_handoff"
)

// RegistryAccess lets a swarm's orchestrator discover registered swarms and
// hand off to them at run time: it gets the tools swarm_registry_search
// (ranked keyword search over ids, descriptions, capabilities and tags) and
// swarm_registry_handoff (start a found swarm as a child run). A handoff is
// only allowed to a swarm that a search in the same run returned.
type RegistryAccess struct {
	// Allow restricts what the swarm can find: swarm ids, or "tag:NAME"
	// for every swarm with that tag. Empty allows every registered swarm
	// except the swarm itself.
	Allow []string
}

func (a *RegistryAccess) allows(e registry.Entry, self string) bool {
	if e.ID == self || e.Kind != registry.KindSwarm {
		return false
	}
	if len(a.Allow) == 0 {
		return true
	}
	for _, al := range a.Allow {
		if tag, ok := strings.CutPrefix(al, "tag:"); ok {
			if slices.Contains(e.Tags, tag) {
				return true
			}
		} else if al == e.ID {
			return true
		}
	}
	return false
}

// Registry returns the catalogue of registered swarms and agents: their
// descriptions, schemas, capabilities (from their handoffs and tools), tags
// and whether they are customizable.
func (rt *Runtime) Registry() *registry.Registry {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.catalog
}

// MarkCustomizable lists swarm id as customizable in the registry: a
// registry handoff to it accepts a customization.
func (s *Swarm[In, Out]) MarkCustomizable() *Swarm[In, Out] {
	s.customizable = true
	return s
}

// entryOf describes a swarm for the registry. Its capabilities come from
// the spec it has for an empty input, when it can make one.
func (rt *Runtime) entryOf(d Definition, info *defInfo) registry.Entry {
	e := registry.Entry{ID: info.id, Kind: registry.KindSwarm, Description: info.description,
		InputSchema: info.inSchema, ResultSchema: info.outSchema, Customizable: info.customizable}
	if t, ok := d.(interface{ Tags() []string }); ok {
		e.Tags = slices.Clone(t.Tags())
	}
	if spec, ok := emptySpec(info); ok {
		e.Capabilities = registry.Capabilities(handoffIDs(spec.Handoffs), toolNamesOf(spec.Tools))
	}
	return e
}

func emptySpec(info *defInfo) (spec Spec, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	for _, in := range []string{`""`, `{}`, `null`} {
		if s, err := info.spec(json.RawMessage(in)); err == nil {
			return s, true
		}
	}
	return Spec{}, false
}

func agentEntry(a *Agent) registry.Entry {
	return registry.Entry{ID: a.Name, Kind: registry.KindAgent, Description: a.Description,
		Capabilities: registry.Capabilities(handoffIDs(a.Handoffs), toolNamesOf(a.Tools))}
}

func handoffIDs(hs []Handoff) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		if h.id != "" {
			out = append(out, h.id)
		}
	}
	return out
}

func toolNamesOf(ts []Tool) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		if t != nil {
			out = append(out, t.Name())
		}
	}
	return out
}

var (
	registrySearchParams  = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What you need done, in a few words."},"capabilities":{"type":"array","items":{"type":"string"},"description":"Capabilities every result must have (optional)."}},"required":["query"]}`)
	registryHandoffParams = json.RawMessage(`{"type":"object","properties":{"swarm_id":{"type":"string","description":"The id of a swarm returned by swarm_registry_search."},"request":{"type":"string","description":"The task, with all the context it needs; for a swarm with a structured input, its input as JSON."},"customization":` + string(customizationSchema) + `},"required":["swarm_id","request"]}`)
)

// registrySearch runs swarm_registry_search and returns its JSON output.
func (r *runner) registrySearch(ctx context.Context, ap *agentPlan, args json.RawMessage) (string, error) {
	var a struct {
		Query        string   `json:"query"`
		Capabilities []string `json:"capabilities"`
	}
	if err := json.Unmarshal(orEmpty(args), &a); err != nil {
		return "", fmt.Errorf("swarm_registry_search needs an object with a query: %w", err)
	}
	hits, err := r.rt.Registry().Search(ctx, a.Query, registry.SearchOptions{
		Capabilities: a.Capabilities, Kind: registry.KindSwarm, Limit: 5,
		Allow: func(id string) bool {
			e, ok := r.rt.Registry().Get(id)
			return ok && ap.registry.allows(e, r.info.id)
		},
	})
	if err != nil {
		return "", err
	}
	type found struct {
		ID           string          `json:"id"`
		Description  string          `json:"description"`
		Capabilities []string        `json:"capabilities,omitempty"`
		Tags         []string        `json:"tags,omitempty"`
		Customizable bool            `json:"customizable,omitempty"`
		Input        json.RawMessage `json:"input_schema,omitempty"`
	}
	out := struct {
		Swarms []found `json:"swarms"`
	}{Swarms: []found{}}
	for _, h := range hits {
		out.Swarms = append(out.Swarms, found{h.Entry.ID, h.Entry.Description, h.Entry.Capabilities, h.Entry.Tags, h.Entry.Customizable, h.Entry.InputSchema})
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// noteFound records the swarm ids a registry search returned, from its
// output (live or replayed), so that handoffs to them are allowed.
func (r *runner) noteFound(output string) {
	var out struct {
		Swarms []struct {
			ID string `json:"id"`
		} `json:"swarms"`
	}
	if json.Unmarshal([]byte(output), &out) != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.found == nil {
		r.found = map[string]bool{}
	}
	for _, s := range out.Swarms {
		r.found[s.ID] = true
	}
}

// registryHandoff turns a swarm_registry_handoff call into a child-swarm
// handoff, or explains to the model why it cannot be made.
func (r *runner) registryHandoff(ctx context.Context, rd *round, key string, c model.ToolCall) callResult {
	var a struct {
		SwarmID       string          `json:"swarm_id"`
		Request       string          `json:"request"`
		Customization json.RawMessage `json:"customization"`
	}
	fail := func(msg string) callResult { return r.recordResult(ctx, rd, key, c, "error: "+msg, true) }
	if err := json.Unmarshal(orEmpty(c.Arguments), &a); err != nil || a.SwarmID == "" || strings.TrimSpace(a.Request) == "" {
		return fail("swarm_registry_handoff needs an object with swarm_id and a non-empty request")
	}
	r.mu.Lock()
	ok := r.found[a.SwarmID]
	r.mu.Unlock()
	if !ok {
		return fail(fmt.Sprintf("swarm %q was not returned by swarm_registry_search in this run; search first and hand off to one of its results", a.SwarmID))
	}
	info, err := r.rt.info(a.SwarmID)
	if err != nil {
		return fail(err.Error())
	}
	if info.noTarget != "" {
		return fail(fmt.Sprintf("swarm %q cannot be a handoff target: %s", a.SwarmID, info.noTarget))
	}
	e, _ := r.rt.Registry().Get(a.SwarmID)
	ct := &childTarget{swarm: a.SwarmID, info: info, customizable: e.Customizable}
	args := map[string]json.RawMessage{}
	if info.textIn {
		args["request"], _ = json.Marshal(a.Request)
	} else {
		args["input"] = json.RawMessage(a.Request)
		if !json.Valid(args["input"]) {
			args["input"], _ = json.Marshal(a.Request)
		}
	}
	if len(a.Customization) > 0 && string(a.Customization) != "null" {
		args["customization"] = a.Customization
	}
	call := c
	call.Arguments, _ = json.Marshal(args)
	return r.child(ctx, rd, key, call, ct)
}
