// Package strategytest crash-tests a kind of run, in the spirit of
// storetest for stores: given the definitions of a run and the script its
// model plays, [Run] drives it once to learn its journal, then kills the
// process after each journal append in turn and recovers the run in a
// second runtime on the same store, on the memory store, SQLite and
// PostgreSQL. Each recovered run must end as the clean run did, with the
// same journal, and no model response that was journaled before the crash
// may be asked for again.
//
// One line tests a strategy, a swarm or a team:
//
//	strategytest.Run(t, strategytest.Case{Definitions: []swarm.Definition{def}, Swarm: "trip", Input: []byte(`"go"`), Script: script})
//
// A process "dies" when its store refuses every call after the k-th append:
// the journal, the row updates, leases, inbox, mail, task board and
// snapshots alike. The model response of a call in flight at that moment
// is lost, as in a real crash, and asked for again by the recovery; a
// response already journaled is not. Tools with side effects should use
// [swarm.IdempotencyKey]: a tool whose result was not journaled before the
// crash runs again (at least once), and its key is the same both times.
//
// PostgreSQL is the server named by SWARM_TEST_POSTGRES (see pgtest); the
// PostgreSQL cases skip, loudly, without one.
package strategytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
	"github.com/swarmrt/swarm/swarmtest"

	_ "github.com/swarmrt/swarm/store/postgres" // the postgres: scheme of store.Open
	_ "github.com/swarmrt/swarm/store/sqlite"   // the sqlite: scheme of store.Open
)

