package network_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/swarmrt/swarm/network"
)

// TestCapabilityQueryByNameAndTag: a capability_query answers the node's
// capabilities that have its name and its tag (an empty field selects
// all), and no others.
func TestCapabilityQueryByNameAndTag(t *testing.T) {
	var calls atomic.Int32
	_, p := startNode(t, network.Options{ID: "kitchen"}, nil,
		network.ShareTool(counterTool("check-inventory", &calls), "food", "stock"),
		network.ShareTool(counterTool("dietary-check", &calls), "food", "safety"))
	c, _ := startNode(t, network.Options{ID: "room-service"}, nil)
	for _, tc := range []struct {
		name, tag string
		want      []string
	}{
		{"", "", []string{"check-inventory", "dietary-check"}},
		{"", "food", []string{"check-inventory", "dietary-check"}},
		{"", "safety", []string{"dietary-check"}},
		{"", "stock", []string{"check-inventory"}},
		{"", "drinks", nil},
		{"check-inventory", "", []string{"check-inventory"}},
		{"check-inventory", "stock", []string{"check-inventory"}},
		{"check-inventory", "safety", nil},
		{"warm-bread", "food", nil},
	} {
		qr, err := c.Query(context.Background(), p.URL, tc.name, tc.tag)
		if err != nil {
			t.Fatalf("query name %q tag %q: %v", tc.name, tc.tag, err)
		}
		var got []string
		for _, cp := range qr.Capabilities {
			got = append(got, cp.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) || qr.Node.ID != "kitchen" {
			t.Errorf("query name %q tag %q: %q from %s, want %q from kitchen", tc.name, tc.tag, got, qr.Node.ID, tc.want)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("a query performed %d calls", calls.Load())
	}
}
