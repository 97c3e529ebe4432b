package network_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/network"
)

// A kitchen node shares a tool with tags; a room-service node that knows
// only the kitchen's URL finds it by name and by tag and calls it.
func Example() {
	ctx := context.Background()
	type item struct {
		Item string `json:"item"`
	}
	kitchen, _ := network.New(network.Options{ID: "kitchen"})
	defer kitchen.Close()
	_ = kitchen.Share(network.ShareTool(swarm.NewTool("check-inventory", "Check current inventory levels",
		func(ctx context.Context, in item) (string, error) { return in.Item + ": 6 left", nil }), "food", "stock"))
	srv := httptest.NewServer(kitchen.Handler())
	defer srv.Close()
	_ = kitchen.Start(ctx, network.StartOptions{URL: srv.URL})

	room, _ := network.New(network.Options{ID: "room-service", Peers: []string{srv.URL}})
	defer room.Close()
	_ = room.Start(ctx, network.StartOptions{}) // returns once the peers said hello

	o, _ := room.Registry().Find("check-inventory")
	fmt.Println(o.Name, o.Kind, o.Tags, "from", o.Node)
	fmt.Println(len(room.Registry().ByTag("food")), "food capability")
	out, err := room.Discover("check-inventory").Call(ctx, json.RawMessage(`{"item":"eggs"}`))
	fmt.Println(out, err)
	// Output:
	// check-inventory tool [food stock] from kitchen
	// 1 food capability
	// eggs: 6 left <nil>
}

// A catalog is a dynamic tool set: an agent that has it among its tools is
// offered, at each model call, the capabilities its filter selects.
func ExampleNode_Catalog() {
	room, _ := network.New(network.Options{ID: "room-service", FailAfter: 2 * time.Second})
	defer room.Close()
	agent := &swarm.Agent{
		Name:         "waiter",
		Instructions: "Take the guest's order.",
		Tools:        []swarm.Tool{room.Catalog(network.Filter{Tags: []string{"food"}})},
	}
	fmt.Println(agent.Tools[0].Name())
	// Output: network_food
}