// The stores a case runs on.
const (
	Memory   = "memory"
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Case is one kind of run to crash-test.
type Case struct {
	// Definitions are registered on every runtime: the swarm under test
	// and whatever it hands off to.
	Definitions []swarm.Definition
	// Agents are registered with [swarm.Runtime.RegisterAgent].
	Agents []*swarm.Agent
	// Swarm is the definition to start, with Input.
	Swarm string
	Input json.RawMessage
	// Script is what the model plays, in every process.
	Script scripted.Script
	// Answers are given, in order, to the pauses of the run: whenever the
	// run waits for a human, the next answer resumes it. A run that
	// pauses with no answer left ends the case paused.
	Answers []string
	// Want is the state a clean run must end in (default completed), so
	// that a case whose script goes wrong fails instead of comparing two
	// equal failures.
	Want swarm.State
	// Timing marks a kind of run whose scheduling records depend on when
	// things happen: a teammate that goes idle before a mail arrives
	// journals an idle, a pause and a resume, one that finds the mail
	// waiting journals a wake. The kit then compares each run's steps
	// (model responses, tool results, handoffs and replies) instead of
	// its whole journal; outcomes and the no-redo rule stay as strict.
	Timing bool
	// Check, when set, looks at the clean run and at every recovered one
	// (its runtime and the root run's id) for what a case must hold
	// beyond the kit's rules: a transcript, a task board, a side effect.
	Check func(t *testing.T, rt *swarm.Runtime, id string)
	// Config, when set, adjusts each runtime's configuration (for
	// instance SnapshotEvery). Store, Model, Owner, Lease and
	// PollInterval are the kit's.
	Config func(*swarm.Config)
	// Stores are the stores to run on (default Memory, SQLite, Postgres).
	Stores []string
	// Boundaries, when positive, tests only the first Boundaries appends
	// (a long run's matrix grows with its journal).
	Boundaries int
	// Result, when set, maps a run's result to what the kit compares
	// between a clean run and a recovered one: a kind of run whose result
	// holds what no replay can repeat (the times in an eval report) leaves
	// it out here. The journals are compared as they are.
	Result func(result json.RawMessage) json.RawMessage
}

// Run crash-tests c at every journal boundary on each of c's stores, each
// store and boundary a subtest of its own.
func Run(t *testing.T, c Case) {
	t.Helper()
	if err := c.Script.Validate(); err != nil {
		t.Fatalf("strategytest: invalid script: %v", err)
	}
	stores := c.Stores
	if len(stores) == 0 {
		stores = []string{Memory, SQLite, Postgres}
	}
	for _, kind := range stores {
		t.Run(kind, func(t *testing.T) {
			open := opener(t, kind)
			clean := c.clean(t, open)
			last := clean.appends
			if c.Boundaries > 0 && int64(c.Boundaries) < last {
				last = int64(c.Boundaries)
			}
			for k := int64(1); k < last; k++ {
				if !t.Run(fmt.Sprintf("crash_after_append_%d", k), func(t *testing.T) { c.crash(t, open, k, clean) }) {
					break // the next boundaries would most likely fail the same way
				}
			}
		})
	}
}

// runID is the id of every run the kit starts, each on a store of its own:
// the ids of its child runs derive from it, so that the journals of a
// clean run and of a recovered one name the same runs.
const runID = "strategytest-run"

// outcome is what a run tree left in its store.
type outcome struct {
	state    swarm.State
	reason   string
	result   json.RawMessage
	journals map[string][]string // run id -> its records' "type key", sorted
	appends  int64
}

// opener returns a function that opens a fresh, empty store of kind for t.
func opener(t *testing.T, kind string) func(t *testing.T) store.Store {
	var url func(t *testing.T) string
	switch kind {
	case Memory:
		return func(t *testing.T) store.Store { return memory.New() }
	case SQLite:
		url = func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "runs.db") }
	case Postgres:
		pgtest.Server(t)
		url = func(t *testing.T) string { return pgtest.URL(t, "pool_max_conns=8") }
	default:
		t.Fatalf("strategytest: unknown store %q (want %s, %s or %s)", kind, Memory, SQLite, Postgres)
	}
	return func(t *testing.T) store.Store {
		t.Helper()
		s, err := store.Open(context.Background(), url(t))
		if err != nil {
			t.Fatalf("strategytest: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// runtime starts a runtime on s whose model plays c's script and counts
// the responses it gives in calls.
func (c *Case) runtime(t *testing.T, s store.Store, owner string, lease time.Duration, calls *callLog) *swarm.Runtime {
	t.Helper()
	m := scripted.New(c.Script)
	cfg := swarm.Config{
		Store: s, Owner: owner, Lease: lease, PollInterval: 5 * time.Millisecond, RetryBackoff: time.Millisecond,
		Model: model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			resp, err := m.Generate(ctx, req)
			if err == nil {
				calls.add(req)
			}
			return resp, err
		}),
	}
	if c.Config != nil {
		c.Config(&cfg)
		cfg.Store, cfg.Owner, cfg.Lease, cfg.PollInterval = s, owner, lease, 5*time.Millisecond
	}
	rt, err := swarm.New(cfg)
	if err != nil {
		t.Fatalf("strategytest: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(c.Definitions...); err != nil {
		t.Fatalf("strategytest: %v", err)
	}
	if len(c.Agents) > 0 {
		if err := rt.RegisterAgent(c.Agents...); err != nil {
			t.Fatalf("strategytest: %v", err)
		}
	}
	return rt
}

// clean drives c once without a crash and returns how it ended.
func (c *Case) clean(t *testing.T, open func(*testing.T) store.Store) outcome {
	t.Helper()
	ctx := swarmtest.Context(t)
	d := swarmtest.NewKillable(t, open(t))
	rt := c.runtime(t, d, "clean", 10*time.Second, &callLog{})
	id, err := rt.Start(ctx, c.Swarm, c.Input, swarm.WithID(runID))
	if err != nil {
		t.Fatalf("strategytest: start %s: %v", c.Swarm, err)
	}
	p := &pauses{answers: c.Answers}
	s := p.finish(t, ctx, rt, id)
	want := c.Want
	if want == "" {
		want = swarm.StateCompleted
	}
	if s.State != want {
		t.Fatalf("strategytest: a clean run of %s ended %s (%s), want %s", c.Swarm, s.State, s.Reason, want)
	}
	if c.Check != nil {
		c.Check(t, rt, id)
	}
	o := observe(t, ctx, d.Base(), id, s, c.Timing)
	o.appends = d.Appends()
	if o.appends < 2 {
		t.Fatalf("strategytest: a clean run made %d appends: nothing to crash between", o.appends)
	}
	return o
}

// crash drives c in a process that dies after its k-th append, recovers it
// in another, and compares the outcome with the clean run's.
func (c *Case) crash(t *testing.T, open func(*testing.T) store.Store, k int64, clean outcome) {
	ctx := swarmtest.Context(t)
	base := open(t)
	d := swarmtest.NewKillable(t, base)
	d.DieAfter(k)
	var callsA, callsB callLog
	const leaseA = 150 * time.Millisecond
	a := c.runtime(t, d, "A", leaseA, &callsA)
	id, err := a.Start(ctx, c.Swarm, c.Input, swarm.WithID(runID))
	if err != nil {
		t.Fatalf("strategytest: start %s: %v", c.Swarm, err)
	}
	p := &pauses{answers: c.Answers}
	// Drive A until it dies (or the run ends or waits with no answer
	// left, when k is past the last append such a run makes).
	swarmtest.Until(t, ctx, "the first process to die", func() error {
		if d.Dead() {
			return nil
		}
		r, err := base.Get(ctx, id)
		if err != nil {
			return swarmtest.Pending("run %s: %v", id, err)
		}
		if r.State.Terminal() {
			return nil
		}
		if r.State == store.Paused && !p.answer(ctx, base, a, id, r, true) {
			return nil
		}
		return swarmtest.Pending("run %s is %s after %d appends", id, r.State, d.Appends())
	})
	atDeath := journaled(t, ctx, base)
	a.Close()
	time.Sleep(2 * leaseA) // A's leases run out

	b := c.runtime(t, base, "B", 5*time.Second, &callsB)
	if _, err := b.Recover(ctx); err != nil {
		t.Fatalf("strategytest: recover: %v", err)
	}
	s := p.finish(t, ctx, b, id)
	got := observe(t, ctx, base, id, s, c.Timing)
	if c.Check != nil {
		c.Check(t, b, id)
	}

	gotResult, cleanResult := got.result, clean.result
	if c.Result != nil {
		gotResult, cleanResult = c.Result(gotResult), c.Result(cleanResult)
	}
	if got.state != clean.state || got.reason != clean.reason || !sameJSON(gotResult, cleanResult) {
		t.Errorf("after a crash after append %d the run ended %s (%q) with %s; a clean run %s (%q) with %s",
			k, got.state, got.reason, got.result, clean.state, clean.reason, clean.result)
	}
	for run, want := range clean.journals {
		if g := got.journals[run]; !slices.Equal(g, want) {
			extra, missing := diffRecords(g, want)
			t.Errorf("run %s: journal after a crash after append %d differs from a clean run's: only after the crash: %v; only in the clean run: %v (a step key that is not a function of the journal, or a step done again)\nafter the crash\n  %s\nclean\n  %s",
				run, k, extra, missing, strings.Join(g, "\n  "), strings.Join(want, "\n  "))
		}
	}
	for run := range got.journals {
		if _, ok := clean.journals[run]; !ok {
			t.Errorf("run %s exists after a crash after append %d, not after a clean run", run, k)
		}
	}
	for run := range got.journals {
		swarmtest.AssertJournal(t, b, run)
	}
	// No journaled model response is asked for again: of the responses A
	// got, B may ask again only for those A got and did not journal.
	redone := callsA.common(&callsB)
	if lost := callsA.len() - atDeath.models; redone > lost {
		t.Errorf("after a crash after append %d the recovery asked the model again for %d responses; only %d were lost (A got %d and had journaled %d)",
			k, redone, lost, callsA.len(), atDeath.models)
	}
}

// pauses answers a run tree's pauses with a case's answers, each pause
// once, whichever process sees it.
type pauses struct {
	answers  []string
	answered map[string]bool // "run@pause"
}

// answer resumes run id (with row r, paused) with the next answer unless
// it has none left (then it returns false). In a dying process (async) the
// resume runs aside, and the pause counts as answered only once the store
// shows the answer delivered.
func (p *pauses) answer(ctx context.Context, s store.Store, rt *swarm.Runtime, id string, r store.Run, async bool) bool {
	if p.answered == nil {
		p.answered = map[string]bool{}
	}
	key := fmt.Sprintf("%s@%d", id, r.LastSeq)
	if p.answered[key] {
		return true
	}
	n := len(p.answered)
	if n >= len(p.answers) {
		return false
	}
	resume := func() { _ = rt.Resume(ctx, id, p.answers[n], swarm.AtPause(r.LastSeq)) }
	if !async {
		resume()
		p.answered[key] = true
		return true
	}
	go resume()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		now, err := s.Get(ctx, id)
		if err == nil && (now.State != store.Paused || now.LastSeq != r.LastSeq) {
			p.answered[key] = true
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true // not delivered (the process died): the next process answers
}

// finish waits for run id to end in rt, answering its pauses, and returns
// its final status: terminal, or paused with no answer left.
func (p *pauses) finish(t *testing.T, ctx context.Context, rt *swarm.Runtime, id string) swarm.Status {
	t.Helper()
	for {
		s, err := rt.Wait(ctx, id)
		if err != nil {
			t.Fatalf("strategytest: wait for %s: %v", id, err)
		}
		if s.State == swarm.StatePaused {
			r, err := rt.Store().Get(ctx, id)
			if err != nil {
				t.Fatalf("strategytest: %v", err)
			}
			if p.answer(ctx, rt.Store(), rt, id, r, false) {
				continue
			}
		}
		settle(t, ctx, rt.Store())
		return s
	}
}

// settle waits until no run in s is running: the runs a root leaves
// behind (a team's idle teammates, children still stopping) have settled.
func settle(t *testing.T, ctx context.Context, s store.Store) {
	t.Helper()
	swarmtest.Until(t, ctx, "every run to settle", func() error {
		for id, r := range runs(t, ctx, s) {
			if r.State == store.Running {
				return swarmtest.Pending("run %s is running", id)
			}
		}
		return nil
	})
}

// steps are the records a run with Timing is compared by.
var steps = map[string]bool{
	string(swarm.EventModelResponse): true, string(swarm.EventToolResult): true,
	string(swarm.EventHandoffReturned): true, string(swarm.EventReply): true,
}

// observe reads how run id's tree ended from s; with onlySteps, each
// journal is its steps.
func observe(t *testing.T, ctx context.Context, s store.Store, id string, st swarm.Status, onlySteps bool) outcome {
	t.Helper()
	o := outcome{state: st.State, reason: st.Reason, result: st.Result, journals: map[string][]string{}}
	for run, recs := range readAll(t, ctx, s) {
		var lines []string
		for _, r := range recs {
			if !onlySteps || steps[r.Type] {
				lines = append(lines, r.Type+" "+r.Key)
			}
		}
		// Parallel branches append in the order they finish: compare the
		// records, not their order (AssertJournal checks the order's rules).
		slices.Sort(lines)
		o.journals[run] = lines
	}
	return o
}

// death is what the journal held when a process died.
type death struct{ models int }

// journaled counts the model responses the store's journals hold.
func journaled(t *testing.T, ctx context.Context, s store.Store) death {
	var d death
	for _, recs := range readAll(t, ctx, s) {
		for _, r := range recs {
			if strings.HasSuffix(r.Key, "/model") {
				d.models++
			}
		}
	}
	return d
}

// readAll returns every run's records.
func readAll(t *testing.T, ctx context.Context, s store.Store) map[string][]store.Record {
	t.Helper()
	out := map[string][]store.Record{}
	for id := range runs(t, ctx, s) {
		recs, err := s.Read(ctx, id, 0, 0)
		if err != nil {
			t.Fatalf("strategytest: read %s: %v", id, err)
		}
		out[id] = recs
	}
	return out
}

// runs returns every run in s by id.
func runs(t *testing.T, ctx context.Context, s store.Store) map[string]store.Run {
	t.Helper()
	out := map[string]store.Run{}
	f := store.Filter{Limit: 500}
	for {
		page, err := s.List(ctx, f)
		if err != nil {
			t.Fatalf("strategytest: list runs: %v", err)
		}
		for _, r := range page {
			out[r.ID] = r
		}
		if len(page) < f.Limit {
			return out
		}
		f.Before = page[len(page)-1].ID
	}
}

func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// callLog records the model responses a process got: run, agent and the
// agent's call number in the run.
type callLog struct {
	mu    sync.Mutex
	calls map[string]int
}

func (l *callLog) add(req *model.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls == nil {
		l.calls = map[string]int{}
	}
	l.calls[fmt.Sprintf("%s/%s/%d", req.RunID, req.Agent, req.Call)]++
}

func (l *callLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		n += c
	}
	return n
}

// common counts the responses both logs got.
func (l *callLog) common(o *callLog) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for k, c := range l.calls {
		n += min(c, o.calls[k])
	}
	return n
}

// diffRecords returns the records ("type key") of got that want lacks and
// those of want that got lacks, counting repeats.
func diffRecords(got, want []string) (extra, missing []string) {
	n := map[string]int{}
	for _, r := range want {
		n[r]++
	}
	for _, r := range got {
		if n[r] > 0 {
			n[r]--
			continue
		}
		extra = append(extra, r)
	}
	for _, r := range want {
		if n[r] > 0 {
			n[r]--
			missing = append(missing, r)
		}
	}
	return extra, missing
}
