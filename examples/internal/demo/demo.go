// Package demo holds what the examples share: choosing a model (a real one
// when SWARM_MODEL is set, the example's script otherwise) and printing a
// run's progress.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/adaptive"
	"github.com/swarmrt/swarm/model"
	_ "github.com/swarmrt/swarm/model/anthropic"
	_ "github.com/swarmrt/swarm/model/openai"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	_ "github.com/swarmrt/swarm/store/memory"
	_ "github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/team"
)

// Runtime returns a runtime on $SWARM_STORE (default: in memory) whose model
// is $SWARM_MODEL; when that is unset, a default real model if
// OPENAI_API_KEY or ANTHROPIC_API_KEY is set, else script (offline).
func Runtime(ctx context.Context, script scripted.Script) (*swarm.Runtime, error) {
	return RuntimeWith(ctx, scripted.New(script))
}

// RuntimeWith is Runtime with offline, the model used when no real one is
// asked for (a scripted model, or one wrapped by ByRequest).
func RuntimeWith(ctx context.Context, offline model.Model) (*swarm.Runtime, error) {
	m, err := Model(offline)
	if err != nil {
		return nil, err
	}
	st, err := Store(ctx)
	if err != nil {
		return nil, err
	}
	return swarm.New(swarm.Config{Store: st, Model: m})
}

// Model is $SWARM_MODEL; when that is unset, a default real model if
// OPENAI_API_KEY or ANTHROPIC_API_KEY is set, else offline. It says which
// on stderr.
func Model(offline model.Model) (model.Model, error) {
	spec := os.Getenv("SWARM_MODEL")
	switch {
	case spec != "":
	case os.Getenv("OPENAI_API_KEY") != "":
		spec = "openai:gpt-4.1-mini"
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		spec = "anthropic:claude-sonnet-4-5"
	}
	if spec == "" {
		fmt.Fprintln(os.Stderr, "model: scripted (offline); set SWARM_MODEL, OPENAI_API_KEY or ANTHROPIC_API_KEY to use a real model")
		return offline, nil
	}
	fmt.Fprintf(os.Stderr, "model: %s\n", spec)
	return model.Open(spec)
}

// Store opens $SWARM_STORE (default: in memory).
func Store(ctx context.Context) (store.Store, error) {
	url := os.Getenv("SWARM_STORE")
	if url == "" {
		url = "memory:"
	}
	return store.Open(ctx, url)
}

// ByRequest answers agent's model calls from answers, by the text of the
// request's last user message, and every other call from m. A script
// answers an agent's calls in the order they reach the model, which for
// calls made at once (the branches of a parallel step) differs from run to
// run and would pair questions with the wrong answers; answering by the
// question keeps them paired. A question without an answer fails the call.
func ByRequest(m model.Model, agent string, answers map[string]string) model.Model {
	return byRequest{m, agent, answers}
}

type byRequest struct {
	model.Model
	agent   string
	answers map[string]string
}

func (b byRequest) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req.Agent != b.agent {
		return b.Model.Generate(ctx, req)
	}
	var q string
	for _, m := range req.Messages {
		if m.Role == model.RoleUser {
			q = m.Content
		}
	}
	a, ok := b.answers[q]
	if !ok {
		return nil, fmt.Errorf("%s has no scripted answer to %q", b.agent, q)
	}
	return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: a},
		Usage: model.Usage{InputTokens: int64(len(q)/4 + 1), OutputTokens: int64(len(a)/4 + 1), Calls: 1}}, nil
}

// Input is the example's input: its command-line arguments joined by
// spaces, or def when there are none.
func Input(def string) string {
	if len(os.Args) > 1 {
		return strings.Join(os.Args[1:], " ")
	}
	return def
}

// Follow prints a run's events to w until the run pauses or ends, in plain
// words: which agent acts, what it did, and that each turn is journaled
// (so a crash after it does not redo it). Every line it prints comes from
// the journal, which is also what a recovery replays.
func Follow(ctx context.Context, w io.Writer, rt *swarm.Runtime, id string, after int64) int64 {
	return follow(ctx, w, rt, id, after, -1, nil)
}

// FollowUntil is Follow that stops after the first event for which stop
// is true, and returns its sequence.
func FollowUntil(ctx context.Context, w io.Writer, rt *swarm.Runtime, id string, after int64, stop func(swarm.Event) bool) int64 {
	return follow(ctx, w, rt, id, after, -1, stop)
}

// Journal prints, as Follow does, the events of run id after sequence
// after that are journaled now, without waiting for more, and returns the
// last one's sequence: for runs that wait (a team's idle members) while
// the program goes on.
func Journal(ctx context.Context, w io.Writer, rt *swarm.Runtime, id string, after int64) int64 {
	s, err := rt.Status(ctx, id)
	if err != nil {
		fmt.Fprintln(w, "events:", err)
		return after
	}
	if s.LastSeq <= after {
		return after
	}
	return follow(ctx, w, rt, id, after, s.LastSeq, nil)
}

