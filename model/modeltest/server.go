// Package modeltest checks model providers against wire-level fakes of the
// vendors' HTTP APIs: [Run] is a conformance suite every provider passes,
// and [NewServer] is a fake server (net/http/httptest) speaking a vendor's
// exact JSON and server-sent-event formats through a [Wire]: [OpenAIChat],
// [OpenAIResponses] or [Anthropic].
package modeltest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/swarmrt/swarm/model"
)

// Reply is a model answer in vendor-neutral terms; a [Wire] renders it in
// its vendor's format.
type Reply struct {
	// ID is the response id (default "resp_1").
	ID string
	// Text is the answer's text. Streamed, it is sent in TextChunks pieces
	// when set, else split in pieces of about eight bytes.
	Text       string
	TextChunks []string
	// Refusal is a refusal message (rendered as OpenAI's refusal field or
	// Anthropic's refusal stop reason).
	Refusal string
	// ToolCalls are the answer's tool calls; streamed, their arguments are
	// split across several events.
	ToolCalls []model.ToolCall
	// Finish is the stop reason in OpenAI's words: "stop", "length",
	// "tool_calls" or "content_filter" ("" derives it from the reply).
	Finish string
	// Usage is reported in the last event (or the body). InputTokens
	// includes CachedInputTokens, OutputTokens includes ReasoningTokens.
	Usage model.Usage
}

// Fault makes a fake server misbehave on one request.
type Fault struct {
	// Status, when not 0, answers with this HTTP status and the vendor's
	// error body made of Code and Message (or Body, verbatim, when set).
	Status  int
	Code    string
	Message string
	Body    string
	// RetryAfter is sent as the Retry-After header when set.
	RetryAfter string
	// Drop closes the connection without answering.
	Drop bool
	// CutAfter, when > 0, cuts a streamed answer's connection after that
	// many events (before the final one).
	CutAfter int
	// Malformed sends a body (or, streaming, an event) that is not JSON.
	Malformed bool
	// ErrorEvent, streaming, sends the vendor's error event (with Code and
	// Message) after the first event, instead of the rest of the answer.
	ErrorEvent bool
	// StallAfter, when > 0, stops a streamed answer after that many events
	// and waits until the client goes away.
	StallAfter int
	// Delay waits before answering; a client that gives up first is
	// noticed and the handler returns.
	Delay time.Duration
}

// Event is one server-sent event.
type Event struct {
	// Name is the event's type line ("" for none, as OpenAI's chat stream).
	Name string
	// Data is the data line.
	Data string
}

// Call is a request received by a fake server, decoded into
// vendor-neutral terms.
type Call struct {
	Model        string
	System       string
	Messages     []model.Message
	Tools        []model.ToolDef
	Stream       bool
	ResultSchema json.RawMessage
	MaxTokens    int64
	Header       http.Header
	Path         string
	// Body is the raw request body.
	Body []byte
}

// Wire is one vendor API's wire format.
type Wire interface {
	// Name names the API, such as "openai-chat".
	Name() string
	// Path is the request path the API serves, such as "/chat/completions".
	Path() string
	// Decode decodes a request body.
	Decode(body []byte) (*Call, error)
	// Body renders a reply as a non-streamed response body.
	Body(r *Reply) []byte
	// Events renders a reply as the events of a stream, the terminal ones
	// included (OpenAI's [DONE], Anthropic's message_stop).
	Events(r *Reply) []Event
	// ErrorBody renders an error response body.
	ErrorBody(status int, code, message string) []byte
	// ErrorEvent renders an error sent in the middle of a stream.
	ErrorEvent(code, message string) Event
}

// Responder decides the answer to a call: a reply, or a fault (when its
// Status, Drop, CutAfter, Malformed, ErrorEvent or Delay is set, the fault
// applies; a fault with only a Delay still answers with the reply).
type Responder func(c *Call) (Reply, Fault)

// Server is a fake vendor API over loopback HTTP that records the calls it
// receives.
type Server struct {
	*httptest.Server
	wire    Wire
	respond Responder

	mu    sync.Mutex
	calls []*Call
}

// NewServer starts a fake server speaking wire, answering with respond.
// Close it when done.
func NewServer(wire Wire, respond Responder) *Server {
	s := &Server{wire: wire, respond: respond}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Calls returns the calls received so far, in order.
func (s *Server) Calls() []*Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Call(nil), s.calls...)
}

// Wire returns the server's wire format.
func (s *Server) Wire() Wire { return s.wire }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != s.wire.Path() {
		writeJSON(w, http.StatusNotFound, s.wire.ErrorBody(http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path))
		return
	}
	call, err := s.wire.Decode(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, s.wire.ErrorBody(http.StatusBadRequest, "invalid_request_error", err.Error()))
		return
	}
	call.Header, call.Path, call.Body = r.Header.Clone(), r.URL.Path, body
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()

	reply, f := s.respond(call)
	Write(w, r, s.wire, call.Stream, &reply, f)
}

// Write answers r with reply, in wire's format, streamed or not, as fault
// f says. It is the core of [Server], for servers of your own.
func Write(w http.ResponseWriter, r *http.Request, wire Wire, stream bool, reply *Reply, f Fault) {
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if f.Drop {
		panic(http.ErrAbortHandler) // the server closes the connection
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.Status != 0 {
		body := []byte(f.Body)
		if f.Body == "" {
			body = wire.ErrorBody(f.Status, f.Code, f.Message)
		}
		writeJSON(w, f.Status, body)
		return
	}
	if !stream {
		body := wire.Body(reply)
		if f.Malformed {
			body = body[:len(body)/2]
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	events := wire.Events(reply)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for i, ev := range events {
		if f.StallAfter > 0 && i >= f.StallAfter {
			<-r.Context().Done()
			return
		}
		if f.CutAfter > 0 && i >= f.CutAfter {
			panic(http.ErrAbortHandler) // cut the stream midway
		}
		if i == 1 && f.ErrorEvent {
			ev = wire.ErrorEvent(f.Code, f.Message)
		} else if i == 2 && f.Malformed {
			ev.Data = `{"id": "broken", "choices": [{"delta": {"content": "x"` // not JSON
		}
		if ev.Name != "" {
			io.WriteString(w, "event: "+ev.Name+"\n")
		}
		io.WriteString(w, "data: "+ev.Data+"\n\n")
		if flusher != nil {
			flusher.Flush()
		}
		if r.Context().Err() != nil {
			return
		}
		if i == 1 && f.ErrorEvent {
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// chunks splits s into pieces of about n bytes, not splitting UTF-8
// sequences.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i < len(s) && s[i]&0xC0 == 0x80 {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func textChunks(r *Reply) []string {
	if r.TextChunks != nil {
		return r.TextChunks
	}
	return chunks(r.Text, 8)
}

// argChunks splits tool call arguments in three pieces.
func argChunks(args json.RawMessage) []string {
	s := string(args)
	if len(s) < 3 {
		return []string{s}
	}
	return []string{s[:len(s)/3], s[len(s)/3 : 2*len(s)/3], s[2*len(s)/3:]}
}

func finishOf(r *Reply) string {
	switch {
	case r.Finish != "":
		return r.Finish
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func replyID(r *Reply) string {
	if r.ID != "" {
		return r.ID
	}
	return "resp_1"
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
