package network_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/network"
	"github.com/swarmrt/swarm/store"
)

// TestSharedSwarmAndAgent: a shared swarm and a shared agent are called
// as runs of the provider keyed by the caller's idempotency key: a
// repeated call finds the run instead of starting another.
func TestSharedSwarmAndAgent(t *testing.T) {
	ctx := context.Background()
	rt, err := swarm.New(swarm.Config{Model: scripted.New(scripted.Script{
		"prepare-meal": {{Text: "salmon, ready"}, {Text: "a second meal"}},
		"chef":         {{Text: "the chef's soup"}},
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(swarm.Define[string, string]("prepare-meal", "Prepares a meal", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Cook."}
	})); err != nil {
		t.Fatal(err)
	}
	p, err := network.New(network.Options{ID: "kitchen"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Share(network.ShareSwarm("prepare-meal", "food"), network.ShareAgent(&swarm.Agent{Name: "chef", Description: "Cooks soup", Instructions: "Cook soup."}, "food")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	if err := p.Start(ctx, network.StartOptions{Runtime: rt, URL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	c, _ := startNode(t, network.Options{ID: "room", Peers: []string{srv.URL}}, nil)
	if o, ok := c.Registry().Find("chef"); !ok || o.Kind != network.KindAgent || !strings.Contains(string(o.InputSchema), "request") {
		t.Fatalf("chef: %+v", o)
	}
	key := swarm.WithCallKey(ctx, "run_9", "t2/tool/call_4")
	for range 2 {
		out, err := c.Discover("prepare-meal").Call(key, json.RawMessage(`{"request":"salmon"}`))
		if err != nil || out != "salmon, ready" {
			t.Fatalf("prepare-meal: %q %v", out, err)
		}
	}
	out, err := c.Discover("chef").Call(key, json.RawMessage(`{"request":"soup"}`))
	if err != nil || out != "the chef's soup" {
		t.Fatalf("chef: %q %v", out, err)
	}
	runs, err := rt.List(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("provider runs: %d, want one per capability", len(runs))
	}
	for _, r := range runs {
		if r.ID != network.RunID("prepare-meal", "run_9/t2/tool/call_4") && r.Swarm == "prepare-meal" {
			t.Fatalf("run id %s is not derived from the key", r.ID)
		}
	}
	// Text swarms take {"request": ...}: anything else is the
	// capability's error, reported as such.
	if _, err := c.Discover("prepare-meal").Call(ctx, json.RawMessage(`{"what":1}`)); err == nil || strings.Contains(err.Error(), "no provider") {
		t.Fatalf("bad input: %v", err)
	}
}