// follow prints run id's events after sequence after, until the run
// pauses or ends, until an event stop is true for (when stop is set) or,
// when until >= 0, until the event of sequence until.
func follow(ctx context.Context, w io.Writer, rt *swarm.Runtime, id string, after, until int64, stop func(swarm.Event) bool) int64 {
	asked := map[string]string{} // a handoff's request, by the key of its start
	for ev, err := range rt.Events(ctx, id, after) {
		if err != nil {
			fmt.Fprintln(w, "events:", err)
			return after
		}
		after = ev.Seq
		switch ev.Type {
		case swarm.EventHandoffStarted:
			req := ev.Request
			if req == "" {
				req = string(ev.Arguments)
			}
			asked[ev.Key] = req
			Say(w, ev.Agent, "hands off to %s: %s\n", ev.Target, req)
		case swarm.EventHandoffReturned:
			// Handoffs made at once return in any order: say which
			// request an answer is for.
			start := callKey(ev.Key)
			if q, ok := asked[start]; ok {
				Say(w, ev.Agent, "gets %s's answer to %q: %s\n", ev.Target, clip(q), ev.Output)
			} else { // asked before the events followed here
				Say(w, ev.Agent, "gets %s's answer: %s\n", ev.Target, ev.Output)
			}
			delete(asked, start)
		case swarm.EventToolCall:
			Say(w, ev.Agent, "calls %s %s\n", ev.Tool, ev.Arguments)
		case swarm.EventToolResult:
			Say(w, ev.Agent, "gets %s's result: %s\n", ev.Tool, ev.Output)
		case swarm.EventTurnCompleted:
			Say(w, ev.Agent, "turn %d/%d journaled: a crash from here on does not redo it\n", ev.Turn, ev.MaxTurns)
		case adaptive.EventLedger:
			l, _ := adaptive.LedgerOf(ev)
			Say(w, ev.Agent, "ledger %d (%s): plan %q\n", l.Number, l.Cause, l.Plan)
			for _, c := range l.Changes {
				if l.Number > 0 {
					Say(w, "", "  %s\n", c)
				}
			}
		case adaptive.EventProgress:
			p, _ := adaptive.ProgressOf(ev)
			next := p.NextHandoff
			switch {
			case p.Satisfied:
				next = "(satisfied)"
			case p.Replan:
				next = "(replan)"
			}
			Say(w, ev.Agent, "round %d: progress=%t loop=%t signals=%v stalls=%d next=%s\n", p.Round, p.Progress, p.InLoop, p.Signals, p.Stalls, next)
		case swarm.EventRecorded:
			Say(w, ev.Agent, "recorded %s %s: %s\n", ev.Kind, ev.Key, ev.Result)
		case team.EventMember:
			if ev.Target != "" {
				Say(w, ev.Agent, "is %s (a run of its own: %s)\n", ev.State, ev.Target)
			} else {
				Say(w, ev.Agent, "is %s\n", ev.State)
			}
		case team.EventMail:
			if ev.Mail != nil {
				Say(w, ev.Agent, "sends a %s: %s\n", ev.Mail.Type, ev.Mail.Content)
			}
		case team.EventInbox:
			for _, m := range ev.Mails {
				Say(w, ev.Agent, "reads mail from %s (consumed once, with this turn): %s\n", m.From, m.Content)
			}
		case team.EventProtocol:
			if q := ev.Protocol; q != nil {
				Say(w, ev.Agent, "%s request from %s to %s: %s\n", q.Kind, q.From, q.To, q.State)
			}
		case team.EventTask:
			if t := ev.Task; t != nil {
				Say(w, ev.Agent, "task %d %q: %s\n", t.ID, t.Subject, t.Status)
			}
		case swarm.EventPaused:
			Say(w, ev.Agent, "waits, holding no process, until it is answered: %s\n", ev.Reason)
			if until < 0 {
				return after
			}
		case swarm.EventResumed:
			if ev.Message == "" {
				Say(w, ev.Agent, "wakes up: what it waited for has come\n")
			} else {
				Say(w, ev.Agent, "resumes with the answer (journaled): %s\n", ev.Message)
			}
		case swarm.EventCompleted, swarm.EventFailed, swarm.EventStopped:
			fmt.Fprintln(w, strings.TrimRight("  "+string(ev.Type)+" "+ev.Reason, " "))
		}
		if until >= 0 && after >= until || stop != nil && stop(ev) {
			return after
		}
	}
	return after
}

// callKey is the step key of the start of the handoff whose result is
// journaled under key: ".../tool/ID" answers ".../call/ID".
func callKey(key string) string {
	if i := strings.LastIndex(key, "/tool/"); i >= 0 {
		return key[:i] + "/call/" + key[i+len("/tool/"):]
	}
	return key
}

// clip is the first line of s, at most 40 characters.
func clip(s string) string {
	s, _, cut := strings.Cut(s, "\n")
	if r := []rune(s); len(r) > 40 {
		s, cut = string(r[:40]), true
	}
	if cut {
		s += "…"
	}
	return s
}

// Say prints one line of a run's progress: the agent acting, in a column
// of its own, then what it did. A text of several lines (a request, an
// answer) keeps the column: its next lines are indented under the first.
func Say(w io.Writer, agent, format string, args ...any) {
	text := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	text = strings.ReplaceAll(text, "\n", "\n"+strings.Repeat(" ", 2+16+1)+"  ")
	fmt.Fprintf(w, "  %-16s %s\n", agent, text)
}

// Exit prints err and exits with status 1 when err is not nil.
func Exit(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// Complete starts a run of s on in, prints its progress on stderr, waits
// for it and returns its output and run id; any other ending exits.
func Complete[In, Out any](ctx context.Context, rt *swarm.Runtime, s *swarm.Swarm[In, Out], in In) (Out, string) {
	run, err := s.Start(ctx, rt, in)
	Exit(err)
	Follow(ctx, os.Stderr, rt, run.ID(), 0)
	res, err := run.Wait(ctx)
	Exit(err)
	c, ok := res.(swarm.Completed[Out])
	if !ok {
		Exit(fmt.Errorf("%s ended in state %s", s.ID(), res.State()))
	}
	return c.Output, run.ID()
}
