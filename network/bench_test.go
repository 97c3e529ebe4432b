package network_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/swarmrt/swarm/internal/servetest"
	"github.com/swarmrt/swarm/network"
)

// BenchmarkCallOverhead compares a tool called in the process with the
// same tool called through the network on loopback (HTTP, JSON, the
// provider's dedup table).
func BenchmarkCallOverhead(b *testing.B) {
	var calls atomic.Int32
	tool := counterTool("check-inventory", &calls)
	args := json.RawMessage(`{"item":"eggs"}`)
	b.Run("local", func(b *testing.B) {
		for b.Loop() {
			if _, err := tool.Call(context.Background(), args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("network", func(b *testing.B) {
		_, s := startNode(b, network.Options{ID: "p"}, nil, network.ShareTool(tool, "food"))
		c, _ := startNode(b, network.Options{ID: "c", Peers: []string{s.URL}}, nil)
		eventually(b, "provider", func() bool { return c.Registry().Len() == 1 })
		nt := c.Discover("check-inventory")
		for b.Loop() {
			if _, err := nt.Call(context.Background(), args); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func report(b *testing.B, name string, ds []time.Duration) {
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, name+"-median-ms")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, name+"-max-ms")
}

// BenchmarkProviderLifecycle starts a `swarm serve` provider (FailAfter
// 1s) ten times: the time from its start to its capability being in the
// consumer's registry (offered at the consumer's next model call), and
// from its SIGKILL to its removal. Run with -benchtime=1x.
func BenchmarkProviderLifecycle(b *testing.B) {
	consumer, err := network.New(network.Options{ID: "consumer", FailAfter: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer consumer.Close()
	if err := consumer.Start(context.Background(), network.StartOptions{}); err != nil {
		b.Fatal(err)
	}
	reg := consumer.Registry()
	servetest.Binary(b) // built before the clock runs
	var offered, removed []time.Duration
	for range 10 * b.N {
		t0 := time.Now()
		p, _ := providerNode(b, "kitchen", "check-inventory", []string{"food"}, nil)
		if err := consumer.AddPeer(p.URL); err != nil {
			b.Fatal(err)
		}
		eventually(b, "offered", func() bool { return len(reg.Providers("check-inventory")) == 1 })
		offered = append(offered, time.Since(t0))
		t1 := time.Now()
		if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		eventually(b, "removed", func() bool { return reg.Len() == 0 })
		removed = append(removed, time.Since(t1))
		<-p.Exited
	}
	report(b, "start-to-offered", offered)
	report(b, "kill-to-removed", removed)
}
