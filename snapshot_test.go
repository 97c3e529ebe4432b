package swarm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/conversation/conversationtest"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

// reqLog records every model request by agent and call number, as the
// JSON of its system prompt and messages. A request made again (a retry
// after a crash) must equal the first. A compaction's summary requests
// have no call number: they are numbered in the order they come.
type reqLog struct {
	mu   sync.Mutex
	reqs map[string]string
	sums map[string]int
	bad  []string
	m    model.Model
}

func newReqLog(m model.Model) *reqLog {
	return &reqLog{reqs: map[string]string{}, sums: map[string]int{}, m: m}
}

func (l *reqLog) model() model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		b, _ := json.Marshal(struct {
			System   string
			Messages []model.Message
		}{req.System, req.Messages})
		l.mu.Lock()
		key := fmt.Sprintf("%s#%d", req.Agent, req.Call)
		if strings.HasSuffix(req.Agent, "_compact") {
			key = fmt.Sprintf("%s#s%d", req.Agent, l.sums[req.Agent])
			l.sums[req.Agent]++
		}
		if old, ok := l.reqs[key]; ok && old != string(b) {
			l.bad = append(l.bad, fmt.Sprintf("%s:\n  was %s\n  now %s", key, old, b))
		}
		l.reqs[key] = string(b)
		l.mu.Unlock()
		return l.m.Generate(ctx, req)
	})
}

// same reports the requests of l that differ from those of want.
func (l *reqLog) same(t *testing.T, want *reqLog) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.bad {
		t.Errorf("a request was made again with other messages: %s", b)
	}
	if len(l.reqs) != len(want.reqs) {
		t.Errorf("%d distinct requests, want %d", len(l.reqs), len(want.reqs))
	}
	for key, got := range l.reqs {
		if w, ok := want.reqs[key]; !ok || w != got {
			t.Errorf("request %s:\n  got  %s\n  want %s", key, got, w)
		}
	}
}

// readCounter is a memory store that counts the journal records it returns.
type readCounter struct {
	*memory.Store
	read atomic.Int64
	// v2 hands out every snapshot in the layout of version 2 (see
	// asVersion2).
	v2 bool
}

func (c *readCounter) Snapshot(ctx context.Context, id string) (store.Snapshot, error) {
	sn, err := c.Store.Snapshot(ctx, id)
	if err != nil || !c.v2 {
		return sn, err
	}
	sn.Data, err = asVersion2(sn.Data)
	return sn, err
}

func (c *readCounter) Read(ctx context.Context, id string, after int64, limit int) ([]store.Record, error) {
	recs, err := c.Store.Read(ctx, id, after, limit)
	c.read.Add(int64(len(recs)))
	return recs, err
}

