package temporal_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/temporal"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/proto"
)

// BenchmarkRound runs the tool-calling loop for 3 and for 9 rounds (a
// model call and a tool call each) on an in-process server and reports
// what a round adds to the workflow's history: events and bytes.
func BenchmarkRound(b *testing.B) {
	ts := temporaltest.NewServer()
	defer ts.Stop()
	c := ts.GetDefaultClient()
	ctx := context.Background()
	measure := func(rounds int) (events, bytes int) {
		def, m := pinger(rounds)
		rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		if err := rt.Register(def); err != nil {
			b.Fatal(err)
		}
		e, err := temporal.New(rt, temporal.Options{Client: c, TaskQueue: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		w := ts.NewWorker("bench", e.Register)
		defer w.Stop()
		id, err := e.Start(ctx, "pinger", "", json.RawMessage(`"go"`))
		if err != nil {
			b.Fatal(err)
		}
		if out, err := e.Wait(ctx, id); err != nil || out.Status != "completed" {
			b.Fatalf("outcome %+v, %v", out, err)
		}
		return historySize(b, c, id)
	}
	var e2, b2, e10, b10 int
	for b.Loop() {
		e2, b2 = measure(2)
		e10, b10 = measure(8)
	}
	b.ReportMetric(float64(e10-e2)/6, "events/round")
	b.ReportMetric(float64(b10-b2)/6, "bytes/round")
	b.ReportMetric(float64(e2), "events/run-of-3-rounds")
}

// historySize counts the events and the encoded bytes of workflow id's
// history.
func historySize(b testing.TB, c client.Client, id string) (events, bytes int) {
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		events++
		bytes += proto.Size(ev)
	}
	return events, bytes
}
