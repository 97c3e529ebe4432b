package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/adaptive"
	"github.com/swarmrt/swarm/store"
)

// progress prints a run's events on stderr, one line each: tool calls and
// results, handoffs, the model's text answers (and the answers rejected as
// results), pauses and the end. On a terminal a spinner line shows what the
// run waits for (a model call, a tool) and for how long; it is redrawn in
// place and erased before the next line, so every line appears once.
type progress struct {
	w   io.Writer
	tty bool

	mu     sync.Mutex
	root   string            // the run's swarm (its orchestrator agent)
	answer map[string]string // agent -> a text answer not yet taken as a result
	// rejected is the root's text answer whose turn ended without the run
	// completing: unless the next event is the completion (journaled with
	// the final answer), the answer was not a valid result.
	rejected *string
	waiting  string // what the spinner shows, "" for nothing
	since    time.Time
	drawn    bool // a spinner line is on screen
	done     chan struct{}
	stopped  bool
	sawEnd   bool // a pause or the run's end was printed
	// reused is, in a fork, the number of the origin's records that follow
	// its started event; their lines are marked, as the fork did not run
	// those steps.
	reused int
	mark   string // what the current event's lines start with
}

// newProgress prints on w; the spinner runs only when tty is set.
func newProgress(w io.Writer, tty bool) *progress {
	p := &progress{w: w, tty: tty, answer: map[string]string{}, done: make(chan struct{})}
	if p.tty {
		go p.spin()
	}
	return p
}

// isTerminal reports whether f, a stream of the process, is a terminal (a
// character device).
func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (p *progress) spin() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		p.mu.Lock()
		if p.waiting != "" && !p.stopped {
			fmt.Fprintf(p.w, "\r\033[K  %s %s %.1fs", spinnerFrames[i%len(spinnerFrames)], p.waiting, time.Since(p.since).Seconds())
			p.drawn = true
		}
		p.mu.Unlock()
	}
}

// stop erases the spinner and ends it. It may be called more than once.
func (p *progress) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	p.erase()
	close(p.done)
}

func (p *progress) erase() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *progress) line(format string, args ...any) {
	p.erase()
	fmt.Fprintf(p.w, "  "+p.mark+format+"\n", args...)
}

// wait sets what the spinner shows.
func (p *progress) wait(what string) {
	p.waiting, p.since = what, time.Now()
}

