package swarm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

// windowed is a model that measures each request against a window (about
// four bytes a token, as the runtime estimates) and counts summary calls.
type windowed struct {
	model.Model
	window    int
	over      atomic.Int64
	largest   atomic.Int64
	summaries atomic.Int64
	orphans   atomic.Int64 // tool results without their call, and calls without their result
}

func (w *windowed) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	n := len(req.System)
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	calls, open := map[string]bool{}, map[string]bool{}
	for _, m := range req.Messages {
		n += len(m.Content) + 16
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.ID) + len(c.Arguments)
			calls[c.ID], open[c.ID] = true, true
		}
		if m.Role == model.RoleTool && !calls[m.ToolCallID] {
			w.orphans.Add(1) // a result whose call is not in the request
		}
		delete(open, m.ToolCallID)
	}
	w.orphans.Add(int64(len(open))) // calls whose result is not in the request
	tokens := int64(n / 4)
	if tokens > int64(w.window) {
		w.over.Add(1)
	}
	if tokens > w.largest.Load() {
		w.largest.Store(tokens)
	}
	if strings.HasSuffix(req.Agent, "_compact") {
		w.summaries.Add(1)
	}
	return w.Model.Generate(ctx, req)
}

// within checks that every request was within the window with its tool
// pairs whole (compact), or that some passed it (the test would show
// nothing otherwise). It reports whether compact is true.
func (w *windowed) within(t *testing.T, compact bool) bool {
	t.Helper()
	if !compact {
		if w.over.Load() == 0 {
			t.Fatal("without compaction the requests should pass the window (the test would show nothing)")
		}
		return false
	}
	if n := w.over.Load(); n != 0 {
		t.Errorf("%d requests over the window (largest %d tokens)", n, w.largest.Load())
	}
	if n := w.orphans.Load(); n != 0 {
		t.Errorf("%d tool calls or results sent without their pair", n)
	}
	return true
}

// longScript: rounds tool calls of echo with padding, then an answer; the
// summarizer answers each summary call.
func longScript(rounds int) scripted.Script {
	pad := strings.Repeat("x", 200)
	var steps []scripted.Step
	for i := range rounds {
		steps = append(steps, scripted.Tools(scripted.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "echo", Arguments: map[string]any{"pad": pad}}))
	}
	steps = append(steps, scripted.Text("done"))
	var sums []scripted.Step
	for i := range rounds {
		sums = append(sums, scripted.Text(fmt.Sprintf("summary %d: echoed padding", i)))
	}
	return scripted.Script{"long": steps, "long_compact": sums}
}

func longSwarm(c *compact.Config, rounds int) *swarm.Swarm[string, string] {
	echo := swarm.NewTool("echo", "echoes", func(_ context.Context, in struct {
		Pad string `json:"pad"`
	}) (string, error) {
		return "echoed " + in.Pad, nil
	})
	return swarm.Define[string, string]("long", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{echo}, MaxTurns: rounds + 5, Compaction: c}
	})
}

