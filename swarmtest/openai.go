package swarmtest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/modeltest"
	"github.com/swarmrt/swarm/model/openai"
	"github.com/swarmrt/swarm/model/scripted"
)

// FakeServer is a fake model API over loopback HTTP whose answers come
// from a script (the same [scripted.Script] that drives the scripted
// model), so that whole swarms run through a real provider and its SDK
// offline. It records every request and injects faults on demand.
//
// A request's agent and run come from the X-Swarm-Agent and X-Swarm-Run
// headers, which providers send with their WithAgentHeader option; with a
// single-agent script the header may be absent. The n-th answer delivered
// to an agent in a run is step n of its script: a request that fails by an
// injected fault consumes no step, a scripted error step does (as with the
// scripted model). Scripted errors become the vendor's HTTP errors:
// rate_limited 429, server_error 500, timeout 408, auth 401, bad_request
// 400, context_too_long 400 (context_length_exceeded), connection a dropped
// connection, refused a refusal.
type FakeServer struct {
	*modeltest.Server
	script *scripted.Model
	agents []string

	mu     sync.Mutex
	faults []modeltest.Fault
	served map[[2]string]int
}

// NewOpenAIServer starts a fake OpenAI Chat Completions server (JSON and
// SSE) playing script; it is closed when the test ends. Point a provider at
// its URL, or use [FakeServer.OpenAI].
func NewOpenAIServer(t testing.TB, script scripted.Script) *FakeServer {
	return newFakeServer(t, modeltest.OpenAIChat, script)
}

func newFakeServer(t testing.TB, wire modeltest.Wire, script scripted.Script) *FakeServer {
	t.Helper()
	if err := script.Validate(); err != nil {
		t.Fatalf("swarmtest: invalid script: %v", err)
	}
	s := &FakeServer{script: scripted.New(script, scripted.WithoutBookkeeping()), served: map[[2]string]int{}}
	for name := range script {
		s.agents = append(s.agents, name)
	}
	slices.Sort(s.agents)
	s.Server = modeltest.NewServer(wire, s.respond)
	t.Cleanup(s.Close)
	return s
}

// Inject queues faults: each of the next requests meets one, in order.
func (s *FakeServer) Inject(faults ...modeltest.Fault) {
	s.mu.Lock()
	s.faults = append(s.faults, faults...)
	s.mu.Unlock()
}

// Requests returns how many requests the server received.
func (s *FakeServer) Requests() int { return len(s.Calls()) }

// OpenAI returns an OpenAI provider calling s with the model name "fake",
// sending agent headers; opts are applied last.
func (s *FakeServer) OpenAI(t testing.TB, opts ...openai.Option) *openai.Model {
	t.Helper()
	m, err := openai.New(append([]openai.Option{openai.WithBaseURL(s.URL), openai.WithAPIKey("sk-fake"), openai.WithModel("fake"), openai.WithAgentHeader()}, opts...)...)
	if err != nil {
		t.Fatalf("swarmtest: %v", err)
	}
	return m
}

func (s *FakeServer) respond(c *modeltest.Call) (modeltest.Reply, modeltest.Fault) {
	agent, run := c.Header.Get("X-Swarm-Agent"), c.Header.Get("X-Swarm-Run")
	if agent == "" && len(s.agents) == 1 {
		agent = s.agents[0]
	}
	s.mu.Lock()
	var f modeltest.Fault
	if len(s.faults) > 0 {
		f = s.faults[0]
		s.faults = s.faults[1:]
	}
	key := [2]string{run, agent}
	n := s.served[key]
	s.mu.Unlock()
	if agent == "" {
		return modeltest.Reply{}, modeltest.Fault{Status: http.StatusBadRequest, Message: fmt.Sprintf("fake server: no X-Swarm-Agent header and the script has %d agents (use the provider's WithAgentHeader option)", len(s.agents))}
	}
	if failing(f) {
		// The call fails: it consumes no step.
		reply, _ := s.answer(agent, run, n)
		return reply, f
	}
	s.mu.Lock()
	s.served[key]++
	s.mu.Unlock()
	reply, scriptFault := s.answer(agent, run, n)
	scriptFault.Delay = f.Delay
	return reply, scriptFault
}

// failing reports whether f makes a call fail.
func failing(f modeltest.Fault) bool {
	return f.Status != 0 || f.Drop || f.CutAfter > 0 || f.Malformed || f.ErrorEvent || f.StallAfter > 0
}

// answer renders step n of agent's script.
func (s *FakeServer) answer(agent, run string, n int) (modeltest.Reply, modeltest.Fault) {
	resp, err := s.script.Generate(context.Background(), &model.Request{Agent: agent, RunID: run, Call: n})
	if err != nil {
		switch model.KindOf(err) {
		case model.KindRateLimited:
			return modeltest.Reply{}, modeltest.Fault{Status: http.StatusTooManyRequests, Message: err.Error()}
		case model.KindTimeout:
			return modeltest.Reply{}, modeltest.Fault{Status: http.StatusRequestTimeout, Message: err.Error()}
		case model.KindAuth:
			return modeltest.Reply{}, modeltest.Fault{Status: http.StatusUnauthorized, Message: err.Error()}
		case model.KindBadRequest:
			return modeltest.Reply{}, modeltest.Fault{Status: http.StatusBadRequest, Message: err.Error()}
		case model.KindContextLength:
			return modeltest.Reply{}, modeltest.Fault{Status: http.StatusBadRequest, Code: "context_length_exceeded", Message: err.Error()}
		case model.KindConnection:
			return modeltest.Reply{}, modeltest.Fault{Drop: true}
		case model.KindRefused:
			return modeltest.Reply{Refusal: "I can't help with that."}, modeltest.Fault{}
		}
		return modeltest.Reply{}, modeltest.Fault{Status: http.StatusInternalServerError, Message: err.Error()}
	}
	return modeltest.Reply{ID: fmt.Sprintf("%s_%d", agent, n), Text: resp.Message.Content, ToolCalls: resp.Message.ToolCalls, Usage: resp.Usage}, modeltest.Fault{}
}
