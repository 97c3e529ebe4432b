package cli

import (
	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/server"
)

// swarm serve speaks MCP over streamable HTTP at /mcp, behind the same
// tokens as the HTTP API.
func init() {
	RegisterMounts(func(rt *swarm.Runtime, _ *auth.Authenticator, _ string) ([]server.Mount, error) {
		return []server.Mount{{Pattern: "/mcp", Handler: mcp.NewHTTPHandler(rt, mcp.Options{})}}, nil
	})
}
