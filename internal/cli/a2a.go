package cli

import (
	"os"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/server"
)

// SigningKeyEnv names the environment variable holding the path of the PEM
// private key with which swarm serve signs its agent cards.
const SigningKeyEnv = "SWARM_A2A_SIGNING_KEY"

// swarm serve speaks A2A: agent cards are public (clients read them to
// learn the auth scheme), and signed with the key of $SWARM_A2A_SIGNING_KEY
// when it is set; the JSON-RPC endpoints check the same tokens as the HTTP
// API, in the handler itself.
func init() {
	RegisterMounts(func(rt *swarm.Runtime, a *auth.Authenticator, publicURL string) ([]server.Mount, error) {
		opts := a2a.Options{Auth: a, BaseURL: publicURL}
		if path := os.Getenv(SigningKeyEnv); path != "" {
			s, err := a2a.LoadCardSigner(path)
			if err != nil {
				return nil, err
			}
			opts.Signer = s
		}
		h, err := a2a.NewHandler(rt, opts)
		if err != nil {
			return nil, err
		}
		return []server.Mount{
			{Pattern: a2a.PathPrefix, Handler: h, Public: true},
			{Pattern: a2a.CardPath, Handler: h, Public: true},
		}, nil
	})
}
