package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/internal/jsonx"
)

// events streams a run's events as server-sent events: each journal event
// with "id:" its sequence number, "event:" its type and "data:" its JSON;
// live-only events (sequence 0, such as model text deltas) without an id.
// A reconnecting client's Last-Event-ID header (or ?after=N) resumes after
// that sequence number. Comment lines keep idle streams alive. The stream
// ends after the run's completed, failed or stopped event; a paused run's
// stream stays open until it is resumed and ends, or the client leaves.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	after, err := resumePoint(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	st, ok := s.authorizedRun(w, r)
	if !ok {
		return
	}
	if !s.addStream() {
		s.fail(w, r, errShuttingDown)
		return
	}
	defer s.streams.Done()

	ctx, cancel := context.WithCancel(r.Context())
	stopOnClose := context.AfterFunc(s.ctx, cancel)
	defer stopOnClose()

	type item struct {
		ev  swarm.Event
		err error
	}
	// A buffer lets a replay queue events while earlier ones are written,
	// so that they go out in few flushes (see send's flush below).
	ch := make(chan item, 64)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		defer close(ch)
		for ev, err := range s.rt.Events(ctx, st.ID, after, swarm.WithDeltas()) {
			select {
			case ch <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	// Whatever ends the stream, the producer ends with it.
	defer func() {
		cancel()
		<-produced
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(b []byte, flush bool) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if _, err := w.Write(b); err != nil {
			return false
		}
		return !flush || rc.Flush() == nil
	}
	send := func(b []byte) bool { return write(b, true) }
	if !send([]byte(": run " + st.ID + "\n\n")) {
		return
	}
	beat := time.NewTicker(s.opts.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case it, open := <-ch:
			if !open {
				return
			}
			if it.err != nil {
				if ctx.Err() == nil {
					s.log.Warn("event stream failed", "run", st.ID, "err", it.err)
					b, _ := json.Marshal(errorBody{Error{Code: "stream_failed", Message: it.err.Error()}})
					send(fmt.Appendf(nil, "event: error\ndata: %s\n\n", b))
				}
				return
			}
			// Flush when no other event is waiting: a replay of a long
			// journal goes out in large writes, a live event at once.
			if !write(frame(it.ev), len(ch) == 0) {
				return
			}
		case <-beat.C:
			if !send([]byte(": heartbeat\n\n")) {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// addStream counts a new stream unless the server is closing.
func (s *Server) addStream() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return false
	}
	s.streams.Add(1)
	return true
}

// frame encodes one event as an SSE message.
func frame(ev swarm.Event) []byte {
	data, err := jsonx.Marshal(ev)
	if err != nil {
		data, _ = json.Marshal(errorBody{Error{Code: "internal", Message: "encode event: " + err.Error()}})
	}
	var b []byte
	if ev.Seq > 0 {
		b = fmt.Appendf(b, "id: %d\n", ev.Seq)
	}
	return fmt.Appendf(b, "event: %s\ndata: %s\n\n", sseField(string(ev.Type)), data)
}

// sseField keeps a value on one line.
func sseField(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// resumePoint is the sequence number to stream after: the Last-Event-ID
// header of a reconnecting client, else ?after=, else 0.
func resumePoint(r *http.Request) (int64, error) {
	v, what := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, what = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("%s: want a sequence number, got %q", what, v)
	}
	return n, nil
}
