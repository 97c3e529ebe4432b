package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/temporal"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"
)

// env is a Temporal server in the test's process, a runtime on an
// in-memory store, and a worker running the engine.
type env struct {
	ts *temporaltest.TestServer
	c  client.Client
	rt *swarm.Runtime
	e  *temporal.Engine
	st store.Store
}

func newEnv(t *testing.T, m model.Model, defs ...swarm.Definition) *env {
	t.Helper()
	return newEnvConfig(t, swarm.Config{Model: m}, defs...)
}

func newEnvConfig(t *testing.T, cfg swarm.Config, defs ...swarm.Definition) *env {
	t.Helper()
	return newEnvWith(t, cfg, temporal.Options{}, defs...)
}

func newEnvWith(t *testing.T, cfg swarm.Config, o temporal.Options, defs ...swarm.Definition) *env {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	st := memory.New()
	cfg.Store = st
	rt, err := swarm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := rt.Register(defs...); err != nil {
		t.Fatal(err)
	}
	c := ts.GetDefaultClient()
	o.Client, o.TaskQueue = c, "swarm-test"
	e, err := temporal.New(rt, o)
	if err != nil {
		t.Fatal(err)
	}
	ts.NewWorker("swarm-test", e.Register)
	return &env{ts: ts, c: c, rt: rt, e: e, st: st}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// run starts swarmID with input and waits for its outcome.
func (v *env) run(t *testing.T, swarmID string, input any) (string, temporal.Outcome) {
	t.Helper()
	ctx := ctxFor(t)
	in, _ := json.Marshal(input)
	id, err := v.e.Start(ctx, swarmID, "", in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := v.e.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return id, out
}

// types lists the journal's event types of run id, in order.
func (v *env) types(t *testing.T, id string) []string {
	t.Helper()
	evs, err := v.rt.History(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, string(ev.Type)+" "+ev.Key)
	}
	return out
}

// counting counts the model requests of each agent.
type counting struct {
	m  model.Model
	mu sync.Mutex
	n  map[string]int
}

func (c *counting) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[req.Agent]++
	c.mu.Unlock()
	return c.m.Generate(ctx, req)
}

func (c *counting) calls(agent string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[agent]
}

// calc is a swarm without a strategy (the tool-calling loop) with a tool.
func calc() (swarm.Definition, *counting) {
	add := swarm.NewTool("add", "adds", func(_ context.Context, in struct{ A, B int }) (int, error) { return in.A + in.B, nil })
	calc := swarm.Define[string, string]("calc", "calculates", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Add.", Tools: []swarm.Tool{add}}
	})
	m := &counting{m: scripted.New(scripted.Script{"calc": {
		scripted.Tools(scripted.ToolCall{ID: "c1", Name: "add", Arguments: map[string]int{"A": 2, "B": 3}}),
		scripted.Text("5"),
	}})}
	return calc, m
}

func TestToolLoop(t *testing.T) {
	calc, m := calc()
	v := newEnv(t, m, calc)
	id, out := v.run(t, "calc", "2+3?")
	if out.Status != "completed" || string(out.Result) != `"5"` {
		t.Fatalf("outcome %+v", out)
	}
	if n := m.calls("calc"); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
	// The store's journal mirrors the run, in the engine's shapes.
	got := strings.Join(v.types(t, id), "\n")
	for _, want := range []string{"started start", "model_response t1/model", "tool_result t1/tool/c1", "turn_completed t1/done", "model_response t2/model", "completed end"} {
		if !strings.Contains(got, want) {
			t.Errorf("journal lacks %q:\n%s", want, got)
		}
	}
	run, err := v.st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if run.State != store.Completed || string(run.Result) != `"5"` {
		t.Errorf("row %+v", run)
	}
}

