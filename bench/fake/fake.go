// Package fake is the OpenAI-compatible model server of the peer benchmark:
// a Chat Completions endpoint on loopback with one fixed policy, which
// counts the bytes, requests and TCP connections it receives.
//
// The policy: when the last message is from the user and the request
// offers a handoff tool (a tool whose name contains the specialist's name),
// call it once with a request; otherwise answer with text. An orchestrator
// that delegates to a specialist and then answers makes three calls per
// run: orchestrator (handoff), specialist (answer), orchestrator (answer).
package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/modeltest"
)

// Specialist is the name of the agent the orchestrator hands off to; a tool
// whose name contains it is the handoff tool.
const Specialist = "specialist"

// Counts are what a server received.
type Counts struct {
	// Requests is the number of chat completion requests.
	Requests int64 `json:"requests"`
	// Bytes is the sum of the request bodies' sizes.
	Bytes int64 `json:"bytes"`
	// Conns is the number of TCP connections accepted.
	Conns int64 `json:"conns"`
	// Handoffs is the number of answers that called the handoff tool.
	Handoffs int64 `json:"handoffs"`
	// Bad is the number of requests that could not be decoded.
	Bad int64 `json:"bad"`
}

// Server is a running fake model server.
type Server struct {
	// URL is the base URL of the API, such as http://127.0.0.1:1234/v1.
	URL     string
	latency time.Duration
	srv     *http.Server
	ln      net.Listener
	done    chan struct{}

	requests, bytes, conns, handoffs, bad, ids atomic.Int64
}

// Start starts a server on a loopback port that answers each request after
// latency.
func Start(latency time.Duration) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String() + "/v1", latency: latency, ln: ln, done: make(chan struct{})}
	s.srv = &http.Server{
		Handler: http.HandlerFunc(s.serve),
		// Generous: on a loaded machine 10,000 runs keep connections idle
		// for a long while, and a closed idle connection fails a POST.
		ReadHeaderTimeout: 10 * time.Minute,
		IdleTimeout:       10 * time.Minute,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		},
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Counts returns what the server received so far.
func (s *Server) Counts() Counts {
	return Counts{Requests: s.requests.Load(), Bytes: s.bytes.Load(), Conns: s.conns.Load(), Handoffs: s.handoffs.Load(), Bad: s.bad.Load()}
}

// Close stops the server, waiting at most ten seconds for requests in
// flight.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	return err
}

const path = "/v1/chat/completions"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != path {
		http.Error(w, "no route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	s.requests.Add(1)
	s.bytes.Add(int64(len(body)))
	call, err := modeltest.OpenAIChat.Decode(body)
	if err != nil {
		s.bad.Add(1)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	reply := s.answer(call)
	modeltest.Write(w, r, modeltest.OpenAIChat, call.Stream, &reply, modeltest.Fault{Delay: s.latency})
}

// answer applies the policy to a call.
func (s *Server) answer(c *modeltest.Call) modeltest.Reply {
	id := "r" + strconv.FormatInt(s.ids.Add(1), 10)
	usage := model.Usage{InputTokens: 100, OutputTokens: 10}
	last := len(c.Messages) - 1
	if last >= 0 && c.Messages[last].Role == model.RoleUser {
		for _, t := range c.Tools {
			if strings.Contains(t.Name, Specialist) {
				s.handoffs.Add(1)
				args, _ := json.Marshal(map[string]string{"request": "Answer this: " + c.Messages[last].Content})
				return modeltest.Reply{ID: id, ToolCalls: []model.ToolCall{{ID: "call_" + id, Name: t.Name, Arguments: args}}, Usage: usage}
			}
		}
	}
	return modeltest.Reply{ID: id, Text: "The answer is 42.", Usage: usage}
}