// ctxLong bounds a test that talks to a run many times: dozens of drives,
// each replaying the journal, take longer than ctxT allows on a busy
// machine under the race detector.
func ctxLong(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// snapRuntime opens a runtime on mem that snapshots runs every `every`
// records, with its model requests logged in log; it is closed when the
// test ends.
func snapRuntime(t *testing.T, mem *readCounter, log *reqLog, every int) *swarm.Runtime {
	t.Helper()
	// Some of these runs make more model calls than the default limit.
	rt, err := swarm.New(swarm.Config{Store: mem, Model: log.model(), RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond, SnapshotEvery: every, MaxModelCalls: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// longLoop is a swarm whose orchestrator calls a tool in each of rounds
// rounds (two at once in every third, and hands off to an agent in the
// second), then answers.
func longLoop(rounds int) (swarm.Definition, scripted.Script) {
	step := swarm.NewTool("step", "a step", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		return fmt.Sprintf("step %d done", in.N), nil
	})
	helper := &swarm.Agent{Name: "helper", Instructions: "help"}
	def := swarm.Define[string, string]("long", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{step}, Handoffs: []swarm.Handoff{swarm.ToAgent(helper)}, MaxTurns: rounds + 2}
	})
	var steps []scripted.Step
	for i := 1; i <= rounds; i++ {
		calls := []scripted.ToolCall{scripted.CallTool("step", map[string]int{"n": i})}
		switch {
		case i == 2:
			calls = append(calls, scripted.CallTool("handoff_to_helper", map[string]string{"request": "help"}))
		case i%3 == 0:
			calls = append(calls, scripted.CallTool("step", map[string]int{"n": -i}))
		}
		steps = append(steps, scripted.Tools(calls...))
	}
	steps = append(steps, scripted.Text("all done"))
	return def, scripted.Script{"long": steps, "helper": {scripted.Text("helped")}}
}

// TestSnapshotCrashMatrix: a run killed after any append and recovered
// from its newest snapshot (one at every boundary) makes exactly the model
// requests of a run that never crashed, and the same journal.
func TestSnapshotCrashMatrix(t *testing.T) {
	def, script := longLoop(6)
	clean := newReqLog(scripted.New(script))
	counter := dying(t, memory.New(), 0)
	rt0, err := swarm.New(swarm.Config{Store: counter, Model: clean.model(), SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt0.Close()
	if err := rt0.Register(def); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	id0, err := rt0.Start(ctx, "long", []byte(`"go"`))
	if err != nil {
		t.Fatal(err)
	}
	s0, err := rt0.Wait(ctx, id0)
	if err != nil || s0.State != swarm.StateCompleted {
		t.Fatalf("clean run: %+v, %v", s0, err)
	}
	total := len(swarmtest.Events(t, rt0, id0))
	appends := counter.Appends()

	usedSnapshot := false
	// A snapshots at every boundary, or never (then B snapshots the
	// boundaries it replays).
	for _, everyA := range []int{1, -1} {
		for k := int64(1); k < appends; k++ {
			if !t.Run(fmt.Sprintf("a_every_%d/after_append_%d", everyA, k), func(t *testing.T) {
				ctx := ctxT(t)
				mem := &readCounter{Store: memory.New()}
				d := dying(t, mem, k)
				log := newReqLog(scripted.New(script))
				a, err := swarm.New(swarm.Config{Store: d, Model: log.model(), Lease: 60 * time.Millisecond, RetryBackoff: time.Millisecond, Owner: "A", SnapshotEvery: everyA})
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				if err := a.Register(def); err != nil {
					t.Fatal(err)
				}
				id, err := a.Start(ctx, "long", []byte(`"go"`))
				if err != nil {
					t.Fatal(err)
				}
				swarmtest.Until(t, ctx, "A dies or its run ends", func() error {
					if s, err := mem.Get(ctx, id); err != nil || d.Dead() || s.State.Terminal() {
						return err
					}
					return swarmtest.Pending("A alive, its run not ended")
				})
				time.Sleep(80 * time.Millisecond) // A's lease runs out
				_, snapErr := mem.Snapshot(ctx, id)
				b, err := swarm.New(swarm.Config{Store: mem, Model: log.model(), Lease: time.Second, RetryBackoff: time.Millisecond, Owner: "B", SnapshotEvery: 1})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				if err := b.Register(def); err != nil {
					t.Fatal(err)
				}
				before := mem.read.Load()
				if _, err := b.Recover(ctx); err != nil {
					t.Fatal(err)
				}
				s, err := b.Wait(ctx, id)
				if err != nil || s.State != swarm.StateCompleted || string(s.Result) != `"all done"` {
					t.Fatalf("recovered run: %+v, %v", s, err)
				}
				read := mem.read.Load() - before
				swarmtest.AssertJournal(t, b, id)
				if n := len(swarmtest.Events(t, b, id)); n != total {
					t.Errorf("journal has %d records, a clean run %d", n, total)
				}
				log.same(t, clean)
				if snapErr == nil && read < int64(total) {
					usedSnapshot = true
				}
				checkSnapshotCounts(t, mem, id)
			}) {
				break
			}
		}
	}
	if !usedSnapshot {
		t.Error("no recovery read less than the whole journal: snapshots were never used")
	}
}

// checkSnapshotCounts checks that run id's snapshot, if any, counts the
// model calls of each agent journaled up to its record, no more, no less,
// and knows whether the run started child runs by then (which it stops
// when it ends).
func checkSnapshotCounts(t *testing.T, mem *readCounter, id string) {
	t.Helper()
	sn, err := mem.Snapshot(t.Context(), id)
	if err != nil {
		return
	}
	var s struct {
		Seq     int64          `json:"seq"`
		Calls   map[string]int `json:"calls"`
		Spawned bool           `json:"spawned"`
	}
	if err := json.Unmarshal(sn.Data, &s); err != nil || s.Seq != sn.Seq {
		t.Fatalf("snapshot %s: %v", sn.Data, err)
	}
	recs, err := mem.Store.Read(t.Context(), id, 0, int(sn.Seq))
	if err != nil {
		t.Fatal(err)
	}
	want, spawned := map[string]int{}, false
	for _, rec := range recs {
		var ev struct{ Agent, Child string }
		_ = json.Unmarshal(rec.Data, &ev)
		switch swarm.EventType(rec.Type) {
		case swarm.EventModelResponse, swarm.EventModelError:
			want[ev.Agent]++
		case swarm.EventHandoffStarted:
			spawned = spawned || ev.Child != ""
		default:
			// A strategy's own record may say it started child runs
			// (a team's lead its teammates).
			spawned = spawned || !slices.Contains(engineEventTypes, swarm.EventType(rec.Type))
		}
	}
	if fmt.Sprint(s.Calls) != fmt.Sprint(want) {
		t.Errorf("snapshot at record %d counts model calls %v; the journal up to it has %v", s.Seq, s.Calls, want)
	}
	if s.Spawned != spawned {
		t.Errorf("snapshot at record %d says the run started child runs: %v; the journal up to it: %v", s.Seq, s.Spawned, spawned)
	}
}

// engineEventTypes are the types of the events the engine journals.
var engineEventTypes = []swarm.EventType{swarm.EventStarted, swarm.EventModelResponse, swarm.EventModelError,
	swarm.EventToolCall, swarm.EventToolResult, swarm.EventHandoffStarted, swarm.EventHandoffReturned,
	swarm.EventTurnCompleted, swarm.EventPaused, swarm.EventResumed, swarm.EventCompleted, swarm.EventFailed,
	swarm.EventStopped, swarm.EventRecorded, swarm.EventGuardrail, swarm.EventCompacted, swarm.EventDelta}

// shopScript scripts n messages of the shop conversation: in each four,
// the receptionist hands over to sales, which applies a discount and
// answers; sales answers; sales hands back; the receptionist answers.
func shopScript(n int) scripted.Script {
	var rec, sales []scripted.Step
	for i := 1; i <= n; i++ {
		switch i % 4 {
		case 1:
			calls := []scripted.ToolCall{scripted.CallTool("transfer_to_sales", map[string]any{"topic": fmt.Sprint("topic ", i)})}
			if i == 1 {
				calls = append([]scripted.ToolCall{scripted.CallTool("lookup_customer", map[string]any{"name": "Ada"})}, calls...)
			}
			rec = append(rec, scripted.Tools(calls...))
			sales = append(sales, scripted.Tools(scripted.CallTool("apply_discount", map[string]any{"percent": i})), scripted.Text(fmt.Sprint("offer ", i)))
		case 2:
			sales = append(sales, scripted.Text(fmt.Sprint("answer ", i)))
		case 3:
			sales = append(sales, scripted.Tools(scripted.CallTool("transfer_to_receptionist", map[string]any{})))
			rec = append(rec, scripted.Text(fmt.Sprint("back ", i)))
		case 0:
			rec = append(rec, scripted.Text(fmt.Sprint("hello ", i)))
		}
	}
	return scripted.Script{"receptionist": rec, "sales": sales}
}

// TestSnapshotConversation: a long conversation continued from snapshots
// (each message is a new drive of the run, in this process or after a
// restart) sends the model exactly the requests of one replayed from its
// journal's start, and each message reads a bounded part of the journal
// rather than all of it.
func TestSnapshotConversation(t *testing.T) {
	const messages, every = 60, 12
	script := shopScript(messages)
	conv := shop(conversationtest.NewEffects(), nil)
	talk := func(t *testing.T, every int, restartAt int) (*reqLog, []int64) {
		ctx := ctxLong(t)
		mem := &readCounter{Store: memory.New()}
		log := newReqLog(scripted.New(script))
		rt := snapRuntime(t, mem, log, every)
		sess, err := conv.Start(ctx, rt, swarm.WithID("chat"))
		if err != nil {
			t.Fatal(err)
		}
		var reads []int64
		for i := 1; i <= messages; i++ {
			if i == restartAt {
				rt.Close()
				rt = snapRuntime(t, mem, log, every)
				if sess, err = conv.Start(ctx, rt, swarm.WithID("chat")); err != nil {
					t.Fatal(err)
				}
			}
			before := mem.read.Load()
			r, err := sess.Say(ctx, fmt.Sprint("message ", i))
			if err != nil || r.Text == "" {
				t.Fatalf("message %d: %+v, %v", i, r, err)
			}
			reads = append(reads, mem.read.Load()-before)
		}
		if every > 0 {
			checkSnapshotCounts(t, mem, "chat")
		}
		return log, reads
	}
	clean, fullReads := talk(t, -1, 0)
	snapped, reads := talk(t, every, messages/2)
	snapped.same(t, clean)
	// A message adds at most 12 records here. Say reads the newest ones
	// (its pause, its answer: a few dozen), and with snapshots the drive
	// reads the records since the newest snapshot: up to every, and the
	// message's.
	bound := int64(every + 6*12)
	for i, n := range reads {
		if i >= 2*every && n > bound {
			t.Errorf("message %d read %d journal records with snapshots every %d (bound %d)", i+1, n, every, bound)
		}
	}
	if last := fullReads[len(fullReads)-1]; last <= 3*bound {
		t.Fatalf("without snapshots the last message read only %d records: the test cannot tell", last)
	}
	t.Logf("records read by the last message: %d without snapshots, %d with", fullReads[len(fullReads)-1], reads[len(reads)-1])
}

// TestSnapshotTeamLead: a team lead (the member strategy) answering many
// messages, continued from snapshots, sends the model exactly the requests
// of one replayed from its journal's start.
func TestSnapshotTeamLead(t *testing.T) {
	const messages = 30
	note := swarm.NewTool("note", "takes a note", func(ctx context.Context, in struct {
		N int `json:"n"`
	}) (string, error) {
		return fmt.Sprint("noted ", in.N), nil
	})
	var steps []scripted.Step
	for i := 1; i <= messages; i++ {
		if i%3 == 0 {
			steps = append(steps, scripted.Tools(scripted.CallTool("note", map[string]int{"n": i})))
		}
		steps = append(steps, scripted.Text(fmt.Sprint("reply ", i)))
	}
	script := scripted.Script{"lead": steps}
	crew := team.DefineTeam("crew", "", team.TeamSpec{Lead: &swarm.Agent{Name: "lead", Instructions: "Lead.", Tools: []swarm.Tool{note}}})
	talk := func(every int) *reqLog {
		ctx := ctxLong(t)
		mem := &readCounter{Store: memory.New()}
		log := newReqLog(scripted.New(script))
		rt := snapRuntime(t, mem, log, every)
		tdef, err := crew.Start(ctx, rt, "")
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= messages; i++ {
			if reply, err := tdef.Say(ctx, fmt.Sprint("message ", i)); err != nil || reply != fmt.Sprint("reply ", i) {
				t.Fatalf("message %d: %q, %v", i, reply, err)
			}
		}
		if every > 0 {
			if _, err := mem.Snapshot(ctx, tdef.ID()); err != nil {
				t.Fatalf("no snapshot after %d messages: %v", messages, err)
			}
			checkSnapshotCounts(t, mem, tdef.ID())
		}
		return log
	}
	talk(5).same(t, talk(-1))
}

// TestSnapshotUnusable: a snapshot that cannot be used (not JSON, another
// layout, another strategy's, a record the journal does not have) costs
// only a replay from the journal's start.
func TestSnapshotUnusable(t *testing.T) {
	script := shopScript(8)
	conv := shop(conversationtest.NewEffects(), nil)
	var clean *reqLog
	for _, data := range []string{
		"", // none: the requests to expect
		`not json`,
		`{"v":99,"kind":"conversation","seq":%d,"next":3}`,
		`{"v":1,"kind":"simple","seq":%d,"next":3,"msgs":[{"role":"user","content":"bogus"}]}`,
		`{"v":1,"kind":"conversation","seq":%d,"next":1}`,
	} {
		ctx := ctxLong(t)
		mem := &readCounter{Store: memory.New()}
		log := newReqLog(scripted.New(script))
		rt := snapRuntime(t, mem, log, 1000)
		sess, err := conv.Start(ctx, rt, swarm.WithID("chat"))
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 8; i++ {
			if i == 5 && data != "" {
				run, _ := mem.Get(ctx, "chat")
				seq := run.LastSeq
				if data == `{"v":1,"kind":"conversation","seq":%d,"next":1}` {
					seq-- // a seq the snapshot does not claim
				}
				raw := data
				if strings.Contains(data, "%d") {
					raw = fmt.Sprintf(data, run.LastSeq)
				}
				if err := mem.PutSnapshot(ctx, "chat", store.Snapshot{Seq: seq, Data: []byte(raw), Time: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			if r, err := sess.Say(ctx, fmt.Sprint("message ", i)); err != nil || r.Text == "" {
				t.Fatalf("%s: message %d: %+v, %v", data, i, r, err)
			}
		}
		if data == "" {
			clean = log
			continue
		}
		log.same(t, clean)
	}
}

// TestSnapshotTeammate: a teammate woken by mail again and again,
// continued from snapshots, sends the model exactly the requests of one
// replayed from its journal's start.
func TestSnapshotTeammate(t *testing.T) {
	const wakes = 20
	var steps []scripted.Step
	for i := 1; i <= wakes; i++ {
		steps = append(steps, scripted.Text(fmt.Sprint("done ", i)))
	}
	script := scripted.Script{"bob": steps}
	crew := team.DefineTeam("crew", "", team.TeamSpec{
		Lead:    &swarm.Agent{Name: "lead", Instructions: "Lead."},
		Members: []team.Teammate{{Name: "bob", Role: "helper"}},
	})
	talk := func(every int, v2 bool) *reqLog {
		ctx := ctxLong(t)
		mem := &readCounter{Store: memory.New(), v2: v2}
		log := newReqLog(scripted.New(script))
		rt := snapRuntime(t, mem, log, every)
		tdef, err := crew.Start(ctx, rt, "")
		if err != nil {
			t.Fatal(err)
		}
		bob := tdef.ID() + "~bob"
		// idle waits until bob has answered n pieces of work and is idle.
		idle := func(n int) {
			swarmtest.Until(t, ctx, fmt.Sprintf("bob answers %d pieces of work", n), func() error {
				s, err := rt.Status(ctx, bob)
				if err != nil {
					return err
				}
				if s.State.Terminal() {
					return fmt.Errorf("bob has ended: %s %s", s.State, s.Reason)
				}
				replies := 0
				for _, ev := range swarmtest.Events(t, rt, bob) {
					if ev.Type == swarm.EventReply {
						replies++
					}
				}
				switch {
				case replies > n:
					return fmt.Errorf("bob answered %d pieces of work, but was sent %d", replies, n)
				case replies < n || s.State != swarm.StatePaused || s.Reason != swarm.AwaitingMail:
					return swarmtest.Pending("bob %s (%s), %d answers", s.State, s.Reason, replies)
				}
				return nil
			})
		}
		idle(0)
		for i := 1; i <= wakes; i++ {
			if _, err := tdef.Send(ctx, "bob", fmt.Sprint("task ", i)); err != nil {
				t.Fatal(err)
			}
			idle(i)
		}
		if every > 0 {
			if _, err := mem.Snapshot(ctx, bob); err != nil {
				t.Fatalf("no snapshot after %d wakes: %v", wakes, err)
			}
			checkSnapshotCounts(t, mem, bob)
		}
		return log
	}
	plain := talk(-1, false)
	talk(4, false).same(t, plain)
	// A member's snapshot of version 2 (its state at the top level) still
	// restores: each one is read so at the next wake.
	talk(4, true).same(t, plain)
}

// snapSize is the size of run id's snapshot in bytes (0: none yet).
func snapSize(t *testing.T, mem *readCounter, id string) int {
	t.Helper()
	sn, err := mem.Snapshot(t.Context(), id)
	if errors.Is(err, store.ErrNoSnapshot) {
		return 0
	}
	if err != nil {
		t.Fatalf("snapshot of %s: %v", id, err)
	}
	return len(sn.Data)
}

// TestCompactedSnapshotIsBounded: the snapshot of a compacted run holds
// the compacted history, not the whole of it: a loop of 1,000 rounds, a
// team lead and a conversation of 1,000 messages snapshot about what they
// do at 250.
func TestCompactedSnapshotIsBounded(t *testing.T) {
	const slack = 2048 // bytes: summaries and counters grow by a few digits
	t.Run("loop", func(t *testing.T) {
		size := func(rounds int) int {
			ctx := ctxLong(t)
			def := longSwarm(&compact.Config{Window: 2000, Keep: 2}, rounds)
			mem := &readCounter{Store: memory.New()}
			rt := snapRuntime(t, mem, newReqLog(scripted.New(longScript(rounds))), 1)
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}
			_, run, err := def.Run(ctx, rt, "go")
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := rt.Status(ctx, run.ID()); s.State != swarm.StateCompleted {
				t.Fatalf("%d rounds: state %s (%s)", rounds, s.State, s.Reason)
			}
			return snapSize(t, mem, run.ID())
		}
		small, large := size(250), size(1000)
		t.Logf("snapshot: %d bytes at 250 rounds, %d at 1,000", small, large)
		if large > small+slack {
			t.Errorf("snapshot grew from %d bytes at 250 rounds to %d at 1,000", small, large)
		}
	})
	// talk says 1,000 messages with say (which returns the run) and
	// compares the largest snapshot of the first 250 with that of the
	// last 250: what is not summarized yet comes and goes with each
	// compaction.
	talk := func(t *testing.T, mem *readCounter, say func(i int) string) {
		var small, large int
		for i := range 1000 {
			switch n := snapSize(t, mem, say(i)); {
			case i < 250:
				small = max(small, n)
			case i >= 750:
				large = max(large, n)
			}
		}
		t.Logf("largest snapshot: %d bytes in the first 250 messages, %d in the last 250 of 1,000", small, large)
		if large > small+slack {
			t.Errorf("the largest snapshot grew from %d bytes in the first 250 messages to %d in the last 250 of 1,000", small, large)
		}
	}
	t.Run("team_lead", func(t *testing.T) {
		var steps []scripted.Step
		for i := range 1000 {
			steps = append(steps, scripted.Text(fmt.Sprint("reply ", i)))
		}
		ctx := ctxLong(t)
		mem := &readCounter{Store: memory.New()}
		rt := snapRuntime(t, mem, newReqLog(scripted.New(scripted.Script{"lead": steps, "lead_compact": {scripted.Text("the user talked")}})), 50)
		crew := team.DefineTeam("crew", "", team.TeamSpec{Lead: &swarm.Agent{Name: "lead", Instructions: "Lead."},
			Compaction: &compact.Config{Messages: 40, Keep: 2}})
		tdef, err := crew.Start(ctx, rt, "")
		if err != nil {
			t.Fatal(err)
		}
		talk(t, mem, func(i int) string {
			if reply, err := tdef.Say(ctx, fmt.Sprint("message ", i, strings.Repeat(" pad", 50))); err != nil || reply != fmt.Sprint("reply ", i) {
				t.Fatalf("message %d: %q, %v", i, reply, err)
			}
			return tdef.ID()
		})
	})
	for _, policy := range []conversation.HistoryPolicy{conversation.HistoryOwnTools, conversation.HistoryText} {
		t.Run("conversation/"+policy.String(), func(t *testing.T) {
			ctx := ctxLong(t)
			mem := &readCounter{Store: memory.New()}
			rt := snapRuntime(t, mem, newReqLog(scripted.New(chatScript(1000, -1))), 50)
			conv := chatConv(&compact.Config{Window: 1500, Trigger: 0.7, Keep: 1}, policy)
			sess, err := conv.Start(ctx, rt)
			if err != nil {
				t.Fatal(err)
			}
			talk(t, mem, func(i int) string {
				if rep, err := sess.Say(ctx, fmt.Sprintf("message %d", i)); err != nil || rep.Text != fmt.Sprintf("answer %d", i) {
					t.Fatalf("message %d: reply %+v, %v", i, rep, err)
				}
				return sess.ID()
			})
		})
	}
}

// TestCompactedSnapshotContinues: a compacted loop that pauses every 20
// rounds and a compacted conversation (each message is a new drive, and
// the runtime restarts halfway), continued from snapshots, make exactly
// the requests (summaries included) and the compactions of ones replayed
// from the journal's start.
func TestCompactedSnapshotContinues(t *testing.T) {
	// talk drives a run to its end with snapshots every `every` records
	// (negative: none). open is called with each runtime (one is reopened
	// before drive 3); drive makes drive n (from 0) and returns the run
	// and whether there is another. talk returns the requests, the
	// compactions and the journal records the last drive read.
	talk := func(t *testing.T, every int, script scripted.Script, open func(context.Context, *swarm.Runtime),
		drive func(ctx context.Context, n int) (string, bool)) (*reqLog, []string, int64) {
		ctx := ctxLong(t)
		mem := &readCounter{Store: memory.New()}
		log := newReqLog(scripted.New(script))
		rt := snapRuntime(t, mem, log, every)
		open(ctx, rt)
		for n := 0; ; n++ {
			if n == 3 {
				rt.Close()
				rt = snapRuntime(t, mem, log, every)
				open(ctx, rt)
			}
			before := mem.read.Load()
			id, more := drive(ctx, n)
			if !more {
				return log, compactions(t, rt, id), mem.read.Load() - before
			}
		}
	}
	check := func(t *testing.T, run func(every int) (*reqLog, []string, int64)) {
		full, fullC, fullRead := run(-1)
		snapped, snapC, read := run(1)
		snapped.same(t, full)
		if len(fullC) < 3 || fmt.Sprint(snapC) != fmt.Sprint(fullC) {
			t.Errorf("compactions from snapshots %v; replayed from the start %v", snapC, fullC)
		}
		if read >= fullRead {
			t.Errorf("the last drive read %d records from a snapshot, %d replaying the journal: the snapshot was not used", read, fullRead)
		}
	}
	t.Run("loop", func(t *testing.T) {
		const rounds = 120
		script := longScript(rounds)
		for i := 20; i < rounds; i += 20 {
			script["long"][i] = scripted.Tools(scripted.CallTool("pause", map[string]any{"reason": fmt.Sprint("check ", i)}))
		}
		def := longSwarm(&compact.Config{Window: 2000, Keep: 2}, rounds)
		check(t, func(every int) (*reqLog, []string, int64) {
			var rt *swarm.Runtime
			var id string
			open := func(_ context.Context, r *swarm.Runtime) {
				if rt = r; rt.Register(def) != nil {
					t.Fatal("register")
				}
			}
			return talk(t, every, script, open, func(ctx context.Context, n int) (string, bool) {
				var err error
				if n == 0 {
					id, err = rt.Start(ctx, def.ID(), []byte(`"go"`))
				} else {
					err = rt.Resume(ctx, id, "go on")
				}
				if err != nil {
					t.Fatal(err)
				}
				s, err := rt.Wait(ctx, id)
				if err != nil || (s.State != swarm.StatePaused && s.State != swarm.StateCompleted) {
					t.Fatalf("drive %d: %+v, %v", n, s, err)
				}
				return id, s.State == swarm.StatePaused
			})
		})
	})
	for _, policy := range []conversation.HistoryPolicy{conversation.HistoryOwnTools, conversation.HistoryText} {
		t.Run("conversation/"+policy.String(), func(t *testing.T) {
			const messages = 160
			script := chatScript(messages, 40)
			conv := chatConv(&compact.Config{Window: 1500, Trigger: 0.7, Keep: 1}, policy)
			check(t, func(every int) (*reqLog, []string, int64) {
				var sess *conversation.Session[Sale]
				open := func(ctx context.Context, rt *swarm.Runtime) {
					var err error
					if sess, err = conv.Start(ctx, rt, swarm.WithID("chat")); err != nil {
						t.Fatal(err)
					}
				}
				return talk(t, every, script, open, func(ctx context.Context, n int) (string, bool) {
					if rep, err := sess.Say(ctx, fmt.Sprintf("message %d", n)); err != nil || rep.Text != fmt.Sprintf("answer %d", n) {
						t.Fatalf("message %d: reply %+v, %v", n, rep, err)
					}
					return sess.ID(), n+1 < messages
				})
			})
		})
	}
}

// asVersion2 rewrites a snapshot of a member in the layout of version 2:
// its state (next, msgs, claims) at the top level.
func asVersion2(data []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	var state map[string]json.RawMessage
	if err := json.Unmarshal(top["state"], &state); err != nil {
		return nil, fmt.Errorf("snapshot %s: no state: %w", data, err)
	}
	delete(top, "state")
	maps.Copy(top, state)
	top["v"] = json.RawMessage("2")
	return json.Marshal(top)
}
