package network_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/network"
)

// frozenProvider is a peer sharing the tool "freeze" whose calls never
// answer: each is reported on called, and on abandoned once the caller
// gave it up (closed its request). Closing leave makes the peer leave:
// its feed ends and it refuses hellos.
type frozenProvider struct {
	*httptest.Server
	called, abandoned chan struct{}
	leave             chan struct{}
}

func newFrozenProvider(t *testing.T) *frozenProvider {
	t.Helper()
	f := &frozenProvider{called: make(chan struct{}, 8), abandoned: make(chan struct{}, 8), leave: make(chan struct{})}
	hello, _ := json.Marshal(network.Hello{Type: "hello", Node: network.NodeInfo{ID: "frozen"},
		Capabilities: []network.Capability{{Name: "freeze", Kind: network.KindTool, InputSchema: json.RawMessage(`{"type":"object"}`)}}})
	release := make(chan struct{})
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case network.PathHello:
			select {
			case <-f.leave:
				http.Error(w, "gone", http.StatusServiceUnavailable)
			default:
				_, _ = w.Write(hello)
			}
		case network.PathFeed:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: hello\ndata: %s\n\n", hello)
			w.(http.Flusher).Flush()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-f.leave:
					return
				case <-r.Context().Done():
					return
				case <-release:
					return
				case <-tick.C:
					fmt.Fprint(w, "event: heartbeat\ndata: {}\n\n")
					w.(http.Flusher).Flush()
				}
			}
		case network.PathCall:
			// Read to the end so that the server notices the caller
			// closing the connection.
			_, _ = io.Copy(io.Discard, r.Body)
			f.called <- struct{}{}
			select {
			case <-r.Context().Done():
				f.abandoned <- struct{}{}
			case <-release:
			}
		}
	}))
	t.Cleanup(func() {
		close(release)
		f.Close()
	})
	return f
}

// wait receives from ch within a deadline, failing with what.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestFrozenProviderLeaves: a run's call in flight to a provider that
// freezes (its handler never answers) and leaves the catalog is canceled
// when the provider is removed: the run gets an error result naming why
// and finishes, and the call's request to the provider is ended.
func TestFrozenProviderLeaves(t *testing.T) {
	f := newFrozenProvider(t)
	consumer, _ := startNode(t, network.Options{ID: "room", Peers: []string{f.URL}, FailAfter: 300 * time.Millisecond}, nil)
	rt, err := swarm.New(swarm.Config{Model: scripted.New(scripted.Script{
		"order": {{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "freeze", Arguments: map[string]any{}}}}, {Text: "gave up"}},
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(swarm.Define[string, string]("order", "Orders", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Order.", Tools: []swarm.Tool{consumer.Discover("freeze")}}
	})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := rt.Start(ctx, "order", json.RawMessage(`"eggs"`))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, f.called, "the call to reach the provider")
	close(f.leave)
	wait(t, f.abandoned, "the consumer to give up the call to the provider that left")
	rs := completedToolResults(t, ctx, rt, id)
	if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Output, "frozen") || !strings.Contains(rs[0].Output, "left the network") {
		t.Fatalf("tool results: %+v", rs)
	}
}

// completedToolResults waits (bounded by ctx) for run id to complete and
// returns its tool results.
func completedToolResults(t *testing.T, ctx context.Context, rt *swarm.Runtime, id string) []swarm.Event {
	t.Helper()
	st, err := rt.Wait(ctx, id)
	if err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("run: %+v %v", st, err)
	}
	evs, err := rt.History(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []swarm.Event
	for _, ev := range evs {
		if ev.Type == swarm.EventToolResult {
			out = append(out, ev)
		}
	}
	return out
}

// TestCallTimeout: a call to a provider that stays in the catalog but
// never answers ends at CallTimeout with ErrCallTimeout, and its request
// to the provider is ended.
func TestCallTimeout(t *testing.T) {
	f := newFrozenProvider(t)
	consumer, _ := startNode(t, network.Options{ID: "room", Peers: []string{f.URL}, CallTimeout: 200 * time.Millisecond}, nil)
	done := make(chan error, 1)
	go func() {
		_, err := consumer.Discover("freeze").Call(context.Background(), json.RawMessage(`{}`))
		done <- err
	}()
	wait(t, f.called, "the call to reach the provider")
	wait(t, f.abandoned, "the consumer to give up the call")
	select {
	case err := <-done:
		if !errors.Is(err, network.ErrCallTimeout) || !strings.Contains(err.Error(), "freeze") {
			t.Fatalf("call: %v, want ErrCallTimeout naming the capability", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not return")
	}
}

// TestLeaveKeepsCallsInFlight: a provider that leaves (as swarm serve
// does at SIGTERM) is dropped by its followers at once, but a call in
// flight to it is still answered. The follower learns it from the goodbye
// of its feed, or, when its feed was not open yet as the provider began
// to leave (a call may start as soon as the hello is answered), from the
// feed's "leaving" answer, which is a goodbye too.
func TestLeaveKeepsCallsInFlight(t *testing.T) {
	t.Run("goodbye on the feed", func(t *testing.T) { leaveDuringCall(t, false) })
	t.Run("feed opened after leaving", func(t *testing.T) { leaveDuringCall(t, true) })
}

// leaveDuringCall has a provider leave while a call to it is in flight
// and checks the call is answered. With lateFeed the consumer reaches the
// provider through a proxy that holds the feed's request until the
// provider has begun to leave.
func leaveDuringCall(t *testing.T, lateFeed bool) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	slow := swarm.NewTool("slow-stock", "Checks the stock slowly", func(ctx context.Context, in stockIn) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
			return in.Item + ": 3 left", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	// FailAfter is long so that only the goodbye removes the provider.
	p, ps := startNode(t, network.Options{ID: "kitchen", FailAfter: time.Minute}, nil, network.ShareTool(slow, "food"))
	peer, feedGate := ps.URL, make(chan struct{})
	if lateFeed {
		target, err := url.Parse(ps.URL)
		if err != nil {
			t.Fatal(err)
		}
		rp := httputil.NewSingleHostReverseProxy(target)
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == network.PathFeed {
				select {
				case <-feedGate:
				case <-r.Context().Done():
					return
				}
			}
			rp.ServeHTTP(w, r)
		}))
		t.Cleanup(func() {
			proxy.CloseClientConnections()
			proxy.Close()
		})
		peer = proxy.URL
	}
	c, _ := startNode(t, network.Options{ID: "room", Peers: []string{peer}, FailAfter: time.Minute}, nil)
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := c.Discover("slow-stock").Call(context.Background(), json.RawMessage(`{"item":"eggs"}`))
		done <- result{out, err}
	}()
	wait(t, started, "the call to start")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	asked := time.Now()
	if err := p.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	close(feedGate)
	eventually(t, "the room to drop the kitchen", func() bool { return c.Registry().Len() == 0 })
	if code, _ := post(t, ps.URL+network.PathHello, "", `{"type":"hello","node":{"id":"late"}}`); code != http.StatusServiceUnavailable {
		t.Fatalf("hello to a leaving node: %d, want 503", code)
	}
	close(release)
	select {
	case r := <-done:
		if r.err != nil || r.out != "eggs: 3 left" {
			t.Fatalf("call in flight: %q %v", r.out, r.err)
		}
	case <-time.After(20 * time.Second):
		// Its own bound, not what Leave left of ctx: a slow Leave on a
		// busy machine is not a lost call.
		t.Fatalf("the call in flight did not return within 20s of its release (%s after Leave was asked)", time.Since(asked))
	}
}