// event prints one event.
func (p *progress) event(ev swarm.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	if p.rejected != nil {
		if ev.Type != swarm.EventCompleted {
			what := "the answer above is"
			if *p.rejected == "" {
				what = "an empty answer is"
			}
			p.line("%s ✗ %s not a valid result; the model is asked again", p.root, what)
		}
		p.rejected = nil
	}
	p.mark = ""
	if ev.Seq > 1 && ev.Seq <= int64(p.reused)+1 {
		p.mark = "reused · "
	}
	if tk := ev.Takeover; tk != nil {
		p.line("%s", takeoverLine(tk))
	}
	switch ev.Type {
	case swarm.EventStarted:
		if p.root == "" {
			p.root = ev.Swarm
		}
		if ev.ForkOf != "" {
			p.reused = ev.Reused
			at := ""
			if ev.ForkAt != "" {
				at = " at " + ev.ForkAt
			}
			p.line("started %s: a fork of run %s%s, reusing %d recorded steps (marked reused: not run again)", ev.Swarm, ev.ForkOf, at, ev.Reused)
			break
		}
		p.line("started %s", ev.Swarm)
		p.wait(ev.Swarm + ": waiting for the model")
	case swarm.EventModelResponse:
		if ev.Text != "" {
			p.line("%s: %s", ev.Agent, clip(ev.Text, 200))
		}
		if len(ev.ToolCalls) == 0 {
			p.answer[ev.Agent] = ev.Text
		} else {
			delete(p.answer, ev.Agent)
		}
		p.wait(ev.Agent + ": running tools")
	case swarm.EventToolCall:
		p.line("%s → %s(%s)", ev.Agent, ev.Tool, clip(string(ev.Arguments), 80))
		p.wait(ev.Agent + ": running " + ev.Tool)
	case swarm.EventToolResult:
		mark := "←"
		if ev.IsError {
			mark = "✗"
		}
		p.line("%s %s %s: %s", ev.Agent, mark, ev.Tool, clip(ev.Output, 80))
	case swarm.EventHandoffStarted:
		if ev.Child != "" {
			p.line("%s ⇒ %s (run %s): %s", ev.Agent, ev.Target, ev.Child, clip(ev.Request, 80))
		} else {
			p.line("%s ⇒ %s: %s", ev.Agent, ev.Target, clip(ev.Request, 80))
		}
		p.wait(ev.Target + ": waiting for the model")
	case swarm.EventHandoffReturned:
		p.line("%s ⇐ %s: %s", ev.Agent, ev.Target, clip(ev.Output, 80))
		p.wait(ev.Agent + ": waiting for the model")
	case swarm.EventTurnCompleted:
		if text, ok := p.answer[ev.Agent]; ok {
			delete(p.answer, ev.Agent)
			if ev.Agent == p.root {
				p.rejected = &text
			}
		}
		p.line("%s turn %d/%d done", ev.Agent, ev.Turn, ev.MaxTurns)
		p.wait(ev.Agent + ": waiting for the model")
	case adaptive.EventLedger:
		if l, ok := adaptive.LedgerOf(ev); ok {
			p.line("%s ledger %d (%s): plan: %s", ev.Agent, l.Number, l.Cause, clip(strings.Join(l.Plan, "; "), 200))
			if l.Number > 0 {
				for _, c := range l.Changes {
					p.line("%s   %s", ev.Agent, clip(c, 120))
				}
			}
		}
	case adaptive.EventProgress:
		if pl, ok := adaptive.ProgressOf(ev); ok {
			next := "→ " + pl.NextHandoff
			switch {
			case pl.Satisfied:
				next = "satisfied"
			case pl.Replan:
				next = "replanning"
			}
			signals := ""
			if len(pl.Signals) > 0 {
				signals = " (" + strings.Join(pl.Signals, ", ") + ")"
			}
			p.line("%s round %d: progress %t, in a loop %t%s, stalls %d, %s", ev.Agent, pl.Round, pl.Progress, pl.InLoop, signals, pl.Stalls, next)
		}
	case swarm.EventModelError:
		p.line("%s model error (%s): %s", ev.Agent, ev.Kind, clip(ev.Reason, 120))
	case swarm.EventPaused:
		p.sawEnd = true
		p.line("paused: %s", ev.Reason)
		p.wait("")
	case swarm.EventResumed:
		p.line("resumed: %s", clip(ev.Message, 80))
		p.wait(p.root + ": waiting for the model")
	case swarm.EventCompleted:
		p.sawEnd = true
		p.line("completed")
		p.wait("")
	case swarm.EventFailed:
		p.sawEnd = true
		p.line("failed: %s", ev.Reason)
		p.wait("")
	case swarm.EventStopped:
		p.sawEnd = true
		p.line("stopped: %s", ev.Reason)
		p.wait("")
	}
}

// takeoverLine says that a process took a run over from a dead one, how
// long no process drove it, and which steps were asked again.
func takeoverLine(tk *store.Takeover) string {
	line := fmt.Sprintf("taken over by %s from %s, whose lease ran out at %s: no process drove the run for %s",
		tk.Node, tk.From, tk.LeaseUntil.Local().Format("15:04:05.000"), tk.At.Sub(tk.LastSeen).Round(time.Millisecond))
	if len(tk.Redo) > 0 {
		line += "; asked again: " + strings.Join(tk.Redo, ", ")
	}
	return line
}
