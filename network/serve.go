package network

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
)

// dedup holds the calls of shared tools by idempotency key: a repeated
// call waits for the first or gets its result.
type dedup struct {
	mu    sync.Mutex
	m     map[string]*call
	swept time.Time
}

// maxDedup bounds the calls kept for deduplication; beyond it the oldest
// finished ones are dropped before their DedupTTL.
const maxDedup = 100_000

type call struct {
	done chan struct{}
	resp CallResponse
	at   time.Time
}

// Handler serves the peer protocol under /v1/network/ (see the package
// documentation) and the shared tools over MCP at /v1/network/mcp. Mount
// it behind the server's authentication: a token limited to capabilities
// sees and calls only those.
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathHello, n.serveHello)
	mux.HandleFunc("GET "+PathFeed, n.serveFeed)
	mux.HandleFunc("POST "+PathQuery, n.serveQuery)
	mux.HandleFunc("POST "+PathCall, n.serveCall)
	mux.HandleFunc("GET "+PathPeers, n.servePeers)
	mux.Handle(PathMCP, n.mcpHandler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, http.StatusNotFound, "not_found", "no such network endpoint: "+r.Method+" "+r.URL.Path)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeErr(w, http.StatusRequestEntityTooLarge, "too_large", "request body too large")
			return false
		}
		writeErr(w, http.StatusBadRequest, "invalid", "request body is not valid JSON of the right shape: "+err.Error())
		return false
	}
	return true
}

// serveHello takes a peer's hello and answers with the node's. A peer with
// a URL is followed in turn, so that its capabilities reach the registry
// through its own feed.
func (n *Node) serveHello(w http.ResponseWriter, r *http.Request) {
	var h Hello
	if !decodeBody(w, r, &h) {
		return
	}
	if h.Type != "hello" {
		writeErr(w, http.StatusBadRequest, "invalid", fmt.Sprintf("want a message of type hello, got %q", h.Type))
		return
	}
	if n.left(w) {
		return
	}
	if err := n.checkHello(&h); err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, ErrTooMany) {
			status = http.StatusRequestEntityTooLarge
		}
		writeErr(w, status, "invalid", err.Error())
		return
	}
	if h.Node.URL != "" && h.Node.ID != n.id {
		if checkURL(h.Node.URL) != nil {
			writeErr(w, http.StatusBadRequest, "invalid", "hello: node url must be http:// or https://")
			return
		}
		n.mu.Lock()
		n.addPeerLocked(h.Node.URL, "hello")
		n.mu.Unlock()
	}
	writeJSON(w, http.StatusOK, n.hello(r.Context()))
}

// left answers 503 to a request of a node that is leaving, and reports
// whether it did.
func (n *Node) left(w http.ResponseWriter) bool {
	select {
	case <-n.leaving:
		writeErr(w, http.StatusServiceUnavailable, "leaving", "node "+n.id+" is leaving the network")
		return true
	default:
		return false
	}
}

