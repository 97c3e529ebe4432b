package network

import (
	"encoding/json"
	"time"
)

// NodeInfo identifies a node on the wire.
type NodeInfo struct {
	// ID is the node's id, unique on the network.
	ID string `json:"id"`
	// URL is the node's base URL; empty for a node that only consumes.
	URL string `json:"url,omitempty"`
	// StartedAt is when the node started.
	StartedAt time.Time `json:"started_at"`
}

// Hello is what a node tells a peer on connect (the body and the answer of
// POST /v1/network/hello) and again on its change feed whenever what it
// shares changes: its identity, the generation of its capabilities (it
// grows with every change), its capabilities (those the peer's token may
// see) and the URLs of the peers it knows, so that one configured peer is
// enough to find the whole network.
type Hello struct {
	Type         string       `json:"type"` // "hello"
	Node         NodeInfo     `json:"node"`
	Generation   uint64       `json:"generation"`
	Capabilities []Capability `json:"capabilities"`
	Peers        []string     `json:"peers,omitempty"`
}

// Query asks a node for its capabilities of a name, a tag or both (the body
// of POST /v1/network/query); empty fields match everything.
type Query struct {
	Type string `json:"type"` // "capability_query"
	Name string `json:"name,omitempty"`
	Tag  string `json:"tag,omitempty"`
}

// QueryResponse answers a [Query].
type QueryResponse struct {
	Type         string       `json:"type"` // "capability_response"
	Node         NodeInfo     `json:"node"`
	Capabilities []Capability `json:"capabilities"`
}

// CallRequest asks a provider to perform one of its capabilities (the body
// of POST /v1/network/call).
type CallRequest struct {
	// Name and Version select the capability ("" version: the one shared).
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Input is the arguments object.
	Input json.RawMessage `json:"input"`
	// CallerRun and CallerStep are the run and step key of the caller's
	// tool call; IdempotencyKey is "<caller_run>/<caller_step>". Every
	// attempt of one recorded step sends the same key.
	CallerRun      string `json:"caller_run,omitempty"`
	CallerStep     string `json:"caller_step,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Parts are the input's images, files and audio, for a shared swarm
	// or agent: its run gets them with its input.
	Parts []FilePart `json:"parts,omitempty"`
}

// CallResponse is a provider's answer to a [CallRequest].
type CallResponse struct {
	// Output is the result text (for a swarm with a structured result,
	// its JSON).
	Output string `json:"output"`
	// IsError reports that the capability failed; Output says why. It is
	// the capability's failure, not the network's: a caller does not try
	// another provider.
	IsError bool `json:"is_error,omitempty"`
	// RunID is the provider's run of a shared swarm or agent.
	RunID string `json:"run_id,omitempty"`
	// Replayed reports that the provider answered from the call it had
	// already made with this idempotency key.
	Replayed bool `json:"replayed,omitempty"`
	// Parts are the result's images, files and audio (a shared tool's
	// attached parts); the caller's model receives them with Output.
	Parts []FilePart `json:"parts,omitempty"`
}

// Heartbeat is the data of a feed's heartbeat event.
type Heartbeat struct {
	Generation uint64    `json:"generation"`
	Time       time.Time `json:"time"`
}

// Goodbye is the data of a feed's goodbye event: the node is leaving the
// network, and its followers drop its capabilities at once.
type Goodbye struct {
	Node string `json:"node"`
}

// PeerStatus describes a peer as a node sees it (GET /v1/network/peers).
type PeerStatus struct {
	URL string `json:"url"`
	// Node is the peer's id, once it said hello.
	Node string `json:"node,omitempty"`
	// State is "connecting", "up" or "down".
	State string `json:"state"`
	// Error is why the peer is down.
	Error string `json:"error,omitempty"`
	// Source says how the node learned of the peer: "config", "hello"
	// (the peer or another peer named it) or "store" (the node table of a
	// shared store).
	Source       string    `json:"source"`
	LastSeen     time.Time `json:"last_seen,omitzero"`
	Capabilities int       `json:"capabilities"`
}

// Status is a node's view of the network (GET /v1/network/peers).
type Status struct {
	Node         NodeInfo     `json:"node"`
	Shared       []Capability `json:"shared"`
	Peers        []PeerStatus `json:"peers"`
	Capabilities []Offer      `json:"capabilities"`
}

// Paths of the peer protocol, under a node's base URL.
const (
	PathHello = "/v1/network/hello"
	PathFeed  = "/v1/network/feed"
	PathQuery = "/v1/network/query"
	PathCall  = "/v1/network/call"
	PathPeers = "/v1/network/peers"
	PathMCP   = "/v1/network/mcp"
)
