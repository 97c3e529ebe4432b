package network

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/store"
)

// Defaults of [Options].
const (
	DefaultFailAfter       = 3 * time.Second
	DefaultMaxCapabilities = 1000
	DefaultCallTimeout     = 10 * time.Minute
	DefaultDedupTTL        = time.Hour
	// learnedRetries bounds the attempts to reach a peer that another
	// node named (or the node table listed) before it is forgotten.
	learnedRetries = 20
	// maxPeers bounds the peers a node follows beyond its configured
	// ones: hellos and the node table cannot make it follow more.
	maxPeers = 1000
)

// Options configures a [Node]. The zero value is usable.
type Options struct {
	// ID is the node's id on the network ([a-zA-Z0-9_.-], at most 64
	// characters); default a random one.
	ID string
	// Peers are base URLs of other nodes to connect to. One is enough:
	// peers pass on the peers they know.
	Peers []string
	// Token is the bearer token sent to peers (they check it like any
	// other client's: see package auth; a token limited to capabilities
	// sees only those).
	Token string
	// FailAfter bounds failure detection: a peer that sends nothing for
	// that long (its feed sends a heartbeat every third of it) is removed
	// with its capabilities; a peer whose connection breaks and that does
	// not answer a new hello is removed at once. Default
	// [DefaultFailAfter].
	FailAfter time.Duration
	// MaxCapabilities bounds the capabilities of one hello; a peer that
	// sends more is refused (default [DefaultMaxCapabilities]).
	MaxCapabilities int
	// CallTimeout bounds every network call: one this node makes to a
	// peer's capability (its attempts and failovers together; past it
	// the call fails with [ErrCallTimeout]) and one a peer makes to a
	// capability this node shares. Default [DefaultCallTimeout].
	CallTimeout time.Duration
	// DedupTTL is how long the result of a shared tool's call is kept to
	// answer a repeated call with the same idempotency key (default
	// [DefaultDedupTTL]).
	DedupTTL time.Duration
	// Client makes the requests to peers (default: a client of its own).
	Client *http.Client
	// Logger receives peers' arrivals and departures (default: discard).
	Logger *slog.Logger
}

// Node is a member of a network: it shares capabilities (see [Node.Share])
// and serves them to peers ([Node.Handler]), follows its peers' change
// feeds into its [Registry], and calls their capabilities ([Node.Discover],
// [Node.Catalog]).
type Node struct {
	opts    Options
	id      string
	started time.Time
	reg     *Registry
	client  *http.Client
	log     *slog.Logger

	mu      sync.Mutex
	url     string
	rt      *swarm.Runtime
	shared  map[string]*sharedItem
	order   []string
	gen     uint64
	changed chan struct{}
	peers   map[string]*peer
	running bool
	closed  bool
	// inflight holds the calls in progress per provider node: their
	// number balances the load, and the calls to a provider that leaves
	// the registry are canceled.
	inflight map[string]map[*pending]struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// leaving is closed by Leave; dirDone once the node's row is out of
	// the store's node table (nil: the node has none).
	leaving   chan struct{}
	leaveOnce sync.Once
	dirDone   chan struct{}

	calls dedup
}

type peer struct {
	// tried is closed after the first attempt to reach the peer.
	tried    chan struct{}
	url      string
	source   string
	id       string
	state    string
	err      string
	lastSeen time.Time
	failures int
}

