package network_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The interop test runs the MCP Inspector CLI from npm, installed in
// interop/mcp by `npm ci` (as .ci/run does).
var interopDir, _ = filepath.Abs("../interop/mcp")

// inspect runs the MCP Inspector CLI against the MCP endpoint url and
// decodes its JSON output into v.
func inspect(t *testing.T, v any, url string, args ...string) {
	t.Helper()
	bin := filepath.Join(interopDir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		msg := "interop/mcp/node_modules is missing: run (cd interop/mcp && npm ci)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED, " + msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--cli", url, "--transport", "http"}, args...)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		t.Fatalf("inspector %v: output is not JSON: %v\n%s", args, err, out.String())
	}
}

// TestThirdPartyMCPClient: the MCP Inspector (a third-party client from
// npm) lists and calls the tools a swarm serve node shares, and a shared
// swarm is an A2A agent whose card carries the share's tags.
func TestThirdPartyMCPClient(t *testing.T) {
	p, dir := providerNode(t, "kitchen", "check-inventory", []string{"food", "stock"}, nil)
	url := p.URL + "/v1/network/mcp"
	var tools struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	inspect(t, &tools, url, "--method", "tools/list")
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "check-inventory" {
		t.Fatalf("tools: %+v", tools)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	inspect(t, &res, url, "--method", "tools/call", "--tool-name", "check-inventory", "--tool-arg", "item=eggs")
	if res.IsError || len(res.Content) != 1 || strings.TrimSpace(res.Content[0].Text) != "kitchen: in stock" {
		t.Fatalf("call: %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "calls.log")); strings.Count(string(b), "\n") != 1 {
		t.Fatalf("provider calls: %q, want one", b)
	}
}

// TestSharedSwarmIsA2AAgent: a swarm shared with tags is an A2A agent of
// the node whose card's skill carries the tags.
func TestSharedSwarmIsA2AAgent(t *testing.T) {
	dir := t.TempDir()
	y := `version: 1
model: scripted:script.yaml
swarms:
  prepare-meal:
    description: Prepares a meal
    instructions: Cook {{.Input}}.
share:
  - swarm: prepare-meal
    tags: [food, cooking]
`
	for name, body := range map[string]string{"swarm.yaml": y, "script.yaml": "prepare-meal:\n  - text: done\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := servetestServe(t, dir)
	resp, err := http.Get(p + "/a2a/prepare-meal/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card struct {
		Skills []struct {
			Tags []string `json:"tags"`
		} `json:"skills"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	if len(card.Skills) != 1 || !slices.Equal(card.Skills[0].Tags, []string{"food", "cooking"}) {
		t.Fatalf("card skills: %+v", card.Skills)
	}
}
