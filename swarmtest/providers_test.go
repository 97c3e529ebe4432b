package swarmtest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/modeltest"
	"github.com/swarmrt/swarm/model/openai"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

type Plan struct {
	Activity string `json:"activity"`
	Day      string `json:"day"`
}

type dayIn struct {
	Day string `json:"day"`
}

func planner() *swarm.Swarm[string, Plan] {
	forecast := swarm.NewTool("forecast", "Forecast for a day", func(_ context.Context, in dayIn) (string, error) {
		return "sunny on " + in.Day, nil
	})
	weather := &swarm.Agent{Name: "weather", Description: "Weather forecasts", Instructions: "You forecast the weather.", Tools: []swarm.Tool{forecast}}
	return swarm.Define[string, Plan]("planner", "Plans an outing", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Plan for: {{.Input}}", Handoffs: []swarm.Handoff{swarm.ToAgent(weather)}}
	})
}

var plannerScript = scripted.Script{
	"planner": {
		scripted.Tools(scripted.CallTool("handoff_to_weather", map[string]any{"request": "Saturday forecast?"})),
		scripted.Text(`{"activity": "hiking", "day": "Saturday"}`),
	},
	"weather": {
		scripted.Tools(scripted.CallTool("forecast", map[string]any{"day": "saturday"})),
		scripted.Text("Saturday will be sunny."),
	},
}

// streaming makes every call stream, as a runtime passing deltas on does.
func streaming(m model.Model, deltas *[]string) model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		req.OnDelta = func(d model.Delta) { *deltas = append(*deltas, d.Text) }
		return m.Generate(ctx, req)
	})
}

func runPlanner(t *testing.T, m model.Model) (swarm.Result[Plan], *swarm.Runtime, string) {
	t.Helper()
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m, RetryBackoff: time.Millisecond, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	p := planner()
	if err := rt.Register(p); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, run, err := p.Run(ctx, rt, "something outdoors")
	if err != nil {
		t.Fatal(err)
	}
	return res, rt, run.ID()
}

func assertPlanned(t *testing.T, res swarm.Result[Plan], rt *swarm.Runtime, id string) {
	t.Helper()
	c, ok := res.(swarm.Completed[Plan])
	if !ok {
		t.Fatalf("result = %#v, want Completed", res)
	}
	if c.Output != (Plan{Activity: "hiking", Day: "Saturday"}) {
		t.Errorf("output = %+v", c.Output)
	}
	swarmtest.AssertHandoffs(t, rt, id, "weather")
	swarmtest.AssertToolCalls(t, rt, id, "forecast")
	swarmtest.AssertJournal(t, rt, id)
}

// Each provider runs a swarm with a handoff and a tool through its
// official SDK against the fake server, plain and streaming.
func TestEndToEndProviders(t *testing.T) {
	servers := map[string]func(t *testing.T) (*swarmtest.FakeServer, model.Model){
		"openai": func(t *testing.T) (*swarmtest.FakeServer, model.Model) {
			s := swarmtest.NewOpenAIServer(t, plannerScript)
			return s, s.OpenAI(t)
		},
		"openai-responses": func(t *testing.T) (*swarmtest.FakeServer, model.Model) {
			s := swarmtest.NewOpenAIResponsesServer(t, plannerScript)
			return s, s.OpenAI(t, openai.WithAPI(openai.Responses))
		},
		"compatible": func(t *testing.T) (*swarmtest.FakeServer, model.Model) {
			s := swarmtest.NewOpenAIServer(t, plannerScript)
			return s, s.OpenAI(t, openai.WithProvider("ollama"), openai.WithStructuredOutput(false))
		},
		"anthropic": func(t *testing.T) (*swarmtest.FakeServer, model.Model) {
			s := swarmtest.NewAnthropicServer(t, plannerScript)
			return s, s.Anthropic(t)
		},
	}
	for name, open := range servers {
		for _, stream := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				srv, m := open(t)
				var deltas []string
				if stream {
					m = streaming(m, &deltas)
				}
				res, rt, id := runPlanner(t, m)
				assertPlanned(t, res, rt, id)
				calls := srv.Calls()
				if len(calls) != 4 {
					t.Fatalf("%d requests, want 4", len(calls))
				}
				for _, c := range calls {
					if c.Stream != stream {
						t.Errorf("request stream = %v, want %v", c.Stream, stream)
					}
					if c.Header.Get("X-Swarm-Run") != id {
						t.Errorf("X-Swarm-Run = %q, want %q", c.Header.Get("X-Swarm-Run"), id)
					}
				}
				// The planner's second call carries the handoff's result.
				last := calls[3]
				if last.Header.Get("X-Swarm-Agent") != "planner" || !strings.Contains(last.Messages[len(last.Messages)-1].Content, "Saturday will be sunny.") {
					t.Errorf("last request: agent %q, messages %+v", last.Header.Get("X-Swarm-Agent"), last.Messages)
				}
				if stream && !strings.Contains(strings.Join(deltas, ""), "Saturday will be sunny.") {
					t.Errorf("deltas = %q", deltas)
				}
			})
		}
	}
}

