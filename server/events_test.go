package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/swarmtest"
)

// stream opens a run's event stream; the caller closes the body.
func stream(t *testing.T, ctx context.Context, base, id, lastEventID string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/runs/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("events: %d %s", res.StatusCode, b)
	}
	return res
}

// collect reads a whole stream's events (comments left out).
func collect(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var evs []sseEvent
	if err := readEvents(r, func(e sseEvent) bool {
		if !e.comment || e.event != "" {
			evs = append(evs, e)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestEventsReplayAndResume(t *testing.T) {
	ts, st, history := approvedRun(t)
	c := client{t: t, base: ts.URL}
	res := stream(t, swarmtest.Context(t), ts.URL, st.ID, "")
	evs := collect(t, res.Body)
	res.Body.Close()
	if len(evs) != len(history) {
		t.Fatalf("%d events, journal has %d", len(evs), len(history))
	}
	for i, e := range evs {
		var ev swarm.Event
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
			t.Fatalf("event %d data %q: %v", i, e.data, err)
		}
		if e.id != strconv.Itoa(i+1) || e.event != string(history[i].Type) || ev.Seq != int64(i+1) || ev.Type != history[i].Type || ev.RunID != st.ID {
			t.Errorf("event %d: id %q event %q data %s; journal %d %s", i, e.id, e.event, e.data, history[i].Seq, history[i].Type)
		}
	}
	if evs[len(evs)-1].event != "completed" {
		t.Errorf("stream ended with %q", evs[len(evs)-1].event)
	}
	// Resume after sequence 3, by header and by query.
	res = stream(t, swarmtest.Context(t), ts.URL, st.ID, "3")
	resumed := collect(t, res.Body)
	res.Body.Close()
	if len(resumed) != len(history)-3 || resumed[0].id != "4" {
		t.Errorf("Last-Event-ID 3: %d events from %q", len(resumed), resumed[0].id)
	}
	q := c.get("/v1/runs/" + st.ID + "/events?after=" + strconv.Itoa(len(history)-1))
	byQuery := collect(t, strings.NewReader(string(q.body)))
	if len(byQuery) != 1 || byQuery[0].event != "completed" {
		t.Errorf("after=%d: %+v", len(history)-1, byQuery)
	}
}

// TestEventsFollowLive follows a run through a pause and an HTTP resume,
// with heartbeats while it waits.
func TestEventsFollowLive(t *testing.T) {
	ts, _, _ := newTest(t, Options{Heartbeat: 10 * time.Millisecond})
	c := client{t: t, base: ts.URL}
	st := c.start("approval", `{"input": "x"}`)
	ctx, cancel := context.WithTimeout(swarmtest.Context(t), 20*time.Second)
	defer cancel()
	res := stream(t, ctx, ts.URL, st.ID, "")
	defer res.Body.Close()
	var types []string
	beats, resumed := 0, false
	err := readEvents(res.Body, func(e sseEvent) bool {
		if e.comment && e.event == "" {
			beats++
		} else {
			types = append(types, e.event)
		}
		if beats >= 3 && !resumed && len(types) > 0 && types[len(types)-1] == "paused" {
			resumed = true
			if r := c.post("/v1/runs/"+st.ID+"/resume", `{"message": "yes"}`); r.status != 202 {
				t.Errorf("resume: %d %s", r.status, r.body)
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(types, " ")
	if !strings.Contains(got, "paused") || !strings.Contains(got, "resumed") || !strings.HasSuffix(got, "completed") {
		t.Errorf("events %s", got)
	}
}

func TestFrame(t *testing.T) {
	live := string(frame(swarm.Event{Type: swarm.EventDelta, Text: "he\nllo"}))
	if strings.Contains(live, "id:") || !strings.HasPrefix(live, "event: delta\ndata: {") || strings.Count(live, "\n") != 3 {
		t.Errorf("live-only event frame %q", live)
	}
	rec := string(frame(swarm.Event{Seq: 7, Type: swarm.EventCompleted, Result: json.RawMessage(`"x"`)}))
	if !strings.HasPrefix(rec, "id: 7\nevent: completed\ndata: {") || !strings.HasSuffix(rec, "}\n\n") {
		t.Errorf("journal event frame %q", rec)
	}
}

// TestEventsDisconnect: clients that leave end their streams' goroutines.
func TestEventsDisconnect(t *testing.T) {
	ts, _, _ := newTest(t, Options{Heartbeat: 5 * time.Millisecond})
	c := client{t: t, base: ts.URL}
	st := c.start("approval", `{"input": "x"}`)
	c.wait(st.ID)
	base := baseline()
	for range 20 {
		ctx, cancel := context.WithCancel(swarmtest.Context(t))
		res := stream(t, ctx, ts.URL, st.ID, "")
		// Read the replay, then leave while the run waits.
		n := 0
		_ = readEvents(res.Body, func(e sseEvent) bool {
			if e.event == "paused" {
				n++
			}
			return n == 0
		})
		cancel()
		res.Body.Close()
	}
	goroutinesBack(t, base)
}

// TestEventsSlowReader: a client that stops reading is disconnected once a
// write has waited WriteTimeout, and its stream's goroutines end.
func TestEventsSlowReader(t *testing.T) {
	ts, _, _ := newTest(t, Options{WriteTimeout: 100 * time.Millisecond})
	c := client{t: t, base: ts.URL}
	st := c.start("big", `{"input": "x"}`)
	if _, s := c.wait(st.ID); s.State != swarm.StateCompleted {
		t.Fatalf("big run: %+v", s)
	}
	base := baseline()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	fmt.Fprintf(conn, "GET /v1/runs/%s/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", st.ID)
	// Read the status line only, then stop reading: about 10 MB of
	// events cannot fit in the socket buffers.
	line, err := bufio.NewReaderSize(conn, 64).ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Fatalf("status line %q: %v", line, err)
	}
	goroutinesBack(t, base)
	// The stream was cut short: what reached the client's socket is far
	// less than the run's events.
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, _ := io.Copy(io.Discard, conn)
	if n >= 40*256<<10 {
		t.Errorf("the client received %d bytes: the whole stream", n)
	}
}

// TestCloseStreams: shutting down ends open streams and refuses new ones.
func TestCloseStreams(t *testing.T) {
	ts, srv, _ := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	st := c.start("approval", `{"input": "x"}`)
	c.wait(st.ID)
	res := stream(t, swarmtest.Context(t), ts.URL, st.ID, "")
	defer res.Body.Close()
	paused, ended := make(chan struct{}), make(chan error)
	go func() {
		ended <- readEvents(res.Body, func(e sseEvent) bool {
			if e.event == "paused" {
				close(paused)
			}
			return true
		})
	}()
	swarmtest.Recv(t, swarmtest.Context(t), paused, "the paused event")
	srv.CloseStreams()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("stream ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream still open after CloseStreams")
	}
	if r := c.get("/v1/runs/" + st.ID + "/events"); r.status != 503 {
		t.Errorf("stream after shutdown: %d %s", r.status, r.body)
	}
}

// TestEventsAfterTheEnd: a stream of a finished run that starts at or after
// its terminal event (Last-Event-ID or ?after= of the completed event, or
// beyond) ends at once with no events instead of idling with heartbeats.
func TestEventsAfterTheEnd(t *testing.T) {
	ts, _, rt := newTest(t, Options{Heartbeat: 20 * time.Millisecond})
	c := client{t: t, base: ts.URL}
	st := c.start("echo", `{"input": "x"}`)
	if _, st = c.wait(st.ID); st.State != swarm.StateCompleted {
		t.Fatalf("run: %+v", st)
	}
	history, err := rt.History(context.Background(), st.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := history[len(history)-1]
	if last.Type != swarm.EventCompleted {
		t.Fatalf("last event %s", last.Type)
	}
	end := strconv.FormatInt(last.Seq, 10)
	for _, tc := range []struct{ name, header, query string }{
		{"Last-Event-ID", end, ""},
		{"after", "", "?after=" + end},
		{"beyond", "", "?after=" + strconv.FormatInt(last.Seq+100, 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/runs/"+st.ID+"/events"+tc.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.header != "" {
				req.Header.Set("Last-Event-ID", tc.header)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatalf("the stream did not end (%v) after %q...", err, b[:min(len(b), 120)])
			}
			if evs := collect(t, strings.NewReader(string(b))); len(evs) != 0 {
				t.Errorf("events after the end: %+v", evs)
			}
		})
	}
	// The runtime's own stream ends too.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for ev, err := range rt.Events(ctx, st.ID, last.Seq) {
		t.Fatalf("Events after the end yielded %+v, %v", ev, err)
	}
}

// TestEventsResumeRightAfterTheLastSeen resumes a finished run's stream
// after every sequence number, by Last-Event-ID and by ?after=: the first
// event is always the next one. Only the first event is read, so a stream
// that resumes late fails at once rather than waiting for an end.
func TestEventsResumeRightAfterTheLastSeen(t *testing.T) {
	ts, st, history := approvedRun(t)
	first := func(k int, byQuery bool) sseEvent {
		t.Helper()
		ctx, cancel := context.WithCancel(swarmtest.Context(t))
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/runs/"+st.ID+"/events", nil)
		if err != nil {
			t.Fatal(err)
		}
		if byQuery {
			req.URL.RawQuery = "after=" + strconv.Itoa(k)
		} else {
			req.Header.Set("Last-Event-ID", strconv.Itoa(k))
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var got sseEvent
		if err := readEvents(res.Body, func(e sseEvent) bool {
			if e.comment {
				return true
			}
			got = e
			return false
		}); err != nil {
			t.Fatalf("after %d: %v", k, err)
		}
		return got
	}
	for k := range len(history) {
		for _, byQuery := range []bool{false, true} {
			e := first(k, byQuery)
			if want := history[k]; e.id != strconv.FormatInt(want.Seq, 10) || e.event != string(want.Type) {
				t.Fatalf("resumed after %d (by query: %v): first event %q %q, want %d %s", k, byQuery, e.id, e.event, want.Seq, want.Type)
			}
		}
	}
}

// approvedRun runs the approval swarm through its pause and an HTTP resume
// to the end, and returns the server, the run and its journal.
func approvedRun(t *testing.T) (*httptest.Server, RunStatus, []swarm.Event) {
	t.Helper()
	ts, _, rt := newTest(t, Options{})
	c := client{t: t, base: ts.URL}
	st := c.start("approval", `{"input": "x"}`)
	c.wait(st.ID)
	c.post("/v1/runs/"+st.ID+"/resume", `{"message": "ok"}`)
	c.wait(st.ID)
	history, err := rt.History(swarmtest.Context(t), st.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ts, st, history
}
