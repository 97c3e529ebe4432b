package swarm_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/internal/seam"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
)

// fakeEngine is an engine of Config.Engine in process, as package temporal
// is one on a Temporal cluster: it runs the runs of the swarms it names
// and mirrors them into the runtime's store with the engine's event
// shapes. Each run asks a human once, then completes with "answered: "
// and the answer; a stop ends it stopped.
type fakeEngine struct {
	swarms []string
	st     store.Store
	bound  atomic.Bool

	mu      sync.Mutex
	calls   []string // "start <swarm> <id> <input>", "resume <id> <msg>", "stop <id> <reason>"
	release bool     // leave a new run's row running and unowned (a window of a resume)
	// hold: keep each run's row leased for good, a pause included (a
	// running row with the question as its reason), as package temporal
	// does, rather than paused and released.
	hold   bool
	leases map[string]store.Lease
}

const fakeOwner = "fake-engine"

func (f *fakeEngine) Bind(rt any) error {
	r, ok := rt.(*swarm.Runtime)
	if !ok {
		return errors.New("not a runtime")
	}
	f.st = r.Store()
	f.bound.Store(true)
	return nil
}

func (f *fakeEngine) Runs(id string) bool { return slices.Contains(f.swarms, id) }

func (f *fakeEngine) note(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakeEngine) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func record(t swarm.EventType, key string, ev swarm.Event) store.Record {
	ev.Type, ev.Key = t, key
	data, _ := json.Marshal(ev)
	return store.Record{Key: key, Type: string(t), Data: data, Time: time.Now()}
}

// Start mirrors the run's start a moment later, as a workflow's first
// activity would: the runtime must wait for the row.
func (f *fakeEngine) Start(ctx context.Context, swarmID, id string, input json.RawMessage) error {
	f.note("start " + swarmID + " " + id + " " + string(input))
	f.mu.Lock()
	release, hold := f.release, f.hold
	f.mu.Unlock()
	lease := time.Hour
	if hold {
		lease = seam.HeldLease
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		bg := context.Background()
		l, err := f.st.Create(bg, store.Run{ID: id, Swarm: swarmID, Agent: swarmID, MaxTurns: 3}, fakeOwner, lease,
			[]store.Record{record(swarm.EventStarted, "start", swarm.Event{Swarm: swarmID, Agent: swarmID, Input: input})})
		if err != nil {
			return
		}
		if release {
			_ = f.st.Release(bg, l)
			return
		}
		u := store.Update{State: store.Paused, Reason: "may I?"}
		if hold {
			f.mu.Lock()
			f.leases[id] = l
			f.mu.Unlock()
			u.State = ""
		}
		_, _ = f.st.Append(bg, l, []store.Record{record(swarm.EventPaused, "pause/1", swarm.Event{Agent: swarmID, Reason: "may I?"})}, u)
	}()
	return nil
}

// claim takes the run's lease after a message made it runnable; a run
// held for good keeps its lease.
func (f *fakeEngine) claim(ctx context.Context, id string, m store.Message) (store.Lease, error) {
	f.mu.Lock()
	l, held := f.leases[id]
	f.mu.Unlock()
	if held {
		return l, nil
	}
	if _, err := f.st.Send(ctx, id, m); err != nil {
		return store.Lease{}, err
	}
	for {
		l, err := f.st.Claim(ctx, id, fakeOwner, time.Hour)
		if !errors.Is(err, store.ErrLeased) {
			return l, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fakeEngine) Resume(ctx context.Context, id, message string) error {
	f.note("resume " + id + " " + message)
	l, err := f.claim(ctx, id, store.Message{Kind: store.MsgResume, Text: message, Time: time.Now()})
	if err != nil {
		return err
	}
	result, _ := json.Marshal("answered: " + message)
	_, err = f.st.Append(ctx, l, []store.Record{
		record(swarm.EventResumed, "pause/1/resumed", swarm.Event{Message: message}),
		record(swarm.EventCompleted, "end", swarm.Event{Result: result}),
	}, store.Update{State: store.Completed, Result: result, ClearReason: true})
	return err
}

func (f *fakeEngine) Stop(ctx context.Context, id, reason string) error {
	f.note("stop " + id + " " + reason)
	l, err := f.claim(ctx, id, store.Message{Kind: store.MsgStop, Text: reason, Time: time.Now()})
	if err != nil {
		return err
	}
	_, err = f.st.Append(ctx, l, []store.Record{record(swarm.EventStopped, "end", swarm.Event{Reason: reason})},
		store.Update{State: store.Stopped, Reason: reason, AckInbox: 1 << 62})
	return err
}

// noModel fails the test when this runtime's own engine calls a model: the
// engine of Config.Engine runs those swarms.
func noModel(t *testing.T) model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		t.Errorf("the runtime called a model for a run of the other engine (%d messages)", len(req.Messages))
		return nil, errors.New("no model here")
	})
}

