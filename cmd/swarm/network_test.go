package main_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/swarmrt/swarm/network"
	"github.com/swarmrt/swarm/store/postgres"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
)

// netNode starts `swarm serve` with args in a fresh directory holding
// files (the swarm.yaml among them), with env added to its environment
// (the store is memory: unless env sets it).
func netNode(t *testing.T, ctx context.Context, files map[string]string, env []string, args ...string) *served {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return serve(t, ctx, dir, append([]string{"SWARM_STORE=memory:"}, env...), args...)
}

// within polls cond every 20ms until it holds, failing the test with what
// when bound passes first.
func within(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", bound, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kitchenYAML shares a command tool and a swarm; two tokens may call it:
// one everything, one only check-inventory.
const kitchenYAML = `version: 1
model: scripted:script.yaml
tools:
  check-inventory:
    description: Check current inventory levels
    command: ["./inventory.sh"]
    input_schema: {type: object, properties: {item: {type: string}}, required: [item]}
swarms:
  prepare-meal: {description: Prepares a meal, instructions: "Prepare {{.Input}}."}
network: {id: kitchen, fail_after: 1s}
serve:
  tokens:
    - {name: all, secret_env: ALL_TOKEN}
    - {name: stock-only, secret_env: STOCK_TOKEN, capabilities: [check-inventory]}
share:
  - {tool: check-inventory, tags: [food, stock]}
  - {swarm: prepare-meal, tags: [food, cooking]}
`

// TestServeTokenCapabilities: a token of the serve section limited to
// capabilities sees and calls only those through `swarm serve`: its hello,
// query and peers answers list only check-inventory (the node's own
// capabilities and those its peers offer), and a call of prepare-meal is
// refused with 403 as the Go API refuses it.
func TestServeTokenCapabilities(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tokens := []string{"ALL_TOKEN=all-s3cret", "STOCK_TOKEN=stock-s3cret"}
	kitchen := netNode(t, ctx, map[string]string{
		"swarm.yaml":   kitchenYAML,
		"script.yaml":  "prepare-meal:\n  - text: meal ready\n",
		"inventory.sh": "#!/bin/sh\necho 3 left\n",
	}, tokens)
	netNode(t, ctx, map[string]string{
		"swarm.yaml": `version: 1
tools:
  dietary-check: {description: Checks a diet, command: ["./diet.sh"]}
network: {id: pantry, peers: [` + kitchen.URL + `], token_env: ALL_TOKEN, fail_after: 1s}
share:
  - {tool: dietary-check, tags: [food]}
`,
		"diet.sh": "#!/bin/sh\necho fine\n",
	}, tokens)

	names := func(caps []network.Capability) []string {
		var out []string
		for _, c := range caps {
			out = append(out, c.Name)
		}
		return out
	}
	offered := func(st network.Status) []string {
		var out []string
		for _, o := range st.Capabilities {
			out = append(out, o.Name)
		}
		return out
	}
	var st network.Status
	within(t, 30*time.Second, "the kitchen to see the pantry's dietary-check", func() bool {
		st = network.Status{}
		return tokenJSON(t, "GET", kitchen.URL+network.PathPeers, "all-s3cret", "", &st) == 200 &&
			slices.Contains(offered(st), "dietary-check")
	})
	if got := names(st.Shared); !slices.Equal(got, []string{"check-inventory", "prepare-meal"}) {
		t.Fatalf("the full token's shared capabilities: %v", got)
	}

	st = network.Status{}
	if code := tokenJSON(t, "GET", kitchen.URL+network.PathPeers, "stock-s3cret", "", &st); code != 200 {
		t.Fatalf("peers with the limited token: %d", code)
	}
	if got := names(st.Shared); !slices.Equal(got, []string{"check-inventory"}) {
		t.Errorf("the limited token sees the shared capabilities %v, want [check-inventory]", got)
	}
	if got := offered(st); len(got) != 0 {
		t.Errorf("the limited token sees the peers' capabilities %v, want none", got)
	}
	for _, p := range st.Peers {
		if p.Capabilities != 0 {
			t.Errorf("the limited token sees %d capabilities of peer %s", p.Capabilities, p.Node)
		}
	}
	var h network.Hello
	if code := tokenJSON(t, "POST", kitchen.URL+network.PathHello, "stock-s3cret", `{"type":"hello","node":{"id":"probe"}}`, &h); code != 200 {
		t.Fatalf("hello with the limited token: %d", code)
	}
	if got := names(h.Capabilities); !slices.Equal(got, []string{"check-inventory"}) {
		t.Errorf("the limited token's hello lists %v, want [check-inventory]", got)
	}
	var q network.QueryResponse
	if code := tokenJSON(t, "POST", kitchen.URL+network.PathQuery, "stock-s3cret", `{"type":"capability_query","tag":"food"}`, &q); code != 200 {
		t.Fatalf("query with the limited token: %d", code)
	}
	if got := names(q.Capabilities); !slices.Equal(got, []string{"check-inventory"}) {
		t.Errorf("the limited token's query lists %v, want [check-inventory]", got)
	}
	var cr network.CallResponse
	if code := tokenJSON(t, "POST", kitchen.URL+network.PathCall, "stock-s3cret", `{"name":"prepare-meal","input":{"request":"salmon"}}`, &cr); code != 403 {
		t.Errorf("the limited token calls prepare-meal: %d %+v, want 403", code, cr)
	}
	cr = network.CallResponse{}
	if code := tokenJSON(t, "POST", kitchen.URL+network.PathCall, "stock-s3cret", `{"name":"check-inventory","input":{"item":"eggs"}}`, &cr); code != 200 || cr.IsError || cr.Output != "3 left" {
		t.Errorf("the limited token calls check-inventory: %d %+v", code, cr)
	}
}

// TestServeLeavesPromptly: SIGTERM to a `swarm serve` node with a peer
// following its feed: the node ends the feed at once, so the peer drops
// its capability long before fail_after or the shutdown timeout could
// (both a minute here), and the process exits.
func TestServeLeavesPromptly(t *testing.T) { leavePromptly(t, nil) }

// TestServeLeavesPromptlyPostgres is TestServeLeavesPromptly on one
// PostgreSQL store: the leaving node's row is gone from the node table.
func TestServeLeavesPromptlyPostgres(t *testing.T) {
	url := pgtest.URL(t, "pool_max_conns=4")
	leavePromptly(t, &url)
}

func leavePromptly(t *testing.T, pg *string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var env []string
	if pg != nil {
		env = []string{"SWARM_STORE=" + *pg}
	}
	args := []string{"--shutdown-timeout", "1m"}
	kitchen := netNode(t, ctx, map[string]string{
		"swarm.yaml": `version: 1
tools:
  check-inventory: {description: Stock, command: ["./inventory.sh"]}
network: {id: kitchen, fail_after: 1m}
share:
  - {tool: check-inventory, tags: [food]}
`,
		"inventory.sh": "#!/bin/sh\necho 3 left\n",
	}, env, args...)
	room := netNode(t, ctx, map[string]string{
		"swarm.yaml": "version: 1\nnetwork: {id: room, peers: [" + kitchen.URL + "], fail_after: 1m}\n",
	}, env, args...)
	offered := func() bool {
		var st network.Status
		if httpJSON(t, "GET", room.URL+network.PathPeers, "", &st) != 200 {
			t.Fatal("the room's status")
		}
		return slices.ContainsFunc(st.Capabilities, func(o network.Offer) bool { return o.Name == "check-inventory" })
	}
	within(t, 30*time.Second, "the room to see the kitchen's check-inventory", offered)
	if err := kitchen.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	within(t, 20*time.Second, "the room to drop the kitchen after its SIGTERM", func() bool { return !offered() })
	exitsCleanly(t, kitchen)
	if pg == nil {
		return
	}
	db, err := postgres.Open(ctx, *pg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	nodes, err := db.Nodes(ctx, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes {
		if nd.ID == "kitchen" {
			t.Fatalf("the kitchen's row is left in the node table: %+v\n%s", nd, kitchen.Log())
		}
	}
}