// TestCompactionKeepsRequestsInTheWindow: a run of 150 rounds (300
// messages) with a 2,000-token window never sends a request over the
// window, never sends a tool result without its call, and journals each
// compaction with its range and tokens; the journal keeps every message.
func TestCompactionKeepsRequestsInTheWindow(t *testing.T) {
	const rounds, window = 150, 2000
	for _, compacting := range []bool{true, false} {
		t.Run(fmt.Sprint("compact=", compacting), func(t *testing.T) {
			ctx := ctxT(t)
			m := &windowed{Model: scripted.New(longScript(rounds)), window: window}
			rt, err := swarm.New(swarm.Config{Model: m, RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			var c *compact.Config
			if compacting {
				c = &compact.Config{Window: window, Trigger: 0.7, Keep: 3}
			}
			def := longSwarm(c, rounds)
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}
			res, run, err := def.Run(ctx, rt, "echo a lot")
			if err != nil {
				t.Fatal(err)
			}
			if res.State() != swarm.StateCompleted {
				t.Fatalf("result %#v", res)
			}
			if !m.within(t, compacting) {
				return
			}
			evs := swarmtest.Events(t, rt, run.ID())
			compactions, results := 0, 0
			for _, ev := range evs {
				switch ev.Type {
				case swarm.EventCompacted:
					compactions++
					ci := ev.Compaction
					if ci == nil || ci.To <= ci.From || ci.TokensAfter >= ci.TokensBefore || ev.Text == "" {
						t.Errorf("compacted event %+v %+v", ev, ci)
					}
				case swarm.EventToolResult:
					results++
				}
			}
			if compactions == 0 || int64(compactions) != m.summaries.Load() {
				t.Errorf("%d compactions journaled, %d summary calls", compactions, m.summaries.Load())
			}
			if results != rounds {
				t.Errorf("journal holds %d tool results, want all %d", results, rounds)
			}
		})
	}
}

// TestCompactionCrashRecovers kills a run right after it journals its
// first compaction and recovers it elsewhere: the summary is not asked
// for again, and the run completes within the window.
func TestCompactionCrashRecovers(t *testing.T) {
	const rounds, window = 30, 2000
	ctx := ctxT(t)
	def := longSwarm(&compact.Config{Window: window, Trigger: 0.7, Keep: 3}, rounds)
	mem := memory.New()
	d := dieAfterCompaction(t, mem, 0)
	ma := &windowed{Model: scripted.New(longScript(rounds)), window: window}
	a, err := swarm.New(swarm.Config{Store: d, Model: ma, Lease: 60 * time.Millisecond, RetryBackoff: time.Millisecond, Owner: "A"})
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
	for !d.Dead() {
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(80 * time.Millisecond)
	summariesA := ma.summaries.Load()
	recs, _ := mem.Read(ctx, id, 0, 0)
	journaled := 0
	for _, r := range recs {
		if r.Type == string(swarm.EventCompacted) {
			journaled++
		}
	}
	mb := &windowed{Model: scripted.New(longScript(rounds)), window: window}
	b, err := swarm.New(swarm.Config{Store: mem, Model: mb, RetryBackoff: time.Millisecond, Owner: "B", PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Register(def); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := b.Wait(ctx, id)
	if err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("state %+v %v", st, err)
	}
	evs := swarmtest.Events(t, b, id)
	total := 0
	for _, ev := range evs {
		if ev.Type == swarm.EventCompacted {
			total++
		}
	}
	if got := summariesA + mb.summaries.Load(); got != int64(total) {
		t.Errorf("%d summary calls (A %d, B %d) for %d compactions journaled: a recorded summary was asked for again", got, summariesA, mb.summaries.Load(), total)
	}
	if journaled == 0 || mb.over.Load() != 0 || mb.orphans.Load() != 0 {
		t.Errorf("journaled at death %d; after recovery: %d requests over the window, %d orphans", journaled, mb.over.Load(), mb.orphans.Load())
	}
}

// dieAfter is a store whose process dies right after it journals the
// after+1-th record that match reports (match may also rewrite a record,
// as an older release would have written it).
type dieAfter struct {
	*swarmtest.Killable
	match func(r *store.Record) bool
	after int64 // matching records journaled before the one it dies after
	seen  atomic.Int64
}

// dieAfterCompaction is a dieAfter store that dies after a compaction.
func dieAfterCompaction(t *testing.T, s store.Store, after int64) *dieAfter {
	return &dieAfter{Killable: swarmtest.NewKillable(t, s), after: after, match: func(r *store.Record) bool { return r.Type == string(swarm.EventCompacted) }}
}

func (d *dieAfter) Append(ctx context.Context, l store.Lease, recs []store.Record, u store.Update) (int64, error) {
	matched := 0
	for i := range recs {
		if d.match(&recs[i]) {
			matched++
		}
	}
	n, err := d.Killable.Append(ctx, l, recs, u)
	if err == nil && matched > 0 && d.seen.Add(int64(matched)) > d.after {
		d.Kill()
	}
	return n, err
}

// awaitDeath waits until the store k of a process has died; why is the
// failure when ctx ends first.
func awaitDeath(t *testing.T, ctx context.Context, k interface{ Dead() bool }, why string) {
	t.Helper()
	for !k.Dead() {
		select {
		case <-ctx.Done():
			t.Fatal(why)
		case <-time.After(time.Millisecond):
		}
	}
}

// chatScript: each of messages user messages is answered after two rounds
// of echo calls with padding (message big, if any, after eight); the
// summarizer answers each summary call.
func chatScript(messages, big int) scripted.Script {
	pad := strings.Repeat("y", 150)
	var steps []scripted.Step
	for i := range messages {
		rounds := 2
		if i == big {
			rounds = 8
		}
		for j := range rounds {
			steps = append(steps, scripted.Tools(scripted.ToolCall{ID: fmt.Sprintf("m%dc%d", i, j), Name: "echo", Arguments: map[string]any{"pad": pad}}))
		}
		steps = append(steps, scripted.Text(fmt.Sprintf("answer %d", i)))
	}
	return scripted.Script{"chat": steps, "chat_compact": {scripted.Text("summary: the user sent messages, echo echoed padding")}}
}

func chatConv(c *compact.Config, policy conversation.HistoryPolicy) *conversation.Conversation[Sale] {
	echo := swarm.NewTool("echo", "echoes", func(_ context.Context, in struct {
		Pad string `json:"pad"`
	}) (string, error) {
		return "echoed " + in.Pad, nil
	})
	chat := &swarm.Agent{Name: "chat", Instructions: "Talk.", Tools: []swarm.Tool{echo}}
	return conversation.Define("talk", "", conversation.Spec[Sale]{Queen: chat, History: policy, MaxTurns: 10, Compaction: c})
}

// compactions lists the compacted events of a run as "key from-to".
func compactions(t *testing.T, rt *swarm.Runtime, id string) []string {
	t.Helper()
	var out []string
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventCompacted {
			out = append(out, fmt.Sprintf("%s %d-%d", ev.Key, ev.Compaction.From, ev.Compaction.To))
		}
	}
	return out
}

// TestConversationCompactionKeepsRequestsInTheWindow: a conversation of
// 150 user messages (300 messages, besides its tool calls) with a
// 1,500-token window never sends a request over the window, never
// separates a tool call from its result, and summarizes incrementally:
// under the text history policy too, which rewrites an answered
// message's tool calls, a cut among them does not make every later
// message summarize the whole conversation again.
func TestConversationCompactionKeepsRequestsInTheWindow(t *testing.T) {
	const messages, window, big = 150, 1500, 100
	for _, tc := range []struct {
		policy  conversation.HistoryPolicy
		compact bool
	}{{conversation.HistoryOwnTools, false}, {conversation.HistoryOwnTools, true}, {conversation.HistoryText, true}} {
		t.Run(fmt.Sprint(tc.policy, "/compact=", tc.compact), func(t *testing.T) {
			// A long conversation under the race detector: a longer bound.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			messages := messages
			if !tc.compact {
				messages = 20 // enough to pass the window
			}
			m := &windowed{Model: scripted.New(chatScript(messages, big)), window: window}
			rt, err := swarm.New(swarm.Config{Model: m, RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			var c *compact.Config
			if tc.compact {
				c = &compact.Config{Window: window, Trigger: 0.7, Keep: 1}
			}
			conv := chatConv(c, tc.policy)
			if err := rt.Register(conv); err != nil {
				t.Fatal(err)
			}
			sess, err := conv.Start(ctx, rt)
			if err != nil {
				t.Fatal(err)
			}
			for i := range messages {
				rep, err := sess.Say(ctx, fmt.Sprintf("message %d", i))
				if err != nil || rep.Text != fmt.Sprintf("answer %d", i) {
					t.Fatalf("message %d: reply %+v, %v", i, rep, err)
				}
			}
			if !m.within(t, tc.compact) {
				return
			}
			got := compactions(t, rt, sess.ID())
			if len(got) == 0 || int64(len(got)) != m.summaries.Load() {
				t.Errorf("%d compactions journaled, %d summary calls", len(got), m.summaries.Load())
			}
			// Summaries are incremental: each starts where the previous
			// one ended, but the one after the long message 100, whose
			// own rounds had to be cut (a cut the text policy rewrites
			// once the message is answered): it starts where the one
			// before that ended, not at the start of the conversation.
			last, again := 0, 0
			for i, c := range got {
				var key string
				var from, to int
				if _, err := fmt.Sscanf(c, "%s %d-%d", &key, &from, &to); err != nil {
					t.Fatal(err)
				}
				switch {
				case i > 0 && from == 1:
					t.Errorf("compaction %s summarizes the whole conversation again: %v", c, got)
				case i > 0 && from < last:
					again++
				}
				last = to
			}
			if max := map[bool]int{true: 1, false: 0}[tc.policy == conversation.HistoryText]; again > max {
				t.Errorf("%d summaries start before the previous one ended: %v", again, got)
			}
			results := 0
			for _, ev := range swarmtest.Events(t, rt, sess.ID()) {
				if ev.Type == swarm.EventToolResult {
					results++
				}
			}
			if want := 2*messages + 6; results != want {
				t.Errorf("journal holds %d tool results, want all %d", results, want)
			}
		})
	}
}

// TestConversationCompactionCrashRecovers kills a conversation right
// after it journals its third compaction, in the middle of a message, and
// recovers it elsewhere: no summary is asked for twice, the recovered
// conversation compacts exactly as one that never crashed (the summaries
// of earlier messages are restored from the journal, not made again), and
// its requests stay within the window.
func TestConversationCompactionCrashRecovers(t *testing.T) {
	const messages, window = 40, 1500
	for _, policy := range []conversation.HistoryPolicy{conversation.HistoryOwnTools, conversation.HistoryText} {
		t.Run(policy.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// The text policy's history grows slowly: a message count
			// triggers its compactions.
			conv := chatConv(&compact.Config{Window: window, Trigger: 0.7, Keep: 2, Messages: 16}, policy)
			say := func(ctx context.Context, sess *conversation.Session[Sale], from int) error {
				for i := from; i < messages; i++ {
					if _, err := sess.Say(ctx, fmt.Sprintf("message %d", i)); err != nil {
						return err
					}
				}
				return nil
			}
			// A clean run: the compactions to expect.
			clean, _ := convRuntime(t, chatScript(messages, -1), nil)
			if err := clean.Register(conv); err != nil {
				t.Fatal(err)
			}
			sess, err := conv.Start(ctx, clean)
			if err != nil {
				t.Fatal(err)
			}
			if err := say(ctx, sess, 0); err != nil {
				t.Fatal(err)
			}
			want := compactions(t, clean, sess.ID())
			if len(want) < 5 {
				t.Fatalf("a clean run compacts %d times: %v", len(want), want)
			}

			mem := memory.New()
			d := dieAfterCompaction(t, mem, 2)
			ma := &windowed{Model: scripted.New(chatScript(messages, -1)), window: window}
			a, err := swarm.New(swarm.Config{Store: d, Model: ma, Lease: 60 * time.Millisecond, RetryBackoff: time.Millisecond, Owner: "A", PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Register(conv); err != nil {
				t.Fatal(err)
			}
			actx, kill := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				if s, err := conv.Start(actx, a, swarm.WithID("chat")); err == nil {
					_ = say(actx, s, 0)
				}
			}()
			for !d.Dead() {
				select {
				case <-done:
					if !d.Dead() {
						t.Fatal("A finished without dying")
					}
				case <-time.After(time.Millisecond):
				}
			}
			kill()
			<-done
			a.Close()
			time.Sleep(80 * time.Millisecond) // A's lease runs out
			atDeath := compactions(t, a, "chat")

			mb := &windowed{Model: scripted.New(chatScript(messages, -1)), window: window}
			b, err := swarm.New(swarm.Config{Store: mem, Model: mb, RetryBackoff: time.Millisecond, Owner: "B", PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.Register(conv); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Recover(ctx); err != nil {
				t.Fatal(err)
			}
			sess, err = conv.Attach(ctx, b, "chat")
			if err != nil {
				t.Fatal(err)
			}
			if st, err := sess.Wait(ctx); err != nil || st.State != swarm.StatePaused {
				t.Fatalf("recovered: %+v %v", st, err)
			}
			said, _ := sess.Transcript(ctx)
			if err := say(ctx, sess, said[len(said)-1].Message); err != nil {
				t.Fatal(err)
			}
			got := compactions(t, b, "chat")
			if len(atDeath) != 3 || !slices.Equal(got, want) {
				t.Errorf("compactions at death %v\nafter recovery %v\nclean run %v", atDeath, got, want)
			}
			if n := ma.summaries.Load() + mb.summaries.Load(); n != int64(len(got)) {
				t.Errorf("%d summary calls (A %d, B %d) for %d compactions: a recorded summary was asked for again", n, ma.summaries.Load(), mb.summaries.Load(), len(got))
			}
			if mb.over.Load() != 0 || mb.orphans.Load() != 0 {
				t.Errorf("after recovery: %d requests over the window, %d orphans", mb.over.Load(), mb.orphans.Load())
			}
		})
	}
}

// TestTeamCompaction: a team's compaction summarizes its lead's history
// (and a teammate's own compaction is checked when the team is defined).
func TestTeamCompaction(t *testing.T) {
	ctx := ctxT(t)
	var answers []scripted.Step
	for i := range 6 {
		answers = append(answers, scripted.Text(fmt.Sprint("answer ", i)))
	}
	m := &windowed{Model: scripted.New(scripted.Script{"lead": answers, "lead_compact": {scripted.Text("the user said hello")}}), window: 1 << 20}
	rt, err := swarm.New(swarm.Config{Model: m, RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	lead := &swarm.Agent{Name: "lead", Instructions: "Lead."}
	tr, err := team.DefineTeam("crew", "", team.TeamSpec{Lead: lead, Compaction: &compact.Config{Messages: 4, Keep: 1}}).Start(ctx, rt, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if reply, err := tr.Say(ctx, "hello"); err != nil || reply != fmt.Sprint("answer ", i) {
			t.Fatalf("message %d: %q %v", i, reply, err)
		}
	}
	got := compactions(t, rt, tr.ID())
	if len(got) == 0 || int64(len(got)) != m.summaries.Load() {
		t.Errorf("compactions %v, %d summary calls", got, m.summaries.Load())
	}
	bad := team.DefineTeam("bad", "", team.TeamSpec{Lead: lead, Members: []team.Teammate{{Name: "x", Compaction: &compact.Config{Keep: -1}}}})
	if err := rt.Register(bad); !errors.Is(err, swarm.ErrInvalid) {
		t.Errorf("a teammate with a negative keep: %v", err)
	}
}

// TestCompactionWithoutAResponse: a summarizer that returns neither a
// response nor an error fails the run with a reason; it does not crash.
func TestCompactionWithoutAResponse(t *testing.T) {
	const rounds, window = 30, 2000
	ctx := ctxT(t)
	script := scripted.New(longScript(rounds))
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if strings.HasSuffix(req.Agent, "_compact") {
			return nil, nil
		}
		return script.Generate(ctx, req)
	})
	rt, err := swarm.New(swarm.Config{Model: m, RetryBackoff: time.Millisecond, ModelRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	def := longSwarm(&compact.Config{Window: window, Trigger: 0.7, Keep: 3}, rounds)
	res, _, err := def.Run(ctx, rt, "echo a lot")
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := res.(swarm.Failed); !ok || !strings.Contains(f.Reason, "no response") {
		t.Fatalf("result %#v, want a failure saying the summarizer gave no response", res)
	}
}

// TestCompactionSummaryOfAHugeResultFitsTheWindow: a single tool result
// three times the window is clipped, with a mark, in the request that
// asks for its summary, which stays within the window; the run goes on.
func TestCompactionSummaryOfAHugeResultFitsTheWindow(t *testing.T) {
	const window = 2000
	ctx := ctxT(t)
	huge := strings.Repeat("z", 3*4*window) // three windows, at four bytes a token
	dump := swarm.NewTool("dump", "dumps", func(context.Context, struct{}) (string, error) { return huge, nil })
	def := swarm.Define[string, string]("dumper", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{dump}, Compaction: &compact.Config{Window: window}}
	})
	script := scripted.Script{
		"dumper":         {scripted.Tools(scripted.CallTool("dump", nil)), scripted.Text("done")},
		"dumper_compact": {scripted.Text("summary: a dump of z")},
	}
	var mu sync.Mutex
	var sums []model.Request
	rt := spyRuntime(t, script, def, func(req *model.Request) {
		if req.Agent == "dumper_compact" {
			mu.Lock()
			sums = append(sums, *req)
			mu.Unlock()
		}
	})
	res, _, err := def.Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "done" {
		t.Fatalf("result %#v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sums) != 1 {
		t.Fatalf("%d summary requests, want 1", len(sums))
	}
	req := sums[0]
	tokens := (len(req.System) + len(req.Messages[0].Content) + 16) / 4
	if len(req.Messages) != 1 || tokens > window {
		t.Errorf("the summary request has %d messages and about %d tokens; the window is %d", len(req.Messages), tokens, window)
	}
	if text := req.Messages[0].Content; !strings.Contains(text, "[tool result dump ") || !strings.Contains(text, " bytes cut to fit the window]") {
		t.Errorf("the summary request does not show the clipped result with its mark: %.300s", text)
	}
}

// spyRuntime is a runtime with def registered whose model plays script,
// showing each request to spy first.
func spyRuntime(t *testing.T, script scripted.Script, def swarm.Definition, spy func(*model.Request)) *swarm.Runtime {
	t.Helper()
	m := scripted.New(script)
	rt, err := swarm.New(swarm.Config{Store: memory.New(), RetryBackoff: time.Millisecond,
		Model: model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			spy(req)
			return m.Generate(ctx, req)
		})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	return rt
}
