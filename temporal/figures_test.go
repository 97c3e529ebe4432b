package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/postgres"
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/temporal"
)

// The figures of docs/performance.md#temporal (commands there):
//
//	GOTOOLCHAIN=go1.27.3 go test -run '^$' -bench 'EngineRound|Takeover' -benchtime 3x ./
//
// BenchmarkEngineRound runs a swarm of figureRounds model rounds (each a tool
// call, then the answer) on each engine and reports per round: the CPU
// time of the whole process (on Temporal, the in-process server's
// included), the journal's records and bytes in the Swarm store, and on
// Temporal the workflow history's events and bytes.

const figureRounds = 20

func figureSwarm() (swarm.Definition, scripted.Script) {
	ping := swarm.NewTool("ping", "pings", func(context.Context, struct{}) (string, error) { return "pong", nil })
	def := swarm.Define[string, string]("rounds", "pings, round after round", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Ping.", Tools: []swarm.Tool{ping}, MaxTurns: figureRounds + 1}
	})
	var steps []scripted.Step
	for i := range figureRounds - 1 {
		steps = append(steps, scripted.Tools(scripted.ToolCall{ID: fmt.Sprint("c", i), Name: "ping"}))
	}
	steps = append(steps, scripted.Text("pinged"))
	return def, scripted.Script{"rounds": steps}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// journalSize counts run id's records and their bytes (key, type, data).
func journalSize(b *testing.B, st store.Store, id string) (n, size int) {
	recs, err := st.Read(context.Background(), id, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range recs {
		size += len(r.Key) + len(r.Type) + len(r.Data)
	}
	return len(recs), size
}

func BenchmarkEngineRound(b *testing.B) {
	def, script := figureSwarm()
	b.Run("engine=temporal", func(b *testing.B) {
		ts := temporaltest.NewServer()
		defer ts.Stop()
		st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "swarm.db"))
		if err != nil {
			b.Fatal(err)
		}
		c := ts.GetDefaultClient()
		h := temporal.NewHook(temporal.Options{Client: c, TaskQueue: "figures"})
		rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), Engine: h, PollInterval: 10 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		if err := rt.Register(def); err != nil {
			b.Fatal(err)
		}
		w := ts.NewWorker("figures", h.Engine().Register)
		defer w.Stop()
		var events, bytes int
		figureRuns(b, rt, func(id string) {
			e, n := historySize(b, c, id)
			events += e
			bytes += n
		})
		b.ReportMetric(float64(events)/float64(b.N*figureRounds), "history-events/round")
		b.ReportMetric(float64(bytes)/float64(b.N*figureRounds), "history-bytes/round")
	})
	b.Run("engine=sqlite", func(b *testing.B) {
		st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "swarm.db"))
		if err != nil {
			b.Fatal(err)
		}
		figureOwn(b, st, def, script)
	})
	b.Run("engine=postgres", func(b *testing.B) {
		url := os.Getenv("SWARM_TEST_POSTGRES")
		if url == "" {
			b.Skip("!!! SWARM_TEST_POSTGRES is not set: no PostgreSQL figures !!!")
		}
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			b.Fatal(err)
		}
		figureOwn(b, st, def, script)
	})
}

// figureOwn runs the figures on Swarm's own engine on st.
func figureOwn(b *testing.B, st store.Store, def swarm.Definition, script scripted.Script) {
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script)})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(def); err != nil {
		b.Fatal(err)
	}
	figureRuns(b, rt, func(string) {})
}

// figureRuns runs the swarm b.N times on rt and reports the CPU time and
// the journal per round; after is called with each run's id.
func figureRuns(b *testing.B, rt *swarm.Runtime, after func(id string)) {
	ctx := context.Background()
	var records, size int
	var cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := cpuTime()
		id, err := rt.Start(ctx, "rounds", []byte(`"go"`), swarm.WithID(fmt.Sprintf("fig-%d-%d", time.Now().UnixNano(), i)))
		if err != nil {
			b.Fatal(err)
		}
		s, err := rt.Wait(ctx, id)
		if err != nil || s.State != swarm.StateCompleted {
			b.Fatalf("run %s: %+v, %v", id, s, err)
		}
		cpu += cpuTime() - start
		b.StopTimer()
		n, sz := journalSize(b, rt.Store(), id)
		records, size = records+n, size+sz
		after(id)
		b.StartTimer()
	}
	rounds := float64(b.N * figureRounds)
	b.ReportMetric(float64(cpu.Microseconds())/1000/rounds, "cpu-ms/round")
	b.ReportMetric(float64(records)/rounds, "journal-records/round")
	b.ReportMetric(float64(size)/rounds, "journal-bytes/round")
}

// BenchmarkTakeover kills a worker process (SIGKILL) inside a round's
// activity, right after its tool's result is journaled, starts another
// worker, and reports the time from the kill to the run's next record in
// the Swarm store: the takeover. The steps' heartbeat timeout of the
// workers (crashWorker: 2s) bounds how long Temporal waits for a dead
// worker's activity.
func BenchmarkTakeover(b *testing.B) {
	ts := temporaltest.NewServer()
	defer ts.Stop()
	c := ts.GetDefaultClient()
	var total time.Duration
	for i := range b.N {
		total += takeoverOnce(b, ts, c, i)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "takeover-ms")
}

func takeoverOnce(b *testing.B, ts *temporaltest.TestServer, c client.Client, i int) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := b.TempDir()
	db, logs := filepath.Join(dir, "swarm.db"), filepath.Join(dir, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		b.Fatal(err)
	}
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	def, m := crashPinger()
	rt, err := swarm.New(swarm.Config{Store: st, Model: m})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(def); err != nil {
		b.Fatal(err)
	}
	e, err := temporal.New(rt, temporal.Options{Client: c, TaskQueue: "swarm-crash"})
	if err != nil {
		b.Fatal(err)
	}
	id, err := e.Start(ctx, "pinger", fmt.Sprintf("takeover-%d-%d", time.Now().UnixNano(), i), []byte(`"go"`))
	if err != nil {
		b.Fatal(err)
	}
	worker := func(mode string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), envWorker+"="+mode, envAddr+"="+ts.GetFrontendHostPort(), envNS+"="+ts.GetDefaultNamespace(),
			envDB+"="+db, envLogs+"="+logs, envKind+"=loop")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		return cmd
	}
	first := worker("tool")
	err = first.Wait()
	killed := time.Now()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		b.Fatalf("the first worker was not killed: %v", err)
	}
	r, err := st.Get(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	last := r.LastSeq
	second := worker("none")
	defer func() { _ = second.Process.Kill(); _ = second.Wait() }()
	for {
		r, err := st.Get(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if r.LastSeq > last {
			took := time.Since(killed)
			if _, err := e.Wait(ctx, id); err != nil {
				b.Fatal(err)
			}
			return took
		}
		select {
		case <-ctx.Done():
			b.Fatal("no worker took the run over")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