func newEngineRuntime(t *testing.T, f *fakeEngine) *swarm.Runtime {
	t.Helper()
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: noModel(t), Engine: f, PollInterval: 10 * time.Millisecond, Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if !f.bound.Load() {
		t.Fatal("New did not bind the engine")
	}
	return rt
}

var asker = swarm.Define[string, string]("asker", "asks, then answers", func(string) swarm.Spec {
	return swarm.Spec{Instructions: "Ask first."}
})

// Start, Wait, Events, Resume and Stop of a swarm the engine runs go to the
// engine and read what it mirrors into the store: a pause is a paused run
// whether the engine pauses the row (and releases it) or holds it for
// good with the question as its reason.
func TestEngineDispatch(t *testing.T) {
	for _, hold := range []bool{false, true} {
		t.Run(map[bool]string{false: "released", true: "held"}[hold], func(t *testing.T) {
			testEngineDispatch(t, &fakeEngine{swarms: []string{"asker"}, hold: hold, leases: map[string]store.Lease{}})
		})
	}
}

func testEngineDispatch(t *testing.T, f *fakeEngine) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	rt := newEngineRuntime(t, f)
	run, err := asker.Start(ctx, rt, "hello", swarm.WithID("r1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Calls(); !slices.Equal(got, []string{`start asker r1 "hello"`}) {
		t.Fatalf("engine calls %q", got)
	}
	// The row is there when Start returns, though the engine mirrors it
	// later.
	if s, err := run.Status(ctx); err != nil || s.Swarm != "asker" {
		t.Fatalf("status after start: %+v, %v", s, err)
	}
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := res.(swarm.Paused); !ok || p.Reason != "may I?" || p.Pause != 2 {
		t.Fatalf("wait: %#v", res)
	}
	if ls, err := rt.List(ctx, store.Filter{}); err != nil || len(ls) != 1 || ls[0].State != swarm.StatePaused {
		t.Fatalf("list: %+v, %v", ls, err)
	}
	if err := run.Resume(ctx, "no", swarm.AtPause(1)); !errors.Is(err, swarm.ErrPauseNotCurrent) {
		t.Fatalf("resume at a pause the run is not at: %v", err)
	}
	if err := run.Resume(ctx, "yes"); err != nil {
		t.Fatal(err)
	}
	res, err = run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "answered: yes" {
		t.Fatalf("wait after resume: %#v", res)
	}
	var types []swarm.EventType
	for ev, err := range run.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
	if want := []swarm.EventType{swarm.EventStarted, swarm.EventPaused, swarm.EventResumed, swarm.EventCompleted}; !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	// A finished run is neither resumed nor stopped, and the engine is
	// not asked.
	if err := run.Resume(ctx, "again"); !errors.Is(err, swarm.ErrInvalidState) {
		t.Fatalf("resume of a completed run: %v", err)
	}
	if err := run.Stop(ctx, "late"); !errors.Is(err, swarm.ErrInvalidState) {
		t.Fatalf("stop of a completed run: %v", err)
	}
	// A start again with the same id is the same run.
	created := true
	again, err := asker.Start(ctx, rt, "other", swarm.WithID("r1"), swarm.WithCreated(&created))
	if err != nil || again.ID() != "r1" || created {
		t.Fatalf("start again with id r1: %v, %v, created %v", again, err, created)
	}
	if got := f.Calls(); !slices.Equal(got, []string{`start asker r1 "hello"`, "resume r1 yes"}) {
		t.Fatalf("engine calls %q", got)
	}

	stopped, err := asker.Start(ctx, rt, "stop me")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stopped.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := stopped.Stop(ctx, "enough"); err != nil {
		t.Fatal(err)
	}
	res, err = stopped.Wait(ctx)
	if s, ok := res.(swarm.Stopped); err != nil || !ok || s.Reason != "enough" {
		t.Fatalf("wait after stop: %#v, %v", res, err)
	}
	if got := f.Calls(); got[len(got)-1] != "stop "+stopped.ID()+" enough" {
		t.Fatalf("engine calls %q", got)
	}
}

