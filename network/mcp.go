package network

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm/auth"
)

// mcpServers caches one MCP server per token and generation of what the
// node shares: each offers the shared capabilities the token may use.
type mcpServers struct {
	mu sync.Mutex
	m  map[string]*sdk.Server
}

// mcpHandler serves the node's shared capabilities as MCP tools over the
// streamable HTTP transport: third-party MCP clients call them as peers
// do, a tools/call being a call without an idempotency key.
func (n *Node) mcpHandler() http.Handler {
	cache := &mcpServers{m: map[string]*sdk.Server{}}
	return auth.GuardHosts(sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		ctx := r.Context()
		h := n.hello(ctx)
		name := "anonymous"
		if p := auth.FromContext(ctx); p != nil {
			name = p.Name
		}
		key := fmt.Sprint(name, "\x00", h.Generation)
		cache.mu.Lock()
		defer cache.mu.Unlock()
		if s, ok := cache.m[key]; ok {
			return s
		}
		s := sdk.NewServer(&sdk.Implementation{Name: "swarm-network-" + n.id, Version: "1"}, &sdk.ServerOptions{
			Instructions: "The tools, agents and swarms node " + n.id + " shares on its network.",
		})
		for _, c := range h.Capabilities {
			in := c.InputSchema
			if len(in) == 0 {
				in = json.RawMessage(`{"type":"object"}`)
			}
			s.AddTool(&sdk.Tool{Name: c.Name, Description: c.Description, InputSchema: in}, n.mcpCall(c.Name))
		}
		clear(cache.m)
		cache.m[key] = s
		return s
	}, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true}))
}

func (n *Node) mcpCall(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args := req.Params.Arguments
		resp, err := n.perform(ctx, CallRequest{Name: name, Input: args})
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
		}
		return &sdk.CallToolResult{IsError: resp.IsError, Content: []sdk.Content{&sdk.TextContent{Text: resp.Output}}}, nil
	}
}
