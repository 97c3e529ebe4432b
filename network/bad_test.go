package network_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/network"
)

func post(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, json.NewDecoder(resp.Body).Decode(new(any)))
	return resp.StatusCode, b.String()
}

func TestUnknownCapability(t *testing.T) {
	var calls atomic.Int32
	_, s := startNode(t, network.Options{ID: "p"}, nil, network.ShareTool(counterTool("check-inventory", &calls), "food"))
	if code, _ := post(t, s.URL+network.PathCall, "", `{"name":"nope","input":{}}`); code != http.StatusNotFound {
		t.Fatalf("call of an unknown capability: %d, want 404", code)
	}
	if code, _ := post(t, s.URL+network.PathCall, "", `{"name":"check-inventory","version":"9","input":{}}`); code != http.StatusNotFound {
		t.Fatalf("call of an unknown version: %d, want 404", code)
	}
	c, _ := startNode(t, network.Options{ID: "c", Peers: []string{s.URL}}, nil)
	eventually(t, "provider", func() bool { return c.Registry().Len() == 1 })
	_, err := c.Discover("nope").Call(context.Background(), json.RawMessage(`{}`))
	if !errors.Is(err, network.ErrNoProvider) || !strings.Contains(err.Error(), "check-inventory") {
		t.Fatalf("unknown capability: %v", err)
	}
	// Arguments the provider's schema refuses are the tool's error, not
	// a reason to fail over.
	_, err = c.Discover("check-inventory").Call(context.Background(), json.RawMessage(`{"item":3}`))
	if err == nil || errors.Is(err, network.ErrNoProvider) || calls.Load() != 0 {
		t.Fatalf("bad arguments: %v (calls %d)", err, calls.Load())
	}
}

func TestGarbagePeer(t *testing.T) {
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("\x00\x01 this is not a hello {{{"))
	}))
	defer garbage.Close()
	var calls atomic.Int32
	_, good := startNode(t, network.Options{ID: "good"}, nil, network.ShareTool(counterTool("check-inventory", &calls), "food"))
	c, _ := startNode(t, network.Options{ID: "c", Peers: []string{garbage.URL, good.URL}}, nil)
	eventually(t, "the good peer", func() bool { return c.Registry().Len() == 1 })
	// The peers are tried at once, in no order: the garbage one may still
	// be connecting when the good one is up.
	eventually(t, "the garbage peer to be tried", func() bool {
		for _, p := range c.Peers() {
			if p.URL == garbage.URL && p.State != "connecting" {
				return true
			}
		}
		return false
	})
	for _, p := range c.Peers() {
		if p.URL == garbage.URL && (p.State != "down" || !strings.Contains(p.Error, "hello")) {
			t.Fatalf("garbage peer: %+v", p)
		}
	}
	// Garbage sent to a node is refused with a clear error.
	for _, body := range []string{`{{{`, `{"type":"hello"}`, `{"type":"bye","node":{"id":"x"}}`,
		`{"type":"hello","node":{"id":"x"},"capabilities":[{"name":"a b","kind":"tool"}]}`,
		`{"type":"hello","node":{"id":"x"},"capabilities":[{"name":"a","kind":"robot"}]}`} {
		if code, _ := post(t, good.URL+network.PathHello, "", body); code != http.StatusBadRequest {
			t.Fatalf("hello %s: %d, want 400", body, code)
		}
	}
	if code, _ := post(t, good.URL+network.PathCall, "", `not json`); code != http.StatusBadRequest {
		t.Fatalf("garbage call: %d", code)
	}
}