// New returns a node. It does nothing on the network until [Node.Start].
func New(opts Options) (*Node, error) {
	if opts.ID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		opts.ID = "node-" + hex.EncodeToString(b[:])
	}
	if len(opts.ID) > 64 || strings.IndexFunc(opts.ID, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) >= 0 {
		return nil, fmt.Errorf("%w: node id %q: want at most 64 letters, digits, '_', '-' or '.'", ErrInvalid, opts.ID)
	}
	if opts.FailAfter <= 0 {
		opts.FailAfter = DefaultFailAfter
	}
	if opts.MaxCapabilities <= 0 {
		opts.MaxCapabilities = DefaultMaxCapabilities
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.DedupTTL <= 0 {
		opts.DedupTTL = DefaultDedupTTL
	}
	n := &Node{opts: opts, id: opts.ID, started: time.Now().UTC(), reg: NewRegistry(), client: opts.Client, log: opts.Logger,
		shared: map[string]*sharedItem{}, changed: make(chan struct{}), peers: map[string]*peer{}, inflight: map[string]map[*pending]struct{}{}}
	if n.client == nil {
		n.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute}}
	}
	if n.log == nil {
		n.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.leaving = make(chan struct{})
	n.calls.m = map[string]*call{}
	for _, u := range opts.Peers {
		if err := checkURL(u); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func checkURL(u string) error {
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("%w: peer URL %q: want http:// or https://", ErrInvalid, u)
	}
	return nil
}

// ID returns the node's id.
func (n *Node) ID() string { return n.id }

// Registry returns the capabilities of the node's peers.
func (n *Node) Registry() *Registry { return n.reg }

// Info returns the node's identity.
func (n *Node) Info() NodeInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	return NodeInfo{ID: n.id, URL: n.url, StartedAt: n.started}
}

// StartOptions are what a node needs to join the network.
type StartOptions struct {
	// Runtime runs the shared swarms and agents (needed when any are
	// shared). When its store is a [store.NodeDirectory] (PostgreSQL),
	// the node announces itself in the store's node table and connects
	// to the other nodes listed there.
	Runtime *swarm.Runtime
	// URL is the base URL where peers reach the node's [Node.Handler];
	// empty for a node that only consumes.
	URL string
}

// Start joins the network: it registers shared agents with the runtime,
// connects to the configured peers (and to those of the store's node
// table) and keeps following them until [Node.Close].
func (n *Node) Start(ctx context.Context, so StartOptions) error {
	n.mu.Lock()
	if n.running || n.closed {
		n.mu.Unlock()
		return errors.New("network: node already started or closed")
	}
	n.url = strings.TrimSuffix(so.URL, "/")
	n.rt = so.Runtime
	items := make([]*sharedItem, 0, len(n.order))
	for _, name := range n.order {
		items = append(items, n.shared[name])
	}
	n.mu.Unlock()
	for _, it := range items {
		if err := it.bind(so.Runtime); err != nil {
			return err
		}
	}
	n.mu.Lock()
	n.running = true
	n.bumpLocked()
	var first []chan struct{}
	for _, u := range n.opts.Peers {
		n.addPeerLocked(u, "config")
		if p := n.peers[strings.TrimSuffix(u, "/")]; p != nil {
			first = append(first, p.tried)
		}
	}
	n.mu.Unlock()
	// The configured peers are tried once before Start returns (for at
	// most FailAfter), so that a run started next sees their
	// capabilities.
	wait := time.NewTimer(n.opts.FailAfter)
	defer wait.Stop()
	for _, ch := range first {
		select {
		case <-ch:
		case <-wait.C:
		case <-ctx.Done():
		}
	}
	if so.Runtime != nil {
		if dir, ok := so.Runtime.Store().(store.NodeDirectory); ok {
			n.mu.Lock()
			n.dirDone = make(chan struct{})
			n.mu.Unlock()
			n.wg.Add(1)
			go n.directoryLoop(dir)
		}
	}
	return nil
}

// Leave tells the network the node is going, before it stops serving:
// the change feeds it serves end at once with a goodbye event (its peers
// drop its capabilities without waiting for fail_after), it refuses new
// hellos and feeds, and its row leaves the store's node table. Calls in
// progress, served or made, go on until [Node.Close]. Leave waits (at
// most until ctx ends) for the row to be removed; call it before closing
// the store.
func (n *Node) Leave(ctx context.Context) error {
	n.leaveOnce.Do(func() { close(n.leaving) })
	n.mu.Lock()
	done := n.dirDone
	n.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("network: leaving: %w", context.Cause(ctx))
	}
}

// Close leaves the network (see [Node.Leave]) if the node did not, stops
// following peers, ends the calls it serves and waits for its goroutines.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), n.opts.FailAfter)
	defer cancel()
	err := n.Leave(ctx)
	n.cancel()
	n.wg.Wait()
	return err
}

