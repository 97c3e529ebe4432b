package swarm_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/postgres"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
)

// BenchmarkRoundPostgres is BenchmarkRound on PostgreSQL (skipped without
// a server; see package pgtest).
func BenchmarkRoundPostgres(b *testing.B) {
	st, err := postgres.Open(context.Background(), pgtest.URL(b, "pool_max_conns=8"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	benchRounds(b, st)
}

// BenchmarkTwoTurnThroughput starts batches of two-turn scripted runs
// (a tool call, then the answer), spread evenly over 1 or 3 runtimes (nodes)
// in this process that share one PostgreSQL database, and waits for all of
// them; it reports completed runs per second.
func BenchmarkTwoTurnThroughput(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("postgres/nodes=%d", nodes), func(b *testing.B) {
			url := pgtest.URL(b, "pool_max_conns=8")
			def, script := twoTurn(0, nil)
			rts := make([]*swarm.Runtime, nodes)
			for i := range rts {
				st, err := postgres.Open(context.Background(), url)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				rt, err := swarm.New(swarm.Config{Store: st, Owner: fmt.Sprint("node", i),
					Model: scripted.New(script, scripted.WithoutBookkeeping())})
				if err != nil {
					b.Fatal(err)
				}
				defer rt.Close()
				if err := rt.Register(def); err != nil {
					b.Fatal(err)
				}
				rts[i] = rt
			}
			const batch, clients = 300, 48
			ctx := context.Background()
			var total time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				var wg sync.WaitGroup
				errs := make(chan error, clients)
				for c := range clients {
					wg.Go(func() {
						for i := c; i < batch; i += clients {
							rt := rts[i%nodes]
							res, _, err := def.Run(ctx, rt, "go")
							if err == nil && res.State() != swarm.StateCompleted {
								err = fmt.Errorf("state %v", res.State())
							}
							if err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				total += time.Since(start)
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(batch*b.N)/total.Seconds(), "runs/s")
		})
	}
}
