// Package conversationtest holds the conversation that tests of
// conversations run (a shop's front desk with a shared Sale context), a
// model recorder and a counter of tool effects, for the tests of package
// conversation and of the engine (compaction, snapshots, guardrails, forks
// and parts of a conversation).
package conversationtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
)

// Sale is the shared context of the shop conversation.
type Sale struct {
	Customer string `json:"customer"`
	Topic    string `json:"topic"`
	Discount int    `json:"discount,omitempty"`
}

// Recorder records the model requests of a scripted model.
type Recorder struct {
	// Script is the scripted model that answers.
	Script *scripted.Model
	mu     sync.Mutex
	reqs   []model.Request
}

// Model is the recording model.
func (r *Recorder) Model() model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		cp := *req
		cp.Messages = slices.Clone(req.Messages)
		cp.Tools = slices.Clone(req.Tools)
		r.mu.Lock()
		r.reqs = append(r.reqs, cp)
		r.mu.Unlock()
		return r.Script.Generate(ctx, req)
	})
}

// Requests returns the recorded requests of agent.
func (r *Recorder) Requests(agent string) []model.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []model.Request
	for _, q := range r.reqs {
		if q.Agent == agent {
			out = append(out, q)
		}
	}
	return out
}

// Runtime returns a runtime on st (a new memory store if nil) whose model
// answers from script and is recorded; it is closed when t ends.
func Runtime(t testing.TB, script scripted.Script, st store.Store) (*swarm.Runtime, *Recorder) {
	t.Helper()
	rec := &Recorder{Script: scripted.New(script)}
	if st == nil {
		st = memory.New()
	}
	rt, err := swarm.New(swarm.Config{Store: st, Model: rec.Model(), RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, rec
}

// Effects counts tool executions by idempotency key.
type Effects struct {
	mu sync.Mutex
	n  map[string]int
}

// NewEffects returns an empty count.
func NewEffects() *Effects { return &Effects{n: map[string]int{}} }

// Add counts the execution of the tool call ctx belongs to.
func (e *Effects) Add(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n[swarm.IdempotencyKey(ctx)]++
}

// Count returns the number of executions.
func (e *Effects) Count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, v := range e.n {
		n += v
	}
	return n
}

// ByKey returns the executions per idempotency key.
func (e *Effects) ByKey() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.n)
}

// Reset forgets every execution.
func (e *Effects) Reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n = map[string]int{}
}

// Shop is a receptionist (the queen), a sales agent and a support agent.
// The receptionist may transfer to sales (setting the topic) and to
// support; sales may transfer back; support may transfer to nobody. Its
// tools count their executions in fx; spec, if not nil, changes the spec.
func Shop(fx *Effects, spec func(*conversation.Spec[Sale])) *conversation.Conversation[Sale] {
	type lookupIn struct {
		Name string `json:"name"`
	}
	lookup := swarm.NewTool("lookup_customer", "Finds a customer", func(ctx context.Context, in lookupIn) (string, error) {
		fx.Add(ctx)
		_, err := conversation.UpdateContext(ctx, func(s *Sale) { s.Customer = in.Name })
		return "customer " + in.Name + " found", err
	})
	type discountIn struct {
		Percent int `json:"percent"`
	}
	discount := swarm.NewTool("apply_discount", "Applies a discount", func(ctx context.Context, in discountIn) (string, error) {
		fx.Add(ctx)
		s, err := conversation.UpdateContext(ctx, func(s *Sale) { s.Discount = in.Percent })
		return fmt.Sprintf("discount of %d%% applied for %s", s.Discount, s.Customer), err
	})
	receptionist := &swarm.Agent{Name: "receptionist", Description: "Greets and routes", Instructions: "Greet {{.Context.Customer}} and route.", Tools: []swarm.Tool{lookup}}
	sales := &swarm.Agent{Name: "sales", Description: "Sells products", Instructions: "Sell {{.Context.Topic}} to {{.Context.Customer}} (discount {{.Context.Discount}}%).", Tools: []swarm.Tool{discount}}
	support := &swarm.Agent{Name: "support", Description: "Fixes problems", Instructions: "Fix problems."}
	s := conversation.Spec[Sale]{
		Queen:  receptionist,
		Agents: []*swarm.Agent{sales, support},
		Handovers: map[string][]conversation.Handover{
			"receptionist": {{To: "sales", Sets: []string{"topic"}}, {To: "support"}},
			"sales":        {{To: "receptionist"}},
		},
	}
	if spec != nil {
		spec(&s)
	}
	return conversation.Define("shop", "A shop's front desk", s)
}
