package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/adaptive"
	"github.com/swarmrt/swarm/store"
)

// lockedBuffer is a bytes.Buffer safe for the spinner's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSpinnerOnTerminal: on a terminal a spinner shows what the run waits
// for and for how long, on one line redrawn in place, and is erased before
// each progress line, so that every line appears once, whole.
func TestSpinnerOnTerminal(t *testing.T) {
	var out lockedBuffer
	p := newProgress(&out, true)
	p.event(swarm.Event{Type: swarm.EventStarted, Swarm: "trip", Agent: "trip"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for strings.Count(out.String(), "trip: waiting for the model") < 2 {
		if ctx.Err() != nil {
			t.Fatalf("no spinner redrawn within 10s: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.event(swarm.Event{Type: swarm.EventModelResponse, Agent: "trip", Text: "done"})
	p.event(swarm.Event{Type: swarm.EventCompleted, Agent: "trip"})
	p.stop()
	text := out.String()
	if !strings.Contains(text, "\r\033[K  trip: done\n") {
		t.Errorf("the spinner was not erased before a line: %q", text)
	}
	// What remains on screen: each line once, no spinner.
	var screen []string
	for _, l := range strings.Split(text, "\n") {
		if i := strings.LastIndex(l, "\r\033[K"); i >= 0 {
			l = l[i+len("\r\033[K"):]
		}
		if l != "" {
			screen = append(screen, l)
		}
	}
	if want := []string{"  started trip", "  trip: done", "  completed"}; strings.Join(screen, "|") != strings.Join(want, "|") {
		t.Errorf("screen %q, want %q", screen, want)
	}
	// Not a terminal: no spinner at all.
	var plain lockedBuffer
	q := newProgress(&plain, false)
	q.event(swarm.Event{Type: swarm.EventStarted, Swarm: "trip"})
	time.Sleep(300 * time.Millisecond)
	q.stop()
	if strings.Contains(plain.String(), "\r") || strings.Contains(plain.String(), "waiting") {
		t.Errorf("a spinner without a terminal: %q", plain.String())
	}
}

// TestProgressShowsLedgers: an adaptive run's ledgers, journaled as the
// adaptive package's own JSON, are shown as plans, changes and rounds.
func TestProgressShowsLedgers(t *testing.T) {
	var out lockedBuffer
	p := newProgress(&out, false)
	p.event(swarm.Event{Type: adaptive.EventLedger, Agent: "research", Ledger: []byte(`{"plan":["look","write"],"number":1,"cause":"stall","changes":["+ write"]}`)})
	p.event(swarm.Event{Type: adaptive.EventProgress, Agent: "research", Progress: []byte(`{"round":3,"is_in_loop":true,"signals":["repeat"],"stalls":2,"next_handoff":"writer"}`)})
	p.stop()
	for _, want := range []string{
		"research ledger 1 (stall): plan: look; write",
		"research   + write",
		"research round 3: progress false, in a loop true (repeat), stalls 2, → writer",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in %q", want, out.String())
		}
	}
}

// TestProgressTakeover: the first event a process records after taking a
// run over from a dead one says so, with the dead time and the steps asked
// again.
func TestProgressTakeover(t *testing.T) {
	var out lockedBuffer
	p := newProgress(&out, false)
	at := time.Date(2026, 12, 7, 9, 0, 10, 0, time.Local)
	p.event(swarm.Event{Type: swarm.EventModelResponse, Agent: "trip", Text: "sunny", Attempt: 2, Takeover: &store.Takeover{
		Node: "host:2", From: "host:1", Epoch: 2, At: at, LastSeen: at.Add(-5500 * time.Millisecond), LeaseUntil: at.Add(-500 * time.Millisecond), Redo: []string{"t2/model"}}})
	p.stop()
	want := "taken over by host:2 from host:1, whose lease ran out at 09:00:09.500: no process drove the run for 5.5s; asked again: t2/model\n  trip: sunny"
	if !strings.Contains(out.String(), want) {
		t.Errorf("progress = %q, want %q", out.String(), want)
	}
}
