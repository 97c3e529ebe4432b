package swarm_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/postgres"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
	"github.com/swarmrt/swarm/swarmtest"
)

type twoTurnOut struct {
	Done string `json:"done"`
}

// twoTurn is a swarm of two rounds: a tool call, then the answer, which the
// model gives after delay.
func twoTurn(delay time.Duration, calls *atomic.Int64) (*swarm.Swarm[string, twoTurnOut], scripted.Script) {
	note := swarm.NewTool("note", "notes", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		if calls != nil {
			calls.Add(1)
		}
		return "noted", nil
	})
	def := swarm.Define[string, twoTurnOut]("two", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{note}, MaxTurns: 4}
	})
	script := scripted.Script{"two": {
		scripted.Tools(scripted.CallTool("note", map[string]any{"n": 1})),
		{Text: `{"done":"yes"}`, Delay: delay},
	}}
	return def, script
}

func pgNode(t *testing.T, url string, cfg swarm.Config, defs ...swarm.Definition) (*swarm.Runtime, *swarmtest.Killable) {
	t.Helper()
	st, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	k := swarmtest.NewKillable(t, st)
	cfg.Store = k
	cfg.RetryBackoff = time.Millisecond
	rt, err := swarm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Register(defs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rt.Close()
		st.Close()
	})
	return rt, k
}

