package network

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/swarmrt/swarm"
)

// Discover returns a tool bound to the capability name, not to one provider:
// each call goes to a healthy provider of the newest version (the one with
// the fewest calls in progress from this node, then the first by node id),
// and to another provider of that version when the call cannot be
// delivered (the provider is unreachable, refuses it, or dies during it).
// With no provider left the call fails with an error wrapping
// [ErrNoProvider]; in a run the model sees it as a tool error.
//
// The tool's description and schema are those of the capability when the
// registry knows it (at the time Tool is called), else generic ones. It is
// what AgentEnsemble calls NetworkTool.discover, minus the binding to one
// provider.
func (n *Node) Discover(name string) swarm.Tool {
	t := &capTool{n: n, name: name}
	if o, ok := n.reg.Find(name); ok {
		t.desc, t.schema = o.Description, o.InputSchema
	}
	return t
}

// Filter selects capabilities for a [Node.Catalog]: those with one of
// Names, one of Tags, and one of Kinds (an empty field selects all).
type Filter struct {
	Names []string
	Tags  []string
	Kinds []Kind
}

func (f Filter) match(c Capability) bool {
	if len(f.Names) > 0 && !slices.Contains(f.Names, c.Name) {
		return false
	}
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, c.Kind) {
		return false
	}
	if len(f.Tags) > 0 && !slices.ContainsFunc(f.Tags, c.HasTag) {
		return false
	}
	return true
}

// Catalog returns a dynamic tool set (see [swarm.DynamicTools]) of the
// capabilities of the node's peers that f selects: resolved at every model
// call of an agent that has it among its tools, so capabilities that
// appeared since the last call are offered and those of departed peers are
// not. Each is offered as [Node.Discover] would give it (failover included),
// at its newest version.
func (n *Node) Catalog(f Filter) swarm.Tool {
	label := "network"
	for _, t := range f.Tags {
		label += "_" + strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
				return r
			}
			return '_'
		}, t)
	}
	if len(label) > maxName {
		label = label[:maxName]
	}
	return swarm.DynamicTools(label, &catalog{n: n, f: f})
}

type catalog struct {
	n *Node
	f Filter
}

// Tools resolves the catalog now.
func (c *catalog) Tools(context.Context) ([]swarm.Tool, error) {
	var out []swarm.Tool
	seen := map[string]bool{}
	for _, o := range c.n.reg.All() { // sorted by name, newest version first
		if seen[o.Name] || o.Node == c.n.id || !c.f.match(o.Capability) {
			continue
		}
		seen[o.Name] = true
		out = append(out, &capTool{n: c.n, name: o.Name, version: o.Version, pinned: true, desc: o.Description, schema: o.InputSchema})
	}
	return out, nil
}

// capTool is a tool bound to a capability.
type capTool struct {
	n       *Node
	name    string
	version string
	pinned  bool // version fixed (catalog tools)
	desc    string
	schema  json.RawMessage
}

func (t *capTool) Name() string { return t.name }

func (t *capTool) Description() string {
	if t.desc != "" {
		return t.desc
	}
	return "The network capability " + t.name + "."
}

func (t *capTool) Schema() json.RawMessage {
	if len(t.schema) > 0 {
		return t.schema
	}
	return json.RawMessage(`{"type":"object"}`)
}

// Call performs the capability on a provider, with failover.
func (t *capTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	req := CallRequest{Name: t.name, Input: args, CallerRun: swarm.RunID(ctx), CallerStep: swarm.StepKey(ctx), IdempotencyKey: swarm.IdempotencyKey(ctx)}
	if req.IdempotencyKey == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		req.IdempotencyKey = "call_" + hex.EncodeToString(b[:])
	}
	if err := t.n.sendParts(ctx, t.name, &req); err != nil {
		return "", err
	}
	resp, err := t.n.call(ctx, t.name, t.version, t.pinned, req)
	if err != nil {
		return "", err
	}
	if resp.IsError {
		return "", errors.New(resp.Output)
	}
	if len(resp.Parts) > 0 {
		parts, err := modelParts(resp.Parts)
		if err != nil {
			return "", fmt.Errorf("the result of %s: %w", t.name, err)
		}
		if err := swarm.AttachParts(ctx, parts...); err != nil {
			return "", fmt.Errorf("the result of %s: %w", t.name, err)
		}
	}
	return resp.Output, nil
}