// serveFeed streams the node's hello on connect and on every change of
// what it shares or of its peers, a heartbeat every third of FailAfter,
// and a goodbye when the node leaves.
func (n *Node) serveFeed(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	if n.left(w) {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(event string, v any) bool {
		b, _ := json.Marshal(v)
		_ = rc.SetWriteDeadline(time.Now().Add(n.opts.FailAfter))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	t := time.NewTicker(n.heartbeat())
	defer t.Stop()
	peers := strings.Join(n.peerURLs(), " ")
	for {
		n.mu.Lock()
		changed := n.changed
		n.mu.Unlock()
		if !send("hello", n.hello(r.Context())) {
			return
		}
		for resend := false; !resend; {
			select {
			case <-r.Context().Done():
				return
			case <-n.ctx.Done():
				return
			case <-n.leaving:
				send("goodbye", Goodbye{Node: n.id})
				return
			case <-changed:
				resend = true
			case now := <-t.C:
				if p := strings.Join(n.peerURLs(), " "); p != peers {
					peers, resend = p, true
					continue
				}
				n.mu.Lock()
				gen := n.gen
				n.mu.Unlock()
				if !send("heartbeat", Heartbeat{Generation: gen, Time: now.UTC()}) {
					return
				}
			}
		}
	}
}

// serveQuery answers a capability_query by name and tag.
func (n *Node) serveQuery(w http.ResponseWriter, r *http.Request) {
	var q Query
	if !decodeBody(w, r, &q) {
		return
	}
	if q.Type != "" && q.Type != "capability_query" {
		writeErr(w, http.StatusBadRequest, "invalid", fmt.Sprintf("want a message of type capability_query, got %q", q.Type))
		return
	}
	out := QueryResponse{Type: "capability_response", Node: n.Info(), Capabilities: []Capability{}}
	for _, c := range n.hello(r.Context()).Capabilities {
		if (q.Name == "" || c.Name == q.Name) && (q.Tag == "" || c.HasTag(q.Tag)) {
			out.Capabilities = append(out.Capabilities, c)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// servePeers answers with the node's view of the network, limited to the
// capabilities the caller's token may see.
func (n *Node) servePeers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, n.Status(r.Context()))
}

// serveCall performs a shared capability for a peer.
func (n *Node) serveCall(w http.ResponseWriter, r *http.Request) {
	var req CallRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !auth.CapabilityAllowed(r.Context(), req.Name) {
		writeErr(w, http.StatusForbidden, "forbidden", fmt.Sprintf("capability %q: token not allowed this capability", req.Name))
		return
	}
	resp, err := n.perform(r.Context(), req)
	switch {
	case errors.Is(err, ErrUnknownCapability):
		writeErr(w, http.StatusNotFound, "unknown_capability", err.Error())
	case errors.Is(err, ErrInvalid):
		writeErr(w, http.StatusBadRequest, "invalid", err.Error())
	case err != nil:
		writeErr(w, http.StatusServiceUnavailable, "unavailable", err.Error())
	default:
		writeJSON(w, http.StatusOK, resp)
	}
}

// Perform runs a shared capability as a peer's call would: a tool call
// deduplicated by the request's idempotency key, or a run of a shared
// swarm or agent whose id is derived from the key. It is what
// POST /v1/network/call and the MCP endpoint execute.
func (n *Node) perform(ctx context.Context, req CallRequest) (CallResponse, error) {
	n.mu.Lock()
	si, ok := n.shared[req.Name]
	rt := n.rt
	n.mu.Unlock()
	if !ok || (req.Version != "" && req.Version != si.cap.Version) {
		v := ""
		if req.Version != "" {
			v = " version " + req.Version
		}
		return CallResponse{}, fmt.Errorf("%w: node %s shares no capability %q%s", ErrUnknownCapability, n.id, req.Name, v)
	}
	if len(req.Input) == 0 || string(req.Input) == "null" {
		req.Input = json.RawMessage(`{}`)
	}
	if !json.Valid(req.Input) {
		return CallResponse{}, fmt.Errorf("%w: input is not JSON", ErrInvalid)
	}
	key := req.IdempotencyKey
	if key == "" && req.CallerRun != "" {
		key = req.CallerRun + "/" + req.CallerStep
	}
	if si.tool != nil {
		return n.callTool(ctx, si, req, key)
	}
	return n.runSwarm(ctx, rt, si, req, key)
}

// callTool runs a shared tool once per idempotency key. The call runs
// detached from the caller's request (bounded by CallTimeout), so a caller
// that disconnects and calls again with the same key gets the first call's
// result instead of a second execution.
func (n *Node) callTool(ctx context.Context, si *sharedItem, req CallRequest, key string) (CallResponse, error) {
	n.calls.mu.Lock()
	n.sweepLocked()
	if key != "" {
		key = si.cap.Name + "\x00" + key
	}
	c, dup := n.calls.m[key]
	if key == "" || !dup {
		c = &call{done: make(chan struct{}), at: time.Now()}
		if key != "" {
			n.calls.m[key] = c
		}
		tctx, cancel := context.WithTimeout(swarm.WithCallKey(n.ctx, req.CallerRun, req.CallerStep), n.opts.CallTimeout)
		go func() {
			defer cancel()
			defer close(c.done)
			out, err := safeCall(tctx, si.tool, req.Input)
			var parts []FilePart
			if err == nil {
				// The tool's attached parts go back with its result.
				parts, err = wireParts(tctx, nil, "", swarm.AttachedParts(tctx))
			}
			if err != nil {
				c.resp = CallResponse{Output: err.Error(), IsError: true}
			} else {
				c.resp = CallResponse{Output: out, Parts: parts}
			}
		}()
	}
	n.calls.mu.Unlock()
	select {
	case <-c.done:
		r := c.resp
		r.Replayed = dup
		return r, nil
	case <-ctx.Done():
		return CallResponse{}, context.Cause(ctx)
	}
}

// sweepLocked drops the finished calls older than DedupTTL, at most once
// a minute unless the table is full, and then the oldest finished calls
// while it is.
func (n *Node) sweepLocked() {
	full := len(n.calls.m) >= maxDedup
	if !full && time.Since(n.calls.swept) < time.Minute {
		return
	}
	n.calls.swept = time.Now()
	type aged struct {
		key string
		at  time.Time
	}
	var done []aged
	for k, c := range n.calls.m {
		select {
		case <-c.done:
			if time.Since(c.at) > n.opts.DedupTTL {
				delete(n.calls.m, k)
			} else if full {
				done = append(done, aged{k, c.at})
			}
		default:
		}
	}
	if len(n.calls.m) < maxDedup {
		return
	}
	slices.SortFunc(done, func(a, b aged) int { return a.at.Compare(b.at) })
	for _, d := range done[:min(len(done), len(n.calls.m)-maxDedup+maxDedup/10)] {
		delete(n.calls.m, d.key)
	}
}

func safeCall(ctx context.Context, t swarm.Tool, args json.RawMessage) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool %s panicked: %v", t.Name(), p)
		}
	}()
	return t.Call(ctx, args)
}