func TestBadToken(t *testing.T) {
	a, err := auth.New([]auth.Token{{Name: "peers", Secret: "s3cret"}, {Name: "stock-only", Secret: "stock", Capabilities: []string{"check-inventory"}}})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	_, s := startNode(t, network.Options{ID: "p"}, a,
		network.ShareTool(counterTool("check-inventory", &calls), "food"),
		network.ShareTool(counterTool("dietary-check", &calls), "food"))
	bad, _ := startNode(t, network.Options{ID: "bad", Peers: []string{s.URL}, Token: "wrong"}, nil)
	limited, _ := startNode(t, network.Options{ID: "limited", Peers: []string{s.URL}, Token: "stock"}, nil)
	eventually(t, "the limited node's view", func() bool { return limited.Registry().Len() == 1 })
	if ps := bad.Peers(); len(ps) != 1 || ps[0].State != "down" || !strings.Contains(ps[0].Error, "401") || bad.Registry().Len() != 0 {
		t.Fatalf("peer with a bad token: %+v, %d offers", ps, bad.Registry().Len())
	}
	if _, ok := limited.Registry().Find("dietary-check"); ok {
		t.Fatal("a token limited to check-inventory sees dietary-check")
	}
	if code, _ := post(t, s.URL+network.PathCall, "stock", `{"name":"dietary-check","input":{"item":"x"}}`); code != http.StatusForbidden {
		t.Fatalf("call beyond the token's capabilities: %d, want 403", code)
	}
	if _, err := limited.Discover("check-inventory").Call(context.Background(), json.RawMessage(`{"item":"eggs"}`)); err != nil {
		t.Fatal(err)
	}
}

func manyCaps(n int) []network.Capability {
	out := make([]network.Capability, n)
	for i := range out {
		out[i] = network.Capability{Name: fmt.Sprintf("tool-%d", i), Kind: network.KindTool, Tags: []string{"x"}}
	}
	return out
}

func TestHelloWithTenThousandCapabilities(t *testing.T) {
	var calls atomic.Int32
	_, s := startNode(t, network.Options{ID: "p"}, nil, network.ShareTool(counterTool("check-inventory", &calls), "food"))
	h, _ := json.Marshal(network.Hello{Type: "hello", Node: network.NodeInfo{ID: "flood"}, Capabilities: manyCaps(10000)})
	code, _ := post(t, s.URL+network.PathHello, "", string(h))
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("hello with 10,000 capabilities: %d, want 413", code)
	}
	// A peer that answers with 10,000 is refused, and the node keeps
	// working with its other peers.
	flood := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(h)
	}))
	defer flood.Close()
	c, _ := startNode(t, network.Options{ID: "c", Peers: []string{flood.URL, s.URL}}, nil)
	eventually(t, "the good peer", func() bool { return c.Registry().Len() == 1 })
	eventually(t, "the flood refused", func() bool {
		for _, p := range c.Peers() {
			if p.URL == flood.URL && p.State == "down" && strings.Contains(p.Error, "10000 capabilities") {
				return true
			}
		}
		return false
	})
	if c.Registry().Len() != 1 {
		t.Fatalf("registry has %d offers", c.Registry().Len())
	}
	// A node configured for more takes them all, indexed by tag.
	r := network.NewRegistry()
	r.Set("flood", flood.URL, manyCaps(10000))
	if r.Len() != 10000 || len(r.ByTag("x")) != 10000 {
		t.Fatalf("registry: %d offers", r.Len())
	}
}

type v2In struct {
	Item     string `json:"item"`
	Quantity int    `json:"quantity"`
}

func TestDuplicateNamesDifferentSchemas(t *testing.T) {
	var calls atomic.Int32
	v1 := network.ShareTool(counterTool("check-inventory", &calls), "food").WithVersion("1.9")
	var v2calls atomic.Int32
	v2 := network.ShareTool(swarm.NewTool("check-inventory", "Stock with quantities", func(ctx context.Context, in v2In) (string, error) {
		v2calls.Add(1)
		return fmt.Sprintf("%d %s", in.Quantity, in.Item), nil
	}), "food").WithVersion("1.10")
	_, s1 := startNode(t, network.Options{ID: "a-old"}, nil, v1)
	_, s2 := startNode(t, network.Options{ID: "b-new"}, nil, v2)
	c, _ := startNode(t, network.Options{ID: "c", Peers: []string{s1.URL, s2.URL}}, nil)
	eventually(t, "both", func() bool { return len(c.Registry().Providers("check-inventory")) == 2 })
	ps := c.Registry().Providers("check-inventory")
	if ps[0].Node != "b-new" || ps[0].Version != "1.10" || ps[1].Version != "1.9" || string(ps[0].InputSchema) == string(ps[1].InputSchema) {
		t.Fatalf("providers: %+v", ps)
	}
	out, err := c.Discover("check-inventory").Call(context.Background(), json.RawMessage(`{"item":"eggs","quantity":2}`))
	if err != nil || out != "2 eggs" || v2calls.Load() != 1 || calls.Load() != 0 {
		t.Fatalf("call went to %q, %v (v1 %d, v2 %d)", out, err, calls.Load(), v2calls.Load())
	}
}

