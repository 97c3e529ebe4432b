package cli

import (
	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/server"
)

// swarm serve speaks A2A: agent cards are public (clients read them to
// learn the auth scheme); the JSON-RPC endpoints check the same tokens as
// the HTTP API, in the handler itself.
func init() {
	RegisterMounts(func(rt *swarm.Runtime, a *auth.Authenticator) ([]server.Mount, error) {
		h, err := a2a.NewHandler(rt, a2a.Options{Auth: a})
		if err != nil {
			return nil, err
		}
		return []server.Mount{
			{Pattern: a2a.PathPrefix, Handler: h, Public: true},
			{Pattern: a2a.CardPath, Handler: h, Public: true},
		}, nil
	})
}