// call delivers req to a provider of name, failing over to the next one
// when a provider cannot answer. A provider whose connection broke is
// asked again (same idempotency key: it re-attaches to the call in
// progress) while the registry still lists it, that is within FailAfter;
// once it is removed the call moves to another provider.
func (n *Node) call(ctx context.Context, name, version string, pinned bool, req CallRequest) (CallResponse, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, n.opts.CallTimeout,
		fmt.Errorf("%w: capability %q: no answer within %s", ErrCallTimeout, name, n.opts.CallTimeout))
	defer cancel()
	tried := map[string]bool{}
	gone := map[string]bool{} // providers lost during the call
	var errs []error
	waited, waitedGone := false, false
	for {
		if ctx.Err() != nil {
			return CallResponse{}, context.Cause(ctx)
		}
		o, ok := n.pick(name, version, pinned, tried)
		if !ok && len(errs) == 0 && !waited {
			// A node that just started may not have heard from the
			// provider yet: wait for the registry to change, for at
			// most FailAfter.
			waited = true
			if n.waitChange(ctx, func() bool { _, ok := n.pick(name, version, pinned, tried); return ok }) {
				continue
			}
		}
		if !ok && len(gone) > 0 && !waitedGone {
			// Every provider failed, some by disappearing: wait at most
			// FailAfter for one of them to come back (the call is then
			// re-attached by its key) or for a new provider.
			waitedGone = true
			if n.waitChange(ctx, func() bool {
				for g := range gone {
					if n.registered(Offer{Capability: Capability{Name: name, Version: version}, Node: g}) {
						delete(tried, g)
						delete(gone, g)
						return true
					}
				}
				_, ok := n.pick(name, version, pinned, tried)
				return ok
			}) {
				continue
			}
		}
		if !ok {
			if len(errs) == 0 {
				return CallResponse{}, fmt.Errorf("%w of capability %q on the network (known capabilities: %s)", ErrNoProvider, name, n.known())
			}
			return CallResponse{}, fmt.Errorf("%w of capability %q could perform the call: %w", ErrNoProvider, name, errors.Join(errs...))
		}
		version, pinned = o.Version, true
		req.Version = o.Version
		resp, err := n.callProvider(ctx, o, req)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return CallResponse{}, context.Cause(ctx)
		}
		var ge *goneError
		if errors.As(err, &ge) {
			gone[o.Node] = true
		}
		errs = append(errs, fmt.Errorf("node %s: %w", o.Node, err))
		tried[o.Node] = true
	}
}

// goneError: the provider was lost during the call (its connection failed
// and it left the registry).
type goneError struct{ err error }

func (e *goneError) Error() string { return "provider lost during the call: " + e.err.Error() }
func (e *goneError) Unwrap() error { return e.err }

// pending is a call in progress to a provider.
type pending struct{ cancel context.CancelCauseFunc }

