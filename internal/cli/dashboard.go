package cli

import (
	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/dashboard"
	"github.com/swarmrt/swarm/server"
)

// swarm serve serves the web dashboard at / and /ui/, behind the same
// tokens as the API (the dashboard checks them itself: a browser logs in
// once and carries its token in a cookie).
func init() {
	RegisterMounts(func(rt *swarm.Runtime, a *auth.Authenticator) ([]server.Mount, error) {
		d, err := dashboard.New(rt, dashboard.Options{Auth: a})
		if err != nil {
			return nil, err
		}
		return d.Mounts(), nil
	})
}