func TestRowNeverClaimed(t *testing.T) {
	// A run waiting for an answer stays leased to the engine, so the
	// runtime's own workers never claim it.
	v := newEnv(t, scripted.New(nil), askSwarm())
	ctx, id := v.asked(t)
	if _, err := v.st.ClaimExpired(ctx, "other", time.Minute, 10); err != nil {
		t.Fatal(err)
	}
	r, _ := v.st.Get(ctx, id)
	if r.Owner != "temporal:swarm-test" || time.Until(r.LeaseUntil) < 24*time.Hour*365 {
		t.Fatalf("row %+v", r)
	}
	if _, err := v.st.Claim(ctx, id, "other", time.Minute); !errors.Is(err, store.ErrLeased) {
		t.Fatalf("claim: %v", err)
	}
	// A stop answers the question: the run ends stopped.
	if err := v.e.Stop(ctx, id, "done"); err != nil {
		t.Fatal(err)
	}
	if out, err := v.e.Wait(ctx, id); err != nil || out.Status != "stopped" || out.Reason != "done" {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if r, _ := v.st.Get(ctx, id); r.State != store.Stopped {
		t.Fatalf("row %+v", r)
	}
}

// askSwarm is a swarm whose strategy is awaiter.
func askSwarm() swarm.Definition {
	return swarm.Define[string, string]("ask", "asks", func(string) swarm.Spec {
		return swarm.Spec{Strategy: strategy.Of(awaiter{})}
	})
}

// asked starts a run of askSwarm and waits until it asks its question.
func (v *env) asked(t *testing.T) (context.Context, string) {
	t.Helper()
	ctx := ctxFor(t)
	id, err := v.e.Start(ctx, "ask", "", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { r, _ := v.st.Get(ctx, id); return r.Reason == "ok?" })
	return ctx, id
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for range 600 {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("condition not met in time")
}

// awaiter records a value, asks a human and returns the answer.
type awaiter struct{}

func (awaiter) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	v, err := d.Record(ctx, "pick", "value", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`7`), nil })
	if err != nil {
		return nil, err
	}
	a, err := d.Await(ctx, "confirm", strategy.Question{Reason: "ok?"})
	if err != nil {
		return nil, err
	}
	return json.Marshal(a + " " + string(v))
}

func TestAwaitResume(t *testing.T) {
	v := newEnv(t, scripted.New(nil), askSwarm())
	ctx, id := v.asked(t)
	if err := v.e.Resume(ctx, id, "yes"); err != nil {
		t.Fatal(err)
	}
	out, err := v.e.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "completed" || string(out.Result) != `"yes 7"` {
		t.Fatalf("outcome %+v", out)
	}
	if err := v.e.Resume(ctx, id, "again"); err == nil {
		t.Error("a resume of a finished run succeeded")
	}
	got := strings.Join(v.types(t, id), "\n")
	for _, want := range []string{"recorded pick", "paused confirm", "resumed confirm/resumed", "completed end"} {
		if !strings.Contains(got, want) {
			t.Errorf("journal lacks %q:\n%s", want, got)
		}
	}
}

func TestResumeNotPaused(t *testing.T) {
	s := swarm.Define[string, string]("slow", "sleeps", func(string) swarm.Spec {
		return swarm.Spec{Strategy: strategy.Of(sleeper{})}
	})
	v := newEnv(t, scripted.New(nil), s)
	ctx := ctxFor(t)
	id, err := v.e.Start(ctx, "slow", "", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.e.Resume(ctx, id, "yes"); err == nil || !strings.Contains(err.Error(), "not paused") {
		t.Fatalf("resume of a run that asks nothing: %v", err)
	}
	if err := v.e.Stop(ctx, id, "enough"); err != nil {
		t.Fatal(err)
	}
	out, err := v.e.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "stopped" || out.Reason != "enough" {
		t.Fatalf("outcome %+v", out)
	}
	r, _ := v.st.Get(ctx, id)
	if r.State != store.Stopped || r.Reason != "enough" {
		t.Fatalf("row %+v", r)
	}
}

// sleeper sleeps an hour.
type sleeper struct{}

func (sleeper) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	if err := d.Sleep(ctx, "nap", time.Hour); err != nil {
		return nil, err
	}
	return json.Marshal("woke")
}