// RunID returns the id of the run a node starts for a call of the shared
// swarm or agent name with idempotency key key: the same for every attempt.
func RunID(name, key string) string {
	sum := sha256.Sum256([]byte(name + "\x00" + key))
	return "net_" + hex.EncodeToString(sum[:16])
}

// runSwarm starts (or finds) the run keyed by the call and waits for it.
func (n *Node) runSwarm(ctx context.Context, rt *swarm.Runtime, si *sharedItem, req CallRequest, key string) (CallResponse, error) {
	if rt == nil {
		return CallResponse{}, errors.New("node has no runtime")
	}
	input := req.Input
	if si.text {
		var a struct {
			Request string `json:"request"`
		}
		if err := json.Unmarshal(input, &a); err != nil || a.Request == "" {
			return CallResponse{Output: "error: " + si.cap.Name + " takes an object with a non-empty request", IsError: true}, nil
		}
		input, _ = json.Marshal(a.Request)
	}
	var opts []swarm.StartOption
	if key != "" {
		opts = append(opts, swarm.WithID(RunID(si.cap.Name, key)))
	}
	if len(req.Parts) > 0 {
		parts, err := modelParts(req.Parts)
		if err != nil {
			return CallResponse{Output: "error: " + err.Error(), IsError: true}, nil
		}
		opts = append(opts, swarm.WithParts(parts...))
	}
	id, err := rt.Start(ctx, si.swarmID, input, opts...)
	if err != nil {
		if errors.Is(err, swarm.ErrInvalidInput) {
			return CallResponse{Output: "error: " + err.Error(), IsError: true}, nil
		}
		return CallResponse{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, n.opts.CallTimeout)
	defer cancel()
	st, err := rt.Wait(wctx, id)
	if err != nil {
		return CallResponse{}, fmt.Errorf("run %s: %w", id, err)
	}
	switch st.State {
	case swarm.StateCompleted:
		out := string(st.Result)
		var s string
		if json.Unmarshal(st.Result, &s) == nil {
			out = s
		}
		return CallResponse{Output: out, RunID: id}, nil
	default:
		return CallResponse{Output: fmt.Sprintf("%s run %s %s: %s", si.cap.Kind, id, st.State, st.Reason), IsError: true, RunID: id}, nil
	}
}