// TestHungPeer: a peer whose feed goes silent (a hung or partitioned
// process: its connection stays open) is removed once FailAfter passes
// without a heartbeat, and not re-added while it does not answer hellos.
func TestHungPeer(t *testing.T) {
	var hellos atomic.Int32
	hello, _ := json.Marshal(network.Hello{Type: "hello", Node: network.NodeInfo{ID: "hung"},
		Capabilities: []network.Capability{{Name: "check-inventory", Kind: network.KindTool}}})
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case network.PathHello:
			if hellos.Add(1) > 1 {
				select { // hung: never answers again
				case <-r.Context().Done():
				case <-release:
				}
				return
			}
			_, _ = w.Write(hello)
		case network.PathFeed:
			w.Header().Set("Content-Type", "text/event-stream")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	defer hung.Close()
	defer close(release)
	c, _ := startNode(t, network.Options{ID: "c", Peers: []string{hung.URL}, FailAfter: 300 * time.Millisecond}, nil)
	if c.Registry().Len() != 1 {
		t.Fatalf("registry has %d offers after the hello", c.Registry().Len())
	}
	eventually(t, "the hung peer removed", func() bool { return c.Registry().Len() == 0 })
	if ps := c.Peers(); len(ps) != 1 || ps[0].State != "down" {
		t.Fatalf("peers: %+v", ps)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHostilePeerEndlessEvent: a peer named in an unauthenticated hello
// streams one feed event of endless data lines. The node stops reading it
// past the event limit (16 MiB), with a clear error, and drops the peer:
// what it read is bounded by bytes, whatever the time it took.
func TestHostilePeerEndlessEvent(t *testing.T) {
	const giveUp = 96 << 20 // the hostile peer stops here if nobody stopped it
	hello, _ := json.Marshal(network.Hello{Type: "hello", Node: network.NodeInfo{ID: "hostile"}})
	sent := make(chan int64, 4)
	line := []byte("data: " + strings.Repeat("x", 32<<10) + "\n")
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case network.PathHello:
			_, _ = w.Write(hello)
		case network.PathFeed:
			w.Header().Set("Content-Type", "text/event-stream")
			var n int64
			defer func() { sent <- n }()
			k, err := io.WriteString(w, "event: hello\n")
			for n += int64(k); err == nil && n < giveUp; n += int64(k) {
				k, err = w.Write(line)
			}
		}
	}))
	defer hostile.Close()
	var logs syncBuffer
	// FailAfter is long so that only the size ends the feed, not silence.
	victim, s := startNode(t, network.Options{ID: "victim", FailAfter: time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
	if code, body := post(t, s.URL+network.PathHello, "", `{"type":"hello","node":{"id":"hostile","url":"`+hostile.URL+`"}}`); code != http.StatusOK {
		t.Fatalf("hello naming the hostile peer: %d %s", code, body)
	}
	var n int64
	select {
	case n = <-sent:
	case <-time.After(time.Minute):
		t.Fatal("the node never opened the hostile peer's feed, or never stopped reading it")
	}
	// The node read at most the limit; the socket buffers between the
	// two hold a few MiB more.
	t.Logf("the hostile peer sent %d bytes", n)
	if n >= 32<<20 {
		t.Fatalf("the node took %d MiB of one feed event before stopping", n>>20)
	}
	eventually(t, "the hostile peer dropped with a clear error", func() bool {
		return strings.Contains(logs.String(), "peer dropped") && strings.Contains(logs.String(), "larger than 16777216 bytes")
	})
	eventually(t, "the hostile peer forgotten", func() bool { return len(victim.Peers()) == 0 })
}