// AddPeer connects the node to the node at url (a no-op for one it knows).
func (n *Node) AddPeer(url string) error {
	if err := checkURL(url); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.addPeerLocked(url, "config")
	return nil
}

func (n *Node) addPeerLocked(url, source string) {
	url = strings.TrimSuffix(url, "/")
	if url == "" || url == n.url || checkURL(url) != nil || !n.running || n.closed {
		return
	}
	if _, ok := n.peers[url]; ok {
		return
	}
	if source != "config" && len(n.peers) >= maxPeers {
		return
	}
	p := &peer{url: url, source: source, state: "connecting", tried: make(chan struct{})}
	n.peers[url] = p
	n.wg.Add(1)
	go n.follow(p)
}

// Peers returns the node's peers, sorted by URL.
func (n *Node) Peers() []PeerStatus { return n.peerStatus(context.Background()) }

// peerStatus returns the node's peers, each with the number of its
// capabilities the caller in ctx may see.
func (n *Node) peerStatus(ctx context.Context) []PeerStatus {
	n.mu.Lock()
	out := make([]PeerStatus, 0, len(n.peers))
	for _, p := range n.peers {
		out = append(out, PeerStatus{URL: p.url, Node: p.id, State: p.state, Error: p.err, Source: p.source, LastSeen: p.lastSeen})
	}
	n.mu.Unlock()
	for i := range out {
		if out[i].State == "up" {
			out[i].Capabilities = len(visible(ctx, n.reg.OfNode(out[i].Node)))
		}
	}
	slices.SortFunc(out, func(a, b PeerStatus) int { return strings.Compare(a.URL, b.URL) })
	return out
}

// Status returns the node's view of the network as the caller in ctx may
// see it: a token limited to capabilities (see package auth) sees only
// those, shared by the node or offered by its peers. In-process callers
// see everything.
func (n *Node) Status(ctx context.Context) Status {
	return Status{Node: n.Info(), Shared: n.hello(ctx).Capabilities, Peers: n.peerStatus(ctx), Capabilities: visible(ctx, n.reg.All())}
}

// visible keeps the offers the caller in ctx may see.
func visible(ctx context.Context, offers []Offer) []Offer {
	return slices.DeleteFunc(offers, func(o Offer) bool { return !auth.CapabilityAllowed(ctx, o.Name) })
}

func (n *Node) peerURLs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.peers))
	for _, p := range n.peers {
		if p.state == "up" {
			out = append(out, p.url)
		}
	}
	slices.Sort(out)
	return out
}

func (n *Node) bumpLocked() {
	n.gen++
	close(n.changed)
	n.changed = make(chan struct{})
}

// heartbeat is the interval of feed heartbeats and of reconnection
// attempts.
func (n *Node) heartbeat() time.Duration { return max(n.opts.FailAfter/3, 10*time.Millisecond) }

var (
	errSelf = errors.New("the peer is this node")
	// errGoodbye: the peer said it is leaving; it finishes the calls it
	// has in progress, so they are not canceled.
	errGoodbye = errors.New("the peer left the network")
)

