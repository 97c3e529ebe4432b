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
)

// Runtime returns a runtime on $SWARM_STORE (default: in memory) whose model
// is $SWARM_MODEL; when that is unset, a default real model if
// OPENAI_API_KEY or ANTHROPIC_API_KEY is set, else script (offline).
func Runtime(ctx context.Context, script scripted.Script) (*swarm.Runtime, error) {
	var m model.Model = scripted.New(script)
	spec := os.Getenv("SWARM_MODEL")
	switch {
	case spec != "":
	case os.Getenv("OPENAI_API_KEY") != "":
		spec = "openai:gpt-4.1-mini"
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		spec = "anthropic:claude-sonnet-4-5"
	}
	if spec != "" {
		real, err := model.Open(spec)
		if err != nil {
			return nil, err
		}
		m = real
		fmt.Fprintf(os.Stderr, "model: %s\n", spec)
	} else {
		fmt.Fprintln(os.Stderr, "model: scripted (offline); set SWARM_MODEL, OPENAI_API_KEY or ANTHROPIC_API_KEY to use a real model")
	}
	url := os.Getenv("SWARM_STORE")
	if url == "" {
		url = "memory:"
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return swarm.New(swarm.Config{Store: st, Model: m})
}

// Input is the example's input: its command-line arguments joined by
// spaces, or def when there are none.
func Input(def string) string {
	if len(os.Args) > 1 {
		return strings.Join(os.Args[1:], " ")
	}
	return def
}

// Follow prints a run's events to w until the run pauses or ends.
func Follow(ctx context.Context, w io.Writer, rt *swarm.Runtime, id string, after int64) int64 {
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
			fmt.Fprintf(w, "  %-16s ⇒ %s: %s\n", ev.Agent, ev.Target, req)
		case swarm.EventHandoffReturned:
			fmt.Fprintf(w, "  %-16s ⇐ %s: %s\n", ev.Agent, ev.Target, ev.Output)
		case swarm.EventToolCall:
			fmt.Fprintf(w, "  %-16s → %s %s\n", ev.Agent, ev.Tool, ev.Arguments)
		case swarm.EventToolResult:
			fmt.Fprintf(w, "  %-16s ← %s: %s\n", ev.Agent, ev.Tool, ev.Output)
		case swarm.EventTurnCompleted:
			fmt.Fprintf(w, "  %-16s turn %d/%d done\n", ev.Agent, ev.Turn, ev.MaxTurns)
		case adaptive.EventLedger:
			l, _ := adaptive.LedgerOf(ev)
			fmt.Fprintf(w, "  %-16s ledger %d (%s): plan %q\n", ev.Agent, l.Number, l.Cause, l.Plan)
			for _, c := range l.Changes {
				if l.Number > 0 {
					fmt.Fprintf(w, "  %-16s   %s\n", "", c)
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
			fmt.Fprintf(w, "  %-16s round %d: progress=%t loop=%t signals=%v stalls=%d next=%s\n", ev.Agent, p.Round, p.Progress, p.InLoop, p.Signals, p.Stalls, next)
		case swarm.EventRecorded:
			fmt.Fprintf(w, "  %-16s recorded %s %s: %s\n", ev.Agent, ev.Kind, ev.Key, ev.Result)
		case swarm.EventPaused:
			fmt.Fprintf(w, "  paused: %s (%s)\n", ev.Reason, ev.Context)
			return after
		case swarm.EventResumed:
			fmt.Fprintf(w, "  resumed: %s\n", ev.Message)
		case swarm.EventCompleted, swarm.EventFailed, swarm.EventStopped:
			fmt.Fprintln(w, strings.TrimRight("  "+string(ev.Type)+" "+ev.Reason, " "))
		}
	}
	return after
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
