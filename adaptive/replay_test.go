package adaptive_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/adaptive"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/swarmtest"
)

// testdata/old-journals.db is a SQLite store written by the adaptive loop
// as it was inside package swarm (testdata/README.md says how), with four
// runs of the research swarm on "topic":
//
//	done    completed: a stall, a replan, a lookup tool in a round
//	crash   the same run, its process killed after its 9th append
//	review  paused for a plan review after its replans ran out
//	judged  completed, with the critic as the evaluator
//
// The scripts and settings of those runs follow.
var (
	crashScript = scripted.Script{
		"research": {
			ledger("look things up", "write"),
			judge(true, false, "researcher", "look up X"),
			judge(false, false, "researcher", "look up Y"),
			judge(false, true, "researcher", "look up Y again"),
			ledger("write now"),
			judge(true, false, "writer", "write"),
			satisfied(),
			scripted.Text("report"),
		},
		"researcher": {
			scripted.Tools(scripted.CallTool("lookup", map[string]string{"query": "X"})), scripted.Text("x"),
			scripted.Tools(scripted.CallTool("lookup", map[string]string{"query": "Y"})), scripted.Text("y"),
		},
		"writer": {scripted.Text("report text")},
	}
	reviewScript = scripted.Script{
		"research": {
			ledger("step one"),
			judge(false, false, "researcher", "try 1"),
			ledger("step two"),
			judge(false, false, "researcher", "try 2"),
			judge(true, false, "writer", "write it"),
			satisfied(),
			scripted.Text("reviewed report"),
		},
		"writer": {scripted.Text("report")},
	}
	judgedScript = scripted.Script{
		"research": {
			ledger("step"),
			scripted.Text(`{"next_handoff": "researcher", "instruction": "look"}`),
			scripted.Text("final"),
		},
		"critic": {
			scripted.Text(`{"is_request_satisfied": false, "is_in_loop": false, "is_progress_being_made": true}`),
			scripted.Text(`{"is_request_satisfied": true, "is_in_loop": false, "is_progress_being_made": true}`),
		},
		"researcher": {scripted.Text("found")},
	}
)