// follow keeps a peer's capabilities in the registry while it answers.
func (n *Node) follow(p *peer) {
	defer n.wg.Done()
	for {
		err := n.followOnce(p, func() { closeOnce(p) })
		closeOnce(p)
		if n.ctx.Err() != nil {
			return
		}
		n.mu.Lock()
		id := p.id
		p.state, p.err = "down", err.Error()
		p.failures++
		// A peer that someone else named is dropped at once when it
		// breaks the protocol's limits, and after learnedRetries
		// failures otherwise.
		hostile := p.source != "config" && (errors.Is(err, ErrTooLarge) || errors.Is(err, ErrTooMany))
		forget := errors.Is(err, errSelf) || hostile || (p.source != "config" && p.failures > learnedRetries)
		if forget {
			delete(n.peers, p.url)
		}
		shared := false
		for _, q := range n.peers {
			if q != p && q.id == id && q.state == "up" {
				shared = true
			}
		}
		n.mu.Unlock()
		if id != "" && !shared && n.dropPeer(id, err, !errors.Is(err, errGoodbye)) {
			n.log.Info("network: peer removed", "node", id, "url", p.url, "err", err)
		}
		if hostile {
			n.log.Warn("network: peer dropped", "node", id, "url", p.url, "err", err)
		}
		if forget {
			return
		}
		t := time.NewTimer(n.heartbeat())
		select {
		case <-n.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// dropPeer removes the capabilities of node id from the registry and,
// with cancel, the calls in progress to it, for why; it reports whether
// the registry knew the node.
func (n *Node) dropPeer(id string, why error, cancel bool) bool {
	if !n.reg.Remove(id) {
		return false
	}
	if !cancel {
		return true
	}
	cause := fmt.Errorf("it left the network: %w", why)
	n.mu.Lock()
	for pc := range n.inflight[id] {
		pc.cancel(cause)
	}
	n.mu.Unlock()
	return true
}

// closeOnce marks the first attempt to reach p as done.
func closeOnce(p *peer) {
	select {
	case <-p.tried:
	default:
		close(p.tried)
	}
}

// followOnce says hello to the peer and reads its feed until it fails.
func (n *Node) followOnce(p *peer, welcomed func()) error {
	ctx, cancel := context.WithCancelCause(n.ctx)
	defer cancel(nil)
	err := n.readFeed(ctx, cancel, p, welcomed)
	if ctx.Err() != nil && n.ctx.Err() == nil {
		return context.Cause(ctx) // the watchdog's
	}
	return err
}

// readFeed says hello to the peer and reads its feed until it fails; the
// feed's watchdog ends it with cancel.
func (n *Node) readFeed(ctx context.Context, cancel context.CancelCauseFunc, p *peer, welcomed func()) error {
	h, err := n.sayHello(ctx, p.url)
	if err != nil {
		return err
	}
	if err := n.accept(p, h); err != nil {
		return err
	}
	welcomed()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+PathFeed, nil)
	if err != nil {
		return err
	}
	n.authorize(req)
	req.Header.Set("Accept", "text/event-stream")
	// The watchdog ends the feed when the peer sends nothing for
	// FailAfter: a hung or partitioned peer is detected like a dead one.
	watchdog := time.AfterFunc(n.opts.FailAfter, func() {
		cancel(fmt.Errorf("feed: nothing received for %s (fail_after)", n.opts.FailAfter))
	})
	defer watchdog.Stop()
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("feed: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return answerErr("feed", resp)
	}
	return readEvents(resp.Body, func(event string, data []byte) error {
		watchdog.Reset(n.opts.FailAfter)
		switch event {
		case "hello":
			var h Hello
			if err := json.Unmarshal(data, &h); err != nil {
				return fmt.Errorf("%w: feed: hello: %v", ErrInvalid, err)
			}
			return n.accept(p, &h)
		case "heartbeat":
			n.mu.Lock()
			p.lastSeen = time.Now()
			n.mu.Unlock()
		case "goodbye":
			return errGoodbye
		}
		return nil
	})
}

// accept takes a peer's hello: its capabilities go to the registry and
// the peers it names are followed too.
func (n *Node) accept(p *peer, h *Hello) error {
	if err := n.checkHello(h); err != nil {
		return err
	}
	if h.Node.ID == n.id {
		return errSelf
	}
	n.mu.Lock()
	if p.id != "" && p.id != h.Node.ID {
		// Another node now answers at this URL: the old one is gone.
		old := p.id
		n.mu.Unlock()
		n.dropPeer(old, fmt.Errorf("node %s now answers at %s", h.Node.ID, p.url), true)
		n.mu.Lock()
	}
	for _, q := range n.peers {
		if q != p && q.id == h.Node.ID && q.state == "up" {
			n.mu.Unlock()
			return fmt.Errorf("node %s is already followed at %s", h.Node.ID, q.url)
		}
	}
	fresh := p.state != "up"
	p.id, p.state, p.err, p.lastSeen, p.failures = h.Node.ID, "up", "", time.Now(), 0
	for _, u := range h.Peers {
		n.addPeerLocked(u, "hello")
	}
	n.mu.Unlock()
	n.reg.Set(h.Node.ID, p.url, h.Capabilities)
	if fresh {
		n.log.Info("network: peer up", "node", h.Node.ID, "url", p.url, "capabilities", len(h.Capabilities))
	}
	return nil
}

// checkHello refuses a malformed hello or one with too many capabilities.
func (n *Node) checkHello(h *Hello) error {
	if h.Node.ID == "" {
		return fmt.Errorf("%w: hello without a node id", ErrInvalid)
	}
	if len(h.Capabilities) > n.opts.MaxCapabilities {
		return fmt.Errorf("%w: hello of node %s carries %d capabilities; the limit is %d", ErrTooMany, h.Node.ID, len(h.Capabilities), n.opts.MaxCapabilities)
	}
	for _, c := range h.Capabilities {
		if err := c.Validate(); err != nil {
			return fmt.Errorf("hello of node %s: %w", h.Node.ID, err)
		}
	}
	for _, u := range h.Peers {
		if checkURL(u) != nil {
			return fmt.Errorf("%w: hello of node %s names the peer %q", ErrInvalid, h.Node.ID, u)
		}
	}
	return nil
}

// sayHello posts the node's hello to url and returns the peer's.
func (n *Node) sayHello(ctx context.Context, url string) (*Hello, error) {
	hctx, cancel := context.WithTimeout(ctx, n.opts.FailAfter)
	defer cancel()
	var h Hello
	if err := n.exchange(hctx, "hello", url+PathHello, n.hello(nil), &h); err != nil {
		return nil, err
	}
	if h.Type != "hello" {
		return nil, fmt.Errorf("%w: hello: the peer answered type %q", ErrInvalid, h.Type)
	}
	return &h, nil
}

// exchange posts msg as JSON to url and decodes the answer into out.
func (n *Node) exchange(ctx context.Context, what, url string, msg, out any) error {
	body, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	n.authorize(req)
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return answerErr(what, resp)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMessage)).Decode(out); err != nil {
		return fmt.Errorf("%w: %s: the peer's answer is not JSON of the right shape: %v", ErrInvalid, what, err)
	}
	return nil
}

