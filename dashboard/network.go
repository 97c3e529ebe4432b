package dashboard

import (
	"net/http"

	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/network"
)

// The network page: the capabilities this node shares, its peers with
// their health, and every capability the network offers with its tags and
// providers. A token sees only the capabilities it may call.

type networkData struct {
	On     bool
	Status network.Status
}

func (d *Dashboard) networkPage(w http.ResponseWriter, r *http.Request) {
	var data networkData
	if d.opts.Network != nil {
		data.On = true
		data.Status = d.opts.Network.Status()
		ctx := r.Context()
		allowed := func(name string) bool { return auth.CapabilityAllowed(ctx, name) }
		data.Status.Shared = keep(data.Status.Shared, func(c network.Capability) bool { return allowed(c.Name) })
		data.Status.Capabilities = keep(data.Status.Capabilities, func(o network.Offer) bool { return allowed(o.Name) })
	}
	d.render(w, r, http.StatusOK, "network", data)
}

func keep[T any](s []T, ok func(T) bool) []T {
	var out []T
	for _, v := range s {
		if ok(v) {
			out = append(out, v)
		}
	}
	return out
}