// oldStore opens a copy of the old journals.
func oldStore(t *testing.T) *sqlite.Store {
	t.Helper()
	src, err := os.Open(filepath.Join("testdata", "old-journals.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), "old.db")
	dst, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// asked is a model that plays a script and remembers every call it was
// asked for, as "agent call".
type asked struct {
	m     *scripted.Model
	mu    sync.Mutex
	calls []string
}

func (a *asked) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	a.mu.Lock()
	a.calls = append(a.calls, fmt.Sprintf("%s %d", req.Agent, req.Call))
	a.mu.Unlock()
	return a.m.Generate(ctx, req)
}

// notAgain fails t if a was asked for one of the calls journaled before.
func (a *asked) notAgain(t *testing.T, journaled []string) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.calls {
		if slices.Contains(journaled, c) {
			t.Errorf("the model was asked again for %s, which the old journal holds", c)
		}
	}
}

// oldRuntime is a runtime on st with research(s, lookups) registered,
// whose model plays script (the old runs' researcher had the lookup tool).
func oldRuntime(t *testing.T, st *sqlite.Store, s *adaptive.Strategy, script scripted.Script, lookups *lookupLog) (*swarm.Runtime, *asked) {
	t.Helper()
	if lookups == nil {
		lookups = &lookupLog{runs: map[string][]string{}}
		lookups.process.Store("new")
	}
	m := &asked{m: scripted.New(script)}
	rt, err := swarm.New(swarm.Config{Store: st, Model: m, RetryBackoff: time.Millisecond, PollInterval: 10 * time.Millisecond, Owner: "new"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(research(s, lookups)); err != nil {
		t.Fatal(err)
	}
	return rt, m
}

// journaledCalls lists the model calls run id's journal holds, as "agent
// call".
func journaledCalls(t *testing.T, rt *swarm.Runtime, id string) []string {
	t.Helper()
	var out []string
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventModelResponse {
			out = append(out, fmt.Sprintf("%s %d", ev.Agent, ev.Call))
		}
	}
	return out
}

// step is what a journal record says, less what differs between two runs
// of one script (times, run ids, the trace).
type step struct {
	Type  swarm.EventType
	Key   string
	Event string
}

func steps(t *testing.T, rt *swarm.Runtime, id string) []step {
	t.Helper()
	var out []step
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventStarted {
			continue
		}
		ev.Seq, ev.Time, ev.RunID = 0, time.Time{}, ""
		if ev.Type == swarm.EventHandoffStarted || ev.Type == swarm.EventHandoffReturned {
			// A delegation carries the turn of the round it is in
			// (strategy.Driver.AtTurn) since it marks every step;
			// the old code's delegations did not.
			ev.Turn = 0
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, step{ev.Type, ev.Key, string(b)})
	}
	return out
}

// TestOldJournalsReplay: runs journaled by the adaptive loop when it was
// part of package swarm replay with this package. A completed run's every
// model request is rebuilt as it was sent (Runtime.Request replays the
// strategy over the old journal and verifies each against its digest), and
// a fresh run of the same script journals the same records; the run killed
// mid-round recovers and completes as the clean one did, without asking
// the model again for a journaled call or rerunning a journaled tool; the
// run paused for a plan review takes the human's edited plan and
// completes.
func TestOldJournalsReplay(t *testing.T) {
	ctx := swarmtest.Context(t)
	st := oldStore(t)
	crashLoop := adaptive.New().WithStallThreshold(2)

	// The killed run first: any runtime on the store may recover it.
	lookups := &lookupLog{runs: map[string][]string{}}
	lookups.process.Store("new")
	rt, m := oldRuntime(t, st, crashLoop, crashScript, lookups)
	before := journaledCalls(t, rt, "crash")
	if len(before) == 0 {
		t.Fatal("the old journal of run crash holds no model call")
	}
	if _, err := rt.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := rt.Wait(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	if s.State != swarm.StateCompleted || string(s.Result) != `"report"` {
		t.Fatalf("recovered run: state %s (%s), result %s", s.State, s.Reason, s.Result)
	}
	m.notAgain(t, before)
	lookups.mu.Lock()
	if len(lookups.runs) != 1 {
		t.Errorf("lookup ran for %v, want only the second round's query (the first's result is journaled)", lookups.runs)
	}
	lookups.mu.Unlock()
	if got, want := steps(t, rt, "crash"), steps(t, rt, "done"); !sameSteps(got, want) {
		t.Errorf("the recovered run's journal differs from the old clean run's:\n got %v\nwant %v", got, want)
	}
	verifyRequests(t, rt, "done")

	// A fresh run of the clean script journals what the old code did.
	id, s := runResearch(t, rt, "topic")
	if s.State != swarm.StateCompleted {
		t.Fatalf("fresh run: state %s (%s)", s.State, s.Reason)
	}
	if got, want := steps(t, rt, id), steps(t, rt, "done"); !slices.Equal(got, want) {
		t.Errorf("a fresh run's journal differs from the old one's:\n got %v\nwant %v", got, want)
	}

	// The paused run takes an edited plan.
	rt.Close()
	rt, m = oldRuntime(t, st, adaptive.New().WithStallThreshold(1).WithMaxReplans(1), reviewScript, nil)
	before = journaledCalls(t, rt, "review")
	if err := rt.Resume(ctx, "review", `{"plan": ["ask the writer"]}`); err != nil {
		t.Fatal(err)
	}
	if s, err = rt.Wait(ctx, "review"); err != nil {
		t.Fatal(err)
	}
	if s.State != swarm.StateCompleted || string(s.Result) != `"reviewed report"` {
		t.Fatalf("resumed run: state %s (%s), result %s", s.State, s.Reason, s.Result)
	}
	m.notAgain(t, before)
	ledgers, _ := ledgersOf(t, rt, "review")
	if len(ledgers) != 3 || ledgers[2].Cause != "review" || !slices.Equal(ledgers[2].Plan, []string{"ask the writer"}) {
		t.Fatalf("ledgers %+v, want the edited plan last", ledgers)
	}

	// The evaluator's run.
	rt.Close()
	rt, _ = oldRuntime(t, st, adaptive.New().WithEvaluator("critic"), judgedScript, nil)
	if n := verifyRequests(t, rt, "judged"); n != 6 {
		t.Errorf("%d model calls of run judged verified, want 6", n)
	}
}

// sameSteps reports whether two journals hold the same steps, by type and
// key (their model calls' usage and digests differ after a recovery).
func sameSteps(a, b []step) bool {
	return slices.EqualFunc(a, b, func(x, y step) bool { return x.Type == y.Type && x.Key == y.Key })
}