// answerErr is the error of a peer's answer other than 200 OK to a
// hello or a feed. A peer that answers it is leaving said goodbye: it
// finishes the calls it has in progress, which are not canceled (a feed
// opened just after the peer began to leave never carries the goodbye).
func answerErr(what string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if resp.StatusCode == http.StatusServiceUnavailable && json.Unmarshal(b, &e) == nil && e.Error.Code == "leaving" {
		return fmt.Errorf("%s: %w", what, errGoodbye)
	}
	return fmt.Errorf("%s: %s: %s", what, resp.Status, strings.TrimSpace(string(b)))
}

func (n *Node) authorize(req *http.Request) {
	if n.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+n.opts.Token)
	}
}

// directoryLoop announces the node in the store's node table and follows
// the other nodes listed there, until the node leaves: then it removes
// the node's row.
func (n *Node) directoryLoop(dir store.NodeDirectory) {
	defer n.wg.Done()
	n.mu.Lock()
	url, done := n.url, n.dirDone
	n.mu.Unlock()
	defer close(done)
	t := time.NewTicker(n.heartbeat())
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(n.ctx, n.opts.FailAfter)
		if url != "" {
			if err := dir.AnnounceNode(ctx, n.id, url); err != nil && n.ctx.Err() == nil {
				n.log.Warn("network: announcing the node in the store failed", "err", err)
			}
		}
		nodes, err := dir.Nodes(ctx, n.opts.FailAfter)
		cancel()
		if err == nil {
			n.mu.Lock()
			for _, nd := range nodes {
				if nd.ID != n.id {
					n.addPeerLocked(nd.URL, "store")
				}
			}
			n.mu.Unlock()
		}
		select {
		case <-n.leaving:
		case <-n.ctx.Done():
		case <-t.C:
			continue
		}
		if url != "" {
			ctx, cancel := context.WithTimeout(context.Background(), n.opts.FailAfter)
			if err := dir.RemoveNode(ctx, n.id); err != nil {
				n.log.Warn("network: removing the node from the store failed", "err", err)
			}
			cancel()
		}
		return
	}
}