// The runtime retries 429 (honouring Retry-After), 500, 529, dropped
// connections and streams cut midway, each as a whole call; the run
// completes, and every failed attempt is one more HTTP request.
func TestRetriesThroughRuntime(t *testing.T) {
	cases := []struct {
		name   string
		faults []modeltest.Fault
		stream bool
		anth   bool
	}{
		{"429 retry-after then 500", []modeltest.Fault{{Status: 429, RetryAfter: "0.01"}, {Status: 500}}, false, false},
		{"dropped connections", []modeltest.Fault{{Drop: true}, {Drop: true}}, false, false},
		{"cut streams", []modeltest.Fault{{CutAfter: 3}, {CutAfter: 2}}, true, false},
		{"error event and malformed chunk", []modeltest.Fault{{ErrorEvent: true}, {Malformed: true}}, true, false},
		{"anthropic 529 overloaded", []modeltest.Fault{{Status: 529}, {Status: 429, RetryAfter: "0"}}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var srv *swarmtest.FakeServer
			var m model.Model
			if tc.anth {
				srv = swarmtest.NewAnthropicServer(t, plannerScript)
				m = srv.Anthropic(t)
			} else {
				srv = swarmtest.NewOpenAIServer(t, plannerScript)
				m = srv.OpenAI(t)
			}
			if tc.stream {
				m = streaming(m, new([]string))
			}
			srv.Inject(tc.faults...)
			res, rt, id := runPlanner(t, m)
			assertPlanned(t, res, rt, id)
			if got, want := srv.Requests(), 4+len(tc.faults); got != want {
				t.Errorf("%d HTTP requests, want %d", got, want)
			}
			var errs int
			for _, ev := range swarmtest.Events(t, rt, id) {
				if ev.Type == swarm.EventModelError {
					errs++
				}
			}
			if errs != len(tc.faults) {
				t.Errorf("%d model errors journaled, want %d", errs, len(tc.faults))
			}
		})
	}
}

// 400 and 401 are not retried: the run fails after one request.
func TestNoRetryOnClientErrors(t *testing.T) {
	for _, status := range []int{400, 401} {
		srv := swarmtest.NewOpenAIServer(t, plannerScript)
		srv.Inject(modeltest.Fault{Status: status})
		res, _, _ := runPlanner(t, srv.OpenAI(t))
		f, ok := res.(swarm.Failed)
		if !ok {
			t.Fatalf("status %d: result = %#v, want Failed", status, res)
		}
		if !strings.Contains(f.Reason, "openai:fake") {
			t.Errorf("status %d: reason %q does not name the provider and model", status, f.Reason)
		}
		if n := srv.Requests(); n != 1 {
			t.Errorf("status %d: %d requests, want 1", status, n)
		}
	}
}
