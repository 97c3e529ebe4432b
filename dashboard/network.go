package dashboard

import (
	"net/http"

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
		data.Status = d.opts.Network.Status(r.Context())
	}
	d.render(w, r, http.StatusOK, "network", data)
}