// work runs rt.Work until the test ends.
func work(t *testing.T, rt *swarm.Runtime, opts swarm.WorkOptions) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Work(ctx, opts) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, swarm.ErrClosed) {
				t.Errorf("Work: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitTurn waits until each run has finished its first round: its tool
// result and turn_completed are journaled. (The run's turn counter moves
// as soon as the round's model response is journaled, before its tool runs.)
func waitTurn(t *testing.T, rt *swarm.Runtime, ids ...string) {
	t.Helper()
	for _, id := range ids {
		for done := false; !done; {
			evs, err := rt.History(t.Context(), id, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Type == swarm.EventTurnCompleted && ev.Turn == 1 {
					done = true
				}
			}
			if !done {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}

// TestWorkFailoverPostgres: node A dies with runs in flight; node B's Work
// loop continues every one of them once A's leases expire, and each
// completes exactly once.
func TestWorkFailoverPostgres(t *testing.T) {
	const runs = 12
	url := pgtest.URL(t, "pool_max_conns=6")
	ctx := ctxT(t)
	var toolCalls atomic.Int64
	def, script := twoTurn(300*time.Millisecond, &toolCalls)
	cfg := swarm.Config{Lease: time.Second, PollInterval: 100 * time.Millisecond}
	cfgA := cfg
	cfgA.Model, cfgA.Owner = scripted.New(script), "A"
	a, ka := pgNode(t, url, cfgA, def)
	cfgB := cfg
	cfgB.Model, cfgB.Owner = scripted.New(script), "B"
	b, _ := pgNode(t, url, cfgB, def)

	ids := make([]string, runs)
	for i := range ids {
		id, err := a.Start(ctx, "two", []byte(`"go"`))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	// Wait until every run has recorded its tool call, then kill A in the
	// middle of the second model call.
	waitTurn(t, b, ids...)
	// On a loaded machine A can miss a heartbeat before the kill and lose a
	// lease in the middle of a tool call; that run's tool may then run again
	// (tools are at least once). Each such loss allows one more call.
	lostBefore := a.Metrics().LeasesLost
	ka.Kill()
	killed := time.Now()
	a.Close() // its releases fail: the leases stay until they expire
	// A may have finished some runs between the wait and its death (a loaded
	// machine); B must claim every other one.
	orphans := 0
	for _, id := range ids {
		s, err := b.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.State != swarm.StateCompleted {
			orphans++
		}
	}
	if orphans == 0 {
		t.Skip("A finished every run before it died; nothing to fail over (machine too slow for this test's timing)")
	}
	work(t, b, swarm.WorkOptions{})
	for _, id := range ids {
		s, err := b.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.State != swarm.StateCompleted || string(s.Result) != `{"done":"yes"}` {
			t.Fatalf("run %s: %+v", id, s)
		}
		swarmtest.AssertJournal(t, b, id)
		ends := 0
		for _, ev := range swarmtest.Events(t, b, id) {
			if ev.Type == swarm.EventCompleted {
				ends++
			}
		}
		if ends != 1 {
			t.Fatalf("run %s has %d completed events", id, ends)
		}
	}
	t.Logf("all %d runs continued and completed %v after A died (lease 1s)", runs, time.Since(killed).Round(time.Millisecond))
	if n := toolCalls.Load(); n < runs || n > runs+lostBefore {
		t.Errorf("tool ran %d times for %d runs (%d leases lost before A died)", n, runs, lostBefore)
	}
	if m := b.Metrics(); m.RunsClaimed < int64(orphans) || m.Notifications == 0 {
		t.Errorf("B's metrics %+v", m)
	}
}

// TestStopReachesOwnerPostgres: a stop sent through node B reaches the run
// driven by node A through NOTIFY, long before A's next heartbeat, and B's
// Wait sees the end through NOTIFY too.
func TestStopReachesOwnerPostgres(t *testing.T) {
	url := pgtest.URL(t, "pool_max_conns=4")
	ctx := ctxT(t)
	def, script := twoTurn(time.Hour, nil)
	// Heartbeats and polls far beyond the test's deadline: only
	// notifications can make it pass.
	cfg := swarm.Config{Lease: time.Hour, PollInterval: time.Hour, Model: scripted.New(script)}
	cfg.Owner = "A"
	a, _ := pgNode(t, url, cfg, def)
	cfg.Owner = "B"
	b, _ := pgNode(t, url, cfg, def)
	id, err := a.Start(ctx, "two", []byte(`"go"`))
	if err != nil {
		t.Fatal(err)
	}
	waitTurn(t, b, id)
	if err := b.Stop(ctx, id, "enough"); err != nil {
		t.Fatal(err)
	}
	s, err := b.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait on B: %v", err)
	}
	if s.State != swarm.StateStopped || s.Reason != "enough" {
		t.Fatalf("status %+v", s)
	}
	if m := a.Metrics(); m.Notifications == 0 {
		t.Errorf("A's metrics %+v", m)
	}
}

// TestResumeReachesWorkerPostgres: a paused run resumed through the store
// of another node is claimed by A's Work loop through NOTIFY, and B follows
// its events live through NOTIFY.
func TestResumeReachesWorkerPostgres(t *testing.T) {
	url := pgtest.URL(t, "pool_max_conns=4")
	ctx := ctxT(t)
	script := scripted.Script{"planner": {
		scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": "approve?"})),
		scripted.Text(`{"activity":"approved"}`),
	}}
	cfg := swarm.Config{Lease: time.Hour, PollInterval: time.Hour, Model: scripted.New(script)}
	p := planner()
	cfg.Owner = "A"
	a, _ := pgNode(t, url, cfg, p)
	cfg.Owner = "B"
	b, kb := pgNode(t, url, cfg) // B knows no swarm: it cannot drive the run
	res, run, err := p.Run(ctx, a, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Paused); !ok {
		t.Fatalf("result %#v", res)
	}
	work(t, a, swarm.WorkOptions{})
	events := make(chan swarm.Event, 100)
	go func() {
		defer close(events)
		for ev, err := range b.Events(ctx, run.ID(), 0) {
			if err != nil {
				return
			}
			events <- ev
		}
	}()
	if _, err := kb.Send(ctx, run.ID(), store.Message{Kind: store.MsgResume, Text: "yes"}); err != nil {
		t.Fatal(err)
	}
	var last swarm.Event
	for ev := range events {
		last = ev
	}
	if last.Type != swarm.EventCompleted {
		t.Fatalf("B's event stream ended with %+v", last)
	}
	if m := a.Metrics(); m.RunsClaimed != 1 {
		t.Errorf("A's metrics %+v, want one claimed run", m)
	}
}

// TestWorkDrainPostgres: a draining node hands its runs over at once; the
// other node's Work loop, woken by the releases, completes them.
func TestWorkDrainPostgres(t *testing.T) {
	const runs = 6
	url := pgtest.URL(t, "pool_max_conns=4")
	ctx := ctxT(t)
	slow, slowScript := twoTurn(time.Hour, nil)
	_, fastScript := twoTurn(0, nil)
	cfg := swarm.Config{Lease: time.Hour, PollInterval: time.Hour}
	cfg.Owner, cfg.Model = "A", scripted.New(slowScript)
	a, _ := pgNode(t, url, cfg, slow)
	cfg.Owner, cfg.Model = "B", scripted.New(fastScript)
	b, _ := pgNode(t, url, cfg, slow)
	stopA := work(t, a, swarm.WorkOptions{DrainTimeout: 50 * time.Millisecond})
	work(t, b, swarm.WorkOptions{})
	var ids []string
	for range runs {
		id, err := a.Start(ctx, "two", []byte(`"go"`))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	waitTurn(t, b, ids...)
	stopA() // drains: A's model never answers, so the runs are handed over
	if m := a.Metrics(); m.RunsDriven != 0 {
		t.Fatalf("A still drives %d runs after draining", m.RunsDriven)
	}
	for _, id := range ids {
		s, err := b.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.State != swarm.StateCompleted {
			t.Fatalf("run %s: %+v", id, s)
		}
	}
	if m := b.Metrics(); m.RunsClaimed != runs {
		t.Errorf("B's metrics %+v, want %d claimed", m, runs)
	}
}

// TestWorkMemory: the same code path on the in-process store: released
// runs are picked up by Work, woken by the store's notifications.
func TestWorkMemory(t *testing.T) {
	ctx := ctxT(t)
	st := memory.New()
	def, script := twoTurn(0, nil)
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		l, err := st.Create(ctx, store.Run{ID: fmt.Sprint("r", i), Swarm: "two"}, "gone", time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = l
	}
	// The runs have no start record yet: give them one, then hand them
	// over as a draining node would.
	for i := range 5 {
		id := fmt.Sprint("r", i)
		if _, err := st.Append(ctx, store.Lease{RunID: id, Owner: "gone", Epoch: 1},
			[]store.Record{{Key: "start", Type: string(swarm.EventStarted), Data: []byte(`{"swarm":"two","input":"go","max_turns":4,"agent":"two"}`), Time: time.Now()}},
			store.Update{Release: true}); err != nil {
			t.Fatal(err)
		}
	}
	work(t, rt, swarm.WorkOptions{MaxRuns: 2})
	for i := range 5 {
		s, err := rt.Wait(ctx, fmt.Sprint("r", i))
		if err != nil {
			t.Fatal(err)
		}
		if s.State != swarm.StateCompleted {
			t.Fatalf("run r%d: %+v", i, s)
		}
	}
}

// frozenRenew is a memory store whose next Renew, once armed, hangs past
// the lease before failing: a process frozen (SIGSTOP, a long GC pause)
// in the middle of a heartbeat.
type frozenRenew struct {
	*memory.Store
	freeze atomic.Int64 // nanoseconds the next Renew hangs
}

func (f *frozenRenew) Renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	if d := f.freeze.Swap(0); d > 0 {
		time.Sleep(time.Duration(d))
		return store.Renewal{}, context.DeadlineExceeded
	}
	return f.Store.Renew(ctx, owner, lease)
}

// TestFrozenHeartbeatKeepsUnclaimedRuns: a renewal that failed because the
// process was frozen past its lease is tried once more; when no other node
// claimed the runs meanwhile, the runtime keeps driving them instead of
// giving them all up.
func TestFrozenHeartbeatKeepsUnclaimedRuns(t *testing.T) {
	ctx := ctxT(t)
	st := &frozenRenew{Store: memory.New()}
	def, script := twoTurn(1200*time.Millisecond, nil)
	const lease = 300 * time.Millisecond
	rt, err := swarm.New(swarm.Config{Store: st, Model: scripted.New(script), Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	run, err := def.Start(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	st.freeze.Store(int64(2 * lease))
	res, err := run.Wait(ctx)
	if c, ok := res.(swarm.Completed[twoTurnOut]); err != nil || !ok || c.Output.Done != "yes" {
		t.Fatalf("result %+v, %v", res, err)
	}
	if st.freeze.Load() != 0 {
		t.Fatal("the heartbeat never renewed during the run")
	}
	if m := rt.Metrics(); m.LeasesLost != 0 {
		t.Errorf("leases lost after a frozen renewal of runs nobody claimed: %+v", m)
	}
}
