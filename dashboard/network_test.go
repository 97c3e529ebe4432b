package dashboard_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/dashboard"
	"github.com/swarmrt/swarm/network"
	"github.com/swarmrt/swarm/swarmtest"
)

func TestNetworkPage(t *testing.T) {
	ctx := swarmtest.Context(t)
	type item struct {
		Item string `json:"item"`
	}
	tool := func(name string) swarm.Tool {
		return swarm.NewTool(name, "the "+name+" tool", func(ctx context.Context, in item) (string, error) { return "ok", nil })
	}
	kitchen, err := network.New(network.Options{ID: "kitchen"})
	if err != nil {
		t.Fatal(err)
	}
	defer kitchen.Close()
	if err := kitchen.Share(network.ShareTool(tool("check-inventory"), "food", "stock"), network.ShareTool(tool("secret-recipe"), "food")); err != nil {
		t.Fatal(err)
	}
	peer := httptest.NewServer(kitchen.Handler())
	defer peer.Close()
	if err := kitchen.Start(ctx, network.StartOptions{URL: peer.URL}); err != nil {
		t.Fatal(err)
	}
	room, err := network.New(network.Options{ID: "room-service", Peers: []string{peer.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer room.Close()
	if err := room.Start(ctx, network.StartOptions{}); err != nil {
		t.Fatal(err)
	}

	rt, _ := swarmtest.NewRuntime(t, nil)
	a, err := auth.New([]auth.Token{{Name: "admin", Secret: adminSecret}, {Name: "cook", Secret: echoSecret, Capabilities: []string{"check-inventory"}}})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveDashboard(t, rt, dashboard.Options{Auth: a, Network: room})

	admin := newBrowser(t, ts.URL)
	admin.login(adminSecret)
	p := admin.get("/ui/network")
	for _, want := range []string{"room-service", peer.URL, ">up<", "check-inventory", "food, stock", "kitchen", "secret-recipe"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("network page lacks %q", want)
		}
	}
	// The page's script refreshes its live part with the part alone.
	if !strings.Contains(p.body, `id="network-live" data-live`) {
		t.Errorf("the network page has no live part")
	}
	if p := admin.get("/ui/network?fragment=live"); p.status != 200 || strings.Contains(p.body, "<html") || !strings.Contains(p.body, "check-inventory") {
		t.Errorf("the network page's live part: %d %s", p.status, p.body)
	}
	cook := newBrowser(t, ts.URL)
	cook.login(echoSecret)
	for _, path := range []string{"/ui/network", "/ui/network?fragment=live"} {
		if p := cook.get(path); !strings.Contains(p.body, "check-inventory") || strings.Contains(p.body, "secret-recipe") {
			t.Errorf("%s with a token limited to check-inventory: %d, sees secret-recipe or not check-inventory", path, p.status)
		}
	}

	// A server in no network says so.
	plain := newBrowser(t, serveDashboard(t, rt, dashboard.Options{Auth: a}).URL)
	plain.login(adminSecret)
	if p := plain.get("/ui/network"); !strings.Contains(p.body, "has joined no network") {
		t.Errorf("network page of a server in no network: %d %s", p.status, p.body)
	}
}
