package registry

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Kind says what an [Entry] describes.
type Kind string

// The kinds of registry entries.
const (
	// KindSwarm is a registered swarm: a typed entry point with its own run.
	KindSwarm Kind = "swarm"
	// KindAgent is a registered agent that can be handed off to.
	KindAgent Kind = "agent"
)

// Entry is the metadata a registered swarm or agent contributes to the
// registry. It is served as JSON as it is.
type Entry struct {
	// ID is the swarm's or agent's registered id; it is unique within a
	// registry.
	ID string `json:"id"`
	// Kind is KindSwarm or KindAgent.
	Kind Kind `json:"kind"`
	// Description says what the swarm or agent does; it is the main text
	// searched.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the input, if known.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// ResultSchema is the JSON Schema of the result, if known.
	ResultSchema json.RawMessage `json:"result_schema,omitempty"`
	// Capabilities are the capability words derived from the entry's
	// handoffs and tools; see [Capabilities].
	Capabilities []string `json:"capabilities,omitempty"`
	// Tags are free-form labels given by the developer.
	Tags []string `json:"tags,omitempty"`
	// Customizable reports whether the swarm accepts LLM-driven
	// customization on handoff.
	Customizable bool `json:"customizable"`
}

// validate reports what makes e unfit for a registry, wrapping ErrInvalid.
func (e *Entry) validate() error {
	switch {
	case strings.TrimSpace(e.ID) == "":
		return fmt.Errorf("%w: entry without an id", ErrInvalid)
	case e.Kind != KindSwarm && e.Kind != KindAgent:
		return fmt.Errorf("%w: entry %q: kind %q is neither %q nor %q", ErrInvalid, e.ID, e.Kind, KindSwarm, KindAgent)
	case len(e.InputSchema) > 0 && !json.Valid(e.InputSchema):
		return fmt.Errorf("%w: entry %q: input schema is not valid JSON", ErrInvalid, e.ID)
	case len(e.ResultSchema) > 0 && !json.Valid(e.ResultSchema):
		return fmt.Errorf("%w: entry %q: result schema is not valid JSON", ErrInvalid, e.ID)
	}
	return nil
}

// clone returns a copy of e that shares no memory with it, so neither the
// caller nor the registry can change the other's entry.
func (e Entry) clone() Entry {
	e.InputSchema = slices.Clone(e.InputSchema)
	e.ResultSchema = slices.Clone(e.ResultSchema)
	e.Capabilities = slices.Clone(e.Capabilities)
	e.Tags = slices.Clone(e.Tags)
	return e
}

// handoffPrefixes are the words the runtime puts before a target's id in
// the name of a delegation tool (handoff_to_<id>, transfer_to_<id>).
var handoffPrefixes = [][]string{{"handoff", "to"}, {"transfer", "to"}}

// Capability normalises a tool or handoff tool name into a capability word:
// lower-case snake_case, with a leading handoff_to_ or transfer_to_ removed.
// "handoff_to_flight_booker" and "transfer_to_flight-booker" become
// "flight_booker", "searchFlights" becomes "search_flights", and
// "search_flights" stays. It returns "" for a name without letters or
// digits.
func Capability(name string) string {
	w := words(name)
	for _, p := range handoffPrefixes {
		if len(w) > len(p) && slices.Equal(w[:len(p)], p) {
			w = w[len(p):]
			break
		}
	}
	return strings.Join(w, "_")
}

// Capabilities derives an entry's capability list from the ids or tool
// names of its handoffs and the names of its tools: each is normalised by
// [Capability], and the result is sorted without duplicates or empty words.
// The caller, which knows an entry's handoffs and tools, fills
// [Entry.Capabilities] with it.
func Capabilities(handoffs, tools []string) []string {
	out := make([]string, 0, len(handoffs)+len(tools))
	for _, n := range slices.Concat(handoffs, tools) {
		if c := Capability(n); c != "" {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// matchKey is the form in which capabilities and tags are compared by
// search filters: the search terms of the [Capability] name, joined by
// spaces. "Flight bookers", "flight_booker", "flightBooker" and
// "handoff_to_flight_booker" share one key.
func matchKey(s string) string { return strings.Join(terms(Capability(s)), " ") }