// callProvider sends req to o, re-sending it while o is still registered
// and the failure was the connection's. The call is canceled when o
// leaves the registry (see [Node.dropPeer]).
func (n *Node) callProvider(ctx context.Context, o Offer, req CallRequest) (CallResponse, error) {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pc := &pending{cancel: cancel}
	n.mu.Lock()
	if n.inflight[o.Node] == nil {
		n.inflight[o.Node] = map[*pending]struct{}{}
	}
	n.inflight[o.Node][pc] = struct{}{}
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.inflight[o.Node], pc)
		if len(n.inflight[o.Node]) == 0 {
			delete(n.inflight, o.Node)
		}
		n.mu.Unlock()
	}()
	// The provider may have left between pick and now.
	if !n.registered(o) {
		return CallResponse{}, &goneError{errors.New("it left the network")}
	}
	body, _ := json.Marshal(req)
	for {
		resp, retry, err := n.post(pctx, o.URL+PathCall, body)
		if err != nil && ctx.Err() == nil && pctx.Err() != nil {
			return CallResponse{}, &goneError{context.Cause(pctx)}
		}
		if err == nil || !retry {
			return resp, err
		}
		// The connection failed: re-attach if the provider is still
		// registered (it may come back within FailAfter), else fail over.
		t := time.NewTimer(n.heartbeat())
		select {
		case <-pctx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return CallResponse{}, context.Cause(ctx)
			}
			return CallResponse{}, &goneError{context.Cause(pctx)}
		case <-t.C:
		}
		if !n.registered(o) {
			return CallResponse{}, &goneError{err}
		}
	}
}

// waitChange waits at most FailAfter for cond to hold after a change of
// the registry.
func (n *Node) waitChange(ctx context.Context, cond func() bool) bool {
	t := time.NewTimer(n.opts.FailAfter)
	defer t.Stop()
	for {
		ch := n.reg.Changed()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (n *Node) registered(o Offer) bool {
	for _, p := range n.reg.Providers(o.Name) {
		if p.Node == o.Node && p.Version == o.Version {
			return true
		}
	}
	return false
}

// post sends a call; retry reports a connection failure (as opposed to an
// answer).
func (n *Node) post(ctx context.Context, url string, body []byte) (CallResponse, bool, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return CallResponse{}, false, err
	}
	n.authorize(hreq)
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(hreq)
	if err != nil {
		return CallResponse{}, true, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return CallResponse{}, true, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return CallResponse{}, false, fmt.Errorf("%s: %s", resp.Status, msg)
	}
	var cr CallResponse
	if err := json.Unmarshal(b, &cr); err != nil {
		return CallResponse{}, false, fmt.Errorf("%w: the provider's answer is not a call response: %v", ErrInvalid, err)
	}
	return cr, false, nil
}

// pick chooses a provider not yet tried: of version when pinned, else of
// the newest version; the least busy, then the first by node id.
func (n *Node) pick(name, version string, pinned bool, tried map[string]bool) (Offer, bool) {
	var cands []Offer
	for _, o := range n.reg.Providers(name) {
		if o.Node == n.id || tried[o.Node] {
			continue
		}
		if !pinned {
			version, pinned = o.Version, true
		}
		if o.Version == version {
			cands = append(cands, o)
		}
	}
	if len(cands) == 0 {
		return Offer{}, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	best := cands[0]
	for _, o := range cands[1:] {
		if len(n.inflight[o.Node]) < len(n.inflight[best.Node]) {
			best = o
		}
	}
	return best, true
}

func (n *Node) known() string {
	var names []string
	for _, o := range n.reg.All() {
		if len(names) == 0 || names[len(names)-1] != o.Name {
			names = append(names, o.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	if len(names) > 20 {
		names = append(names[:20], "...")
	}
	return strings.Join(names, ", ")
}

// Query asks the node at url for its capabilities of a name and a tag
// (capability_query / capability_response), without joining it.
func (n *Node) Query(ctx context.Context, url, name, tag string) (*QueryResponse, error) {
	var qr QueryResponse
	if err := n.exchange(ctx, "capability query", strings.TrimSuffix(url, "/")+PathQuery, Query{Type: "capability_query", Name: name, Tag: tag}, &qr); err != nil {
		return nil, err
	}
	if qr.Type != "capability_response" {
		return nil, fmt.Errorf("%w: capability query: the answer is a %q, not a capability_response", ErrInvalid, qr.Type)
	}
	return &qr, nil
}
