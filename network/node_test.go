package network_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/network"
)

type stockIn struct {
	Item string `json:"item"`
}

// startNode starts a node serving its handler on a loopback test server.
func startNode(t testing.TB, opts network.Options, a *auth.Authenticator, items ...network.Shared) (*network.Node, *httptest.Server) {
	t.Helper()
	if opts.FailAfter == 0 {
		opts.FailAfter = 600 * time.Millisecond
	}
	n, err := network.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Share(items...); err != nil {
		t.Fatal(err)
	}
	var h http.Handler = n.Handler()
	if a != nil {
		h = a.Middleware(h)
	}
	srv := httptest.NewServer(h)
	if err := n.Start(context.Background(), network.StartOptions{URL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return n, srv
}

// eventually waits (bounded) for cond.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func counterTool(name string, calls *atomic.Int32) swarm.Tool {
	return swarm.NewTool(name, "Checks the stock of an item", func(ctx context.Context, in stockIn) (string, error) {
		calls.Add(1)
		return fmt.Sprintf("%s: 3 left (key %s)", in.Item, swarm.IdempotencyKey(ctx)), nil
	})
}

func TestDiscoveryAndFailover(t *testing.T) {
	var c1, c2 atomic.Int32
	_, s1 := startNode(t, network.Options{ID: "kitchen-1"}, nil, network.ShareTool(counterTool("check-inventory", &c1), "food", "stock"))
	_, s2 := startNode(t, network.Options{ID: "kitchen-2", Peers: []string{s1.URL}}, nil, network.ShareTool(counterTool("check-inventory", &c2), "food", "stock"))
	consumer, _ := startNode(t, network.Options{ID: "room", Peers: []string{s1.URL}}, nil)

	// One configured peer is enough: kitchen-1 names kitchen-2.
	eventually(t, "two providers", func() bool { return len(consumer.Registry().Providers("check-inventory")) == 2 })
	if got := len(consumer.Registry().ByTag("food")); got != 2 {
		t.Fatalf("ByTag(food) = %d offers, want 2", got)
	}
	if o, ok := consumer.Registry().Find("check-inventory"); !ok || o.Node != "kitchen-1" {
		t.Fatalf("Find = %+v %v", o, ok)
	}
	tool := consumer.Discover("check-inventory")
	out, err := tool.Call(context.Background(), json.RawMessage(`{"item":"eggs"}`))
	if err != nil || !strings.HasPrefix(out, "eggs: 3 left") {
		t.Fatalf("call = %q, %v", out, err)
	}
	// kitchen-1 dies: its capability is removed, calls go to kitchen-2.
	s1.CloseClientConnections()
	s1.Close()
	eventually(t, "kitchen-1 removed", func() bool { return len(consumer.Registry().Providers("check-inventory")) == 1 })
	before := c2.Load()
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"item":"milk"}`)); err != nil {
		t.Fatal(err)
	}
	if c2.Load() != before+1 {
		t.Fatalf("kitchen-2 served %d calls, want %d", c2.Load(), before+1)
	}
	s2.CloseClientConnections()
	s2.Close()
	eventually(t, "all removed", func() bool { return consumer.Registry().Len() == 0 })
	_, err = tool.Call(context.Background(), json.RawMessage(`{"item":"milk"}`))
	if !errors.Is(err, network.ErrNoProvider) {
		t.Fatalf("call with no provider: %v, want ErrNoProvider", err)
	}
}

func TestDedupByIdempotencyKey(t *testing.T) {
	var calls atomic.Int32
	_, s1 := startNode(t, network.Options{ID: "p"}, nil, network.ShareTool(counterTool("check-inventory", &calls), "food"))
	consumer, _ := startNode(t, network.Options{ID: "c", Peers: []string{s1.URL}}, nil)
	eventually(t, "provider", func() bool { return consumer.Registry().Len() == 1 })
	ctx := swarm.WithCallKey(context.Background(), "run_1", "t1/tool/call_1")
	tool := consumer.Discover("check-inventory")
	a, err := tool.Call(ctx, json.RawMessage(`{"item":"eggs"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := tool.Call(ctx, json.RawMessage(`{"item":"eggs"}`))
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || a != b || !strings.Contains(a, "key run_1/t1/tool/call_1") {
		t.Fatalf("calls = %d, outputs %q %q", calls.Load(), a, b)
	}
}