// What the engine cannot carry is refused at start, and a bad input is
// refused before the engine hears of the run.
func TestEngineStartRefusals(t *testing.T) {
	ctx := t.Context()
	f := &fakeEngine{swarms: []string{"asker", "typed"}}
	rt := newEngineRuntime(t, f)
	typed := swarm.Define[struct {
		N int `json:"n"`
	}, string]("typed", "takes a number", nil)
	if err := rt.Register(asker, typed); err != nil {
		t.Fatal(err)
	}
	for name, start := range map[string]func() error{
		"values": func() error {
			_, err := rt.Start(ctx, "asker", json.RawMessage(`"x"`), swarm.WithValues(map[string]any{"a": 1}))
			return err
		},
		"budget": func() error {
			_, err := rt.Start(ctx, "asker", json.RawMessage(`"x"`), swarm.WithBudget(swarm.Budget{ModelCalls: 3}))
			return err
		},
		"parts": func() error {
			_, err := rt.Start(ctx, "asker", json.RawMessage(`"x"`), swarm.WithParts(model.Part{Text: "a note"}))
			return err
		},
		"bad input": func() error {
			_, err := rt.Start(ctx, "typed", json.RawMessage(`{"n":"not a number"}`))
			return err
		},
		"no input": func() error {
			_, err := rt.Start(ctx, "asker", nil)
			return err
		},
	} {
		if err := start(); !errors.Is(err, swarm.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	if got := f.Calls(); len(got) != 0 {
		t.Fatalf("the engine was asked: %q", got)
	}
}

// The runtime's own engine never drives a run of the other engine: not
// when it recovers runs, not in Work, not by Drive, not a child of such a
// run, and it does not fork one.
func TestEngineRunsNotClaimed(t *testing.T) {
	ctx := t.Context()
	f := &fakeEngine{swarms: []string{"asker"}, release: true}
	rt := newEngineRuntime(t, f)
	run, err := asker.Start(ctx, rt, "hello", swarm.WithID("loose"))
	if err != nil {
		t.Fatal(err)
	}
	// The row is running and unowned, as between a resume and the
	// engine's claim: claimable by anyone.
	ids, err := rt.Recover(ctx)
	if err != nil || len(ids) != 0 {
		t.Fatalf("recover took %v (%v)", ids, err)
	}
	if err := rt.Drive(ctx, run.ID()); !errors.Is(err, swarm.ErrInvalidState) {
		t.Fatalf("drive: %v", err)
	}
	// A child of the run (a child workflow's row) is the engine's too,
	// whatever its swarm.
	if _, err := rt.Store().Create(ctx, store.Run{ID: "loose/child", Swarm: "other", Parent: "loose"}, fakeOwner, time.Millisecond,
		[]store.Record{record(swarm.EventStarted, "start", swarm.Event{Swarm: "other"})}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Register(swarm.Define[string, string]("other", "a child", nil)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the child's lease runs out
	wctx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if err := rt.Work(wctx, swarm.WorkOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Drive(ctx, "loose/child"); !errors.Is(err, swarm.ErrInvalidState) {
		t.Fatalf("drive the child: %v", err)
	}
	for _, id := range []string{"loose", "loose/child"} {
		recs, err := rt.Store().Read(ctx, id, 0, 0)
		if err != nil || len(recs) != 1 {
			t.Fatalf("%s: the runtime wrote to the journal: %d records, %v", id, len(recs), err)
		}
	}
	if m := rt.Metrics(); m.RunsClaimed == 0 {
		t.Fatal("Work claimed nothing: the test does not show that it hands the runs back")
	}
	if _, err := rt.Fork(ctx, "loose", ""); !errors.Is(err, swarm.ErrInvalidState) {
		t.Fatalf("fork: %v", err)
	}
}

// A swarm the engine does not run runs on the runtime's own engine.
func TestEngineOtherSwarmsRunHere(t *testing.T) {
	ctx := t.Context()
	f := &fakeEngine{swarms: []string{"asker"}}
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Engine: f, Model: model.Func(func(context.Context, *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "here"}}, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, _, err := swarm.Define[string, string]("local", "runs here", nil).Run(ctx, rt, "hi")
	if c, ok := res.(swarm.Completed[string]); err != nil || !ok || c.Output != "here" {
		t.Fatalf("%#v, %v", res, err)
	}
	if len(f.Calls()) != 0 {
		t.Fatalf("the engine was asked: %q", f.Calls())
	}
}

// The contract between the runtime and the engines of Config.Engine
// (seam.HeldLease, seam.HeldWaiting): a run created through seam.Remote is
// held for good, and its pause, a running row with the question as its
// reason, reads as paused on every runtime of the store (one without the
// engine too); the answer makes it running again.
func TestEngineHeldPause(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	rt, err := swarm.New(swarm.Config{Store: st, Model: noModel(t), PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(asker); err != nil {
		t.Fatal(err)
	}
	const owner = "other-engine"
	if err := seam.Remote.Create(ctx, rt, "asker", "held", "", json.RawMessage(`"hi"`), owner); err != nil {
		t.Fatal(err)
	}
	row, err := st.Get(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	if row.Owner != owner || !row.LeaseUntil.After(time.Now().Add(seam.HeldLease/2)) || seam.HeldWaiting(row) {
		t.Fatalf("created row %+v: want running, held for good by %s, not waiting", row, owner)
	}
	if s, err := rt.Status(ctx, "held"); err != nil || s.State != swarm.StateRunning {
		t.Fatalf("status before the pause: %+v, %v", s, err)
	}
	if err := seam.Remote.Pause(ctx, rt, "held", owner, 0, "ask", seam.Question{Reason: "may I?"}); err != nil {
		t.Fatal(err)
	}
	if row, err = st.Get(ctx, "held"); err != nil || !seam.HeldWaiting(row) || row.State != store.Running {
		t.Fatalf("paused row %+v, %v: want running, held, waiting", row, err)
	}
	s, err := rt.Status(ctx, "held")
	if err != nil || s.State != swarm.StatePaused || s.Reason != "may I?" || s.Pause != row.LastSeq || s.Owner != "" {
		t.Fatalf("status at the pause: %+v, %v", s, err)
	}
	if ls, err := rt.List(ctx, store.Filter{}); err != nil || len(ls) != 1 || ls[0].State != swarm.StatePaused {
		t.Fatalf("list at the pause: %+v, %v", ls, err)
	}
	if err := seam.Remote.Answer(ctx, rt, "held", owner, "ask", "yes", nil); err != nil {
		t.Fatal(err)
	}
	if s, err := rt.Status(ctx, "held"); err != nil || s.State != swarm.StateRunning {
		t.Fatalf("status after the answer: %+v, %v", s, err)
	}
}
