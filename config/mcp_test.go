package config_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// calc serves an MCP server with the tools add and sub over streamable
// HTTP; requests need the header X-Key: secret.
func calc(t *testing.T) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "calc", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds"}, func(_ context.Context, _ *sdk.CallToolRequest, in addArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "sub", Description: "Subtracts"}, func(_ context.Context, _ *sdk.CallToolRequest, in addArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A - in.B)}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "secret" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestMCPServers runs a YAML swarm whose agent uses the tools of an MCP
// server named in mcp_servers, with a header taken from the environment
// and a deny filter.
func TestMCPServers(t *testing.T) {
	t.Setenv("CALC_KEY", "secret")
	f, err := config.Parse([]byte(`
version: 1
mcp_servers:
  calc:
    url: `+calc(t)+`
    headers: {X-Key: "${CALC_KEY}"}
    deny: [sub]
    timeout: 10s
agents:
  adder:
    description: Adds numbers
    instructions: Add.
    toolsets: [calc]
swarms:
  sum:
    instructions: Sum {{.Input}}.
    handoffs: [adder]
`), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.ToolsetNames(); len(got) != 1 || got[0] != "calc" {
		t.Errorf("toolsets %v", got)
	}
	m := scripted.New(scripted.Script{
		"sum":   {scripted.Tools(scripted.CallTool("handoff_to_adder", map[string]any{"request": "2+3"})), scripted.Text("5")},
		"adder": {scripted.Tools(scripted.CallTool("calc__add", map[string]any{"a": 2, "b": 3}), scripted.CallTool("calc__sub", map[string]any{"a": 2, "b": 3})), scripted.Text("2+3=5")},
	})
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Register(rt); err != nil {
		t.Fatal(err)
	}
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "sum", []byte(`"2 and 3"`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Wait(ctx, id)
	if err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("%+v %v", st, err)
	}
	evs, _ := rt.History(ctx, id, 0)
	var got []string
	for _, ev := range evs {
		if ev.Type == swarm.EventToolResult {
			got = append(got, fmt.Sprintf("%s=%s/%v", ev.Tool, ev.Output, ev.IsError))
		}
	}
	// calc__sub is denied: the model's call of it is an unknown tool.
	slices.Sort(got)
	if len(got) != 2 || got[0] != "calc__add=5/false" || !strings.HasPrefix(got[1], "calc__sub=") || !strings.HasSuffix(got[1], "/true") {
		t.Errorf("tool results %q", got)
	}
	rt.Close()
	if err := f.Close(); err != nil {
		t.Error(err)
	}
}

func TestMCPServerMistakes(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"mcp_servers: {a: {}}", "missing command"},
		{"mcp_servers: {a: {command: [x], url: 'http://x'}}", "not both"},
		{"mcp_servers: {a: {url: 'ftp://x'}}", "want an http"},
		{"mcp_servers: {a: {command: ./nope.sh}}", "not a string"},
		{"mcp_servers: {a: {command: [./nope.sh]}}", "nope.sh"},
		{"mcp_servers: {a: {url: 'http://x', timeout: soon}}", "invalid timeout"},
		{"mcp_servers: {a: {url: 'http://x', allow: [ '[' ]}}", "bad pattern"},
		{"mcp_servers: {a: {url: 'http://x', color: red}}", "unknown field"},
		{"mcp_servers: {a b: {url: 'http://x'}}", "may contain only"},
		{"agents: {x: {toolsets: [nope]}}", "unknown toolset"},
		{"mcp_servers: {a: {url: 'http://x'}}\nagents: {x: {toolsets: [a, a]}}", "listed twice"},
		{"swarms: {s: {toolsets: 3}}", "want a list"},
	} {
		_, err := config.Parse([]byte("version: 1\n"+c.yaml), "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.yaml, err, c.want)
		}
	}
}

// A server that cannot be reached makes Register fail and register nothing.
func TestMCPServerUnreachable(t *testing.T) {
	f, err := config.Parse([]byte(`
version: 1
mcp_servers:
  gone: {url: "http://127.0.0.1:1/mcp"}
swarms:
  s: {toolsets: [gone]}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rt, _ := swarm.New(swarm.Config{Store: memory.New()})
	defer rt.Close()
	if err := f.Register(rt); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("Register: %v", err)
	}
	if len(rt.Swarms()) != 0 {
		t.Error("a swarm was registered")
	}
}
