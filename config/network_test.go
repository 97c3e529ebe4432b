package config_test

import (
	"context"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/network"
)

func TestNetworkSection(t *testing.T) {
	f, err := config.Parse([]byte(`version: 1
model: scripted:script.yaml
tools:
  check-inventory:
    description: Stock
    command: ["sh", "-c", "echo ok"]
agents:
  chef:
    description: Cooks
network:
  id: kitchen
  peers: [http://127.0.0.1:1]
  fail_after: 2s
share:
  - tool: check-inventory
    tags: [food, stock]
    version: "2"
  - agent: chef
    tags: [food]
  - swarm: prepare-meal
    tags: [food, cooking]
swarms:
  prepare-meal:
    instructions: Cook.
    network_tools: {tags: [food], kinds: [tool]}
`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := f.Network()
	if n == nil || n.ID() != "kitchen" {
		t.Fatalf("node: %v", n)
	}
	rt, err := swarm.New(swarm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := f.Register(rt); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the unreachable peer is not waited for
	if err := n.Start(ctx, network.StartOptions{Runtime: rt}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range n.Shared() {
		got = append(got, string(c.Kind)+":"+c.Name+":"+strings.Join(c.Tags, ",")+":"+c.Version)
	}
	want := "tool:check-inventory:food,stock:2 agent:chef:food: swarm:prepare-meal:food,cooking:"
	if strings.Join(got, " ") != want {
		t.Fatalf("shared %v, want %s", got, want)
	}
	for _, d := range rt.Swarms() {
		if d.ID() == "prepare-meal" {
			if tags := d.(interface{ Tags() []string }).Tags(); strings.Join(tags, ",") != "food,cooking" {
				t.Fatalf("prepare-meal tags %v", tags)
			}
		}
	}
}

func TestNetworkBadInput(t *testing.T) {
	base := "version: 1\ntools:\n  t:\n    command: [sh]\nagents:\n  a: {}\n"
	for _, tc := range []struct{ name, yaml, msg string }{
		{"unknown tool", base + "share:\n  - tool: nope\n", `share: unknown tool "nope"`},
		{"two kinds", base + "share:\n  - {tool: t, agent: a}\n", "share: an entry shares one tool, agent or swarm"},
		{"nothing", base + "share:\n  - tags: [x]\n", "share: an entry needs tool, agent or swarm"},
		{"shared twice", base + "share:\n  - tool: t\n  - tool: t\n", `share: "t" is shared twice`},
		{"bad tag", base + "share:\n  - {tool: t, tags: [\"a b\"]}\n", `tag "a b"`},
		{"bad fail_after", base + "network: {fail_after: soon}\n", `network: invalid fail_after "soon"`},
		{"bad call_timeout", base + "network: {call_timeout: -1s}\n", `network: invalid call_timeout "-1s"`},
		{"bad id", base + "network: {id: \"a b\"}\n", `node id "a b"`},
		{"bad peer", base + "network: {peers: [ftp://x]}\n", `peer URL "ftp://x"`},
		{"unset token", base + "network: {token_env: SWARM_TEST_UNSET_TOKEN}\n", "SWARM_TEST_UNSET_TOKEN is not set"},
		{"bad network_tools", base + "swarms:\n  s:\n    network_tools: 3\n", "network_tools: want all, a list of capability names"},
		{"bad kind", base + "swarms:\n  s:\n    network_tools: {kinds: [robot]}\n", `kind "robot"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.yaml), t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %q", err, tc.msg)
			}
		})
	}
}
