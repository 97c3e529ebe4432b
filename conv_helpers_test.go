package swarm_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"testing"
)

// The conversations root tests run (compaction, snapshots, guardrails,
// forks of a conversation): the same as package conversation's tests.

// Sale is the shared context of the test conversations.
type Sale struct {
	Customer string `json:"customer"`
	Topic    string `json:"topic"`
	Discount int    `json:"discount,omitempty"`
}

// convRecorder records the model requests of a scripted model.
type convRecorder struct {
	mu   sync.Mutex
	reqs []model.Request
	m    *scripted.Model
}

func (r *convRecorder) model() model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		cp := *req
		cp.Messages = slices.Clone(req.Messages)
		cp.Tools = slices.Clone(req.Tools)
		r.mu.Lock()
		r.reqs = append(r.reqs, cp)
		r.mu.Unlock()
		return r.m.Generate(ctx, req)
	})
}

// requests returns the recorded requests of agent.
func (r *convRecorder) requests(agent string) []model.Request {
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

func convRuntime(t *testing.T, script scripted.Script, st store.Store) (*swarm.Runtime, *convRecorder) {
	t.Helper()
	rec := &convRecorder{m: scripted.New(script)}
	if st == nil {
		st = memory.New()
	}
	rt, err := swarm.New(swarm.Config{Store: st, Model: rec.model(), RetryBackoff: time.Millisecond, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, rec
}

// effects counts tool executions by idempotency key.
type effects struct {
	mu sync.Mutex
	n  map[string]int
}

func (e *effects) add(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n[swarm.IdempotencyKey(ctx)]++
}

func (e *effects) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, v := range e.n {
		n += v
	}
	return n
}

// shop is a receptionist (the queen), a sales agent and a support agent.
// The receptionist may transfer to sales (setting the topic) and to
// support; sales may transfer back; support may transfer to nobody.
func shop(fx *effects, spec func(*conversation.Spec[Sale])) *conversation.Conversation[Sale] {
	type lookupIn struct {
		Name string `json:"name"`
	}
	lookup := swarm.NewTool("lookup_customer", "Finds a customer", func(ctx context.Context, in lookupIn) (string, error) {
		fx.add(ctx)
		_, err := conversation.UpdateContext(ctx, func(s *Sale) { s.Customer = in.Name })
		return "customer " + in.Name + " found", err
	})
	type discountIn struct {
		Percent int `json:"percent"`
	}
	discount := swarm.NewTool("apply_discount", "Applies a discount", func(ctx context.Context, in discountIn) (string, error) {
		fx.add(ctx)
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
