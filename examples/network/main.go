// Command network is the hotel of AgentEnsemble's discovery guide, on a
// network of two nodes on loopback: the kitchen shares the tools
// check-inventory (food, stock) and dietary-check (food, safety) and the
// swarm prepare-meal (food, cooking); room service knows only the
// kitchen's URL, discovers check-inventory by name and uses every food
// capability through a catalog resolved at each model call.
//
//	go run ./examples/network "salmon for room 12, nut allergy"
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/network"
)

// Item is what the kitchen's tools take.
type Item struct {
	Item string `json:"item" jsonschema:"the dish or ingredient"`
}

// Check is what dietary-check takes.
type Check struct {
	Item    string `json:"item" jsonschema:"the dish"`
	Allergy string `json:"allergy,omitempty" jsonschema:"the guest's allergy, if any"`
}

var script = scripted.Script{
	"room-service": {
		{ToolCalls: call("c1", "check-inventory", `{"item":"salmon"}`)},
		{ToolCalls: call("c2", "dietary-check", `{"item":"grilled salmon","allergy":"nuts"}`)},
		{ToolCalls: call("c3", "prepare-meal", `{"request":"grilled salmon for room 12, nut-free"}`)},
		{Text: "Room 12: grilled salmon, nut-free, on its way in 20 minutes."},
	},
	"prepare-meal": {
		{Text: "Grilled salmon with lemon and greens, prepared nut-free; ready in 20 minutes."},
	},
}

func call(id, name, args string) []scripted.ToolCall {
	return []scripted.ToolCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	demo.Exit(run(ctx))
}

// serve serves a node's handler on a loopback port and returns its URL.
func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

func run(ctx context.Context) error {
	// The kitchen.
	krt, err := demo.Runtime(ctx, script)
	if err != nil {
		return err
	}
	defer krt.Close()
	prepare := swarm.Define[string, string]("prepare-meal", "Prepares a meal for a guest", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "You are the chef. Prepare: {{.Input}}"}
	}).WithTags("food", "cooking")
	if err := krt.Register(prepare); err != nil {
		return err
	}
	kitchen, err := network.New(network.Options{ID: "kitchen"})
	if err != nil {
		return err
	}
	defer kitchen.Close()
	err = kitchen.Share(
		network.ShareTool(swarm.NewTool("check-inventory", "Check current inventory levels", func(ctx context.Context, in Item) (string, error) {
			return in.Item + ": 6 portions in stock", nil
		}), "food", "stock"),
		network.ShareTool(swarm.NewTool("dietary-check", "Check a dish against a guest's allergy", func(ctx context.Context, in Check) (string, error) {
			return in.Item + ": contains no " + orNone(in.Allergy), nil
		}), "food", "safety"),
		network.ShareSwarm("prepare-meal", "food", "cooking"),
	)
	if err != nil {
		return err
	}
	kurl, stopK, err := serve(kitchen.Handler())
	if err != nil {
		return err
	}
	defer stopK()
	if err := kitchen.Start(ctx, network.StartOptions{Runtime: krt, URL: kurl}); err != nil {
		return err
	}

	// Room service knows the kitchen's URL, no capability names.
	rrt, err := demo.Runtime(ctx, script)
	if err != nil {
		return err
	}
	defer rrt.Close()
	room, err := network.New(network.Options{ID: "room-service", Peers: []string{kurl}})
	if err != nil {
		return err
	}
	defer room.Close()
	rurl, stopR, err := serve(room.Handler())
	if err != nil {
		return err
	}
	defer stopR()
	roomService := swarm.Define[string, string]("room-service", "Handles room service orders", func(string) swarm.Spec {
		return swarm.Spec{
			Instructions: "You run room service. Check stock and allergies with the kitchen's tools, then order the meal: {{.Input}}",
			Tools: []swarm.Tool{
				room.Discover("check-inventory"),                     // discovered by name
				room.Catalog(network.Filter{Tags: []string{"food"}}), // every food capability, at each call
			},
		}
	})
	if err := rrt.Register(roomService); err != nil {
		return err
	}
	if err := room.Start(ctx, network.StartOptions{Runtime: rrt, URL: rurl}); err != nil {
		return err
	}
	reg := room.Registry()
	fmt.Printf("kitchen at %s, room service at %s\n", kurl, rurl)
	fmt.Printf("room service sees %d capabilities:\n", reg.Len())
	for _, o := range reg.All() {
		fmt.Printf("  %-16s %-5s tags %-14s from %s\n", o.Name, o.Kind, strings.Join(o.Tags, ","), o.Node)
	}
	if o, ok := reg.Find("check-inventory"); ok {
		fmt.Printf("check-inventory is provided by %s\n", o.Node)
	}
	id, err := rrt.Start(ctx, "room-service", []byte(fmt.Sprintf("%q", demo.Input("salmon for room 12, nut allergy"))))
	if err != nil {
		return err
	}
	demo.Follow(ctx, os.Stdout, rrt, id, 0)
	st, err := rrt.Wait(ctx, id)
	if err != nil {
		return err
	}
	if st.State != swarm.StateCompleted {
		return fmt.Errorf("room service %s: %s", st.State, st.Reason)
	}
	fmt.Printf("result: %s\n", st.Result)
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "known allergen"
	}
	return s
}
