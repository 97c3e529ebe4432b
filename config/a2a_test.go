package config_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// TestA2AAgents runs a YAML swarm that delegates to a remote A2A agent
// served by another runtime, with a bearer token from the environment.
func TestA2AAgents(t *testing.T) {
	a, err := auth.New([]auth.Token{{Name: "yaml", Secret: "tok-123", Swarms: []string{"researcher"}}})
	if err != nil {
		t.Fatal(err)
	}
	remoteRT, _ := swarmtest.NewRuntime(t, scripted.Script{"researcher": {scripted.Text("three sources")}},
		swarm.Define[string, string]("researcher", "Finds sources", nil))
	h, err := a2a.NewHandler(remoteRT, a2a.Options{Auth: a})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	t.Setenv("RESEARCHER_TOKEN", "tok-123")

	f, err := config.Parse([]byte(`
version: 1
a2a_agents:
  research:
    url: `+srv.URL+`/a2a/researcher
    token_env: RESEARCHER_TOKEN
    description: Finds sources
agents:
  writer:
    instructions: Write.
    handoffs: [{agent: research, description: Ask the research service}]
swarms:
  report:
    instructions: Report.
    handoffs: [writer, research]
`), "")
	if err != nil {
		t.Fatal(err)
	}
	m := &recorder{Model: scripted.New(scripted.Script{
		"report": {
			scripted.Tools(scripted.CallTool("delegate_to_research", map[string]any{"request": "sources on bees"})),
			scripted.Text("report done"),
		},
	})}
	rt := newRuntime(t, m)
	if err := f.Register(rt); err != nil {
		t.Fatal(err)
	}
	id, err := rt.Start(ctxT(t), "report", []byte(`"bees"`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.Wait(ctxT(t), id)
	if err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("run: %+v, %v", st, err)
	}
	swarmtest.AssertToolCalls(t, rt, id, "delegate_to_research")
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventToolResult && (ev.IsError || ev.Output != "three sources") {
			t.Errorf("tool result = %+v", ev)
		}
	}
	// The orchestrator was offered the remote agent as a tool, with the
	// description of the a2a_agents entry; the writer with its handoff's.
	var descs []string
	m.mu.Lock()
	for _, r := range m.reqs {
		for _, d := range r.Tools {
			if d.Name == "delegate_to_research" {
				descs = append(descs, r.Agent+": "+d.Description)
			}
		}
	}
	m.mu.Unlock()
	if len(descs) == 0 || descs[0] != "report: Finds sources" {
		t.Errorf("offered = %q", descs)
	}
	var writer *swarm.Agent
	for _, ag := range rt.Agents() {
		if ag.Name == "writer" {
			writer = ag
		}
	}
	if writer == nil || len(writer.Tools) != 1 || writer.Tools[0].Description() != "Ask the research service" || len(writer.Handoffs) != 0 {
		t.Errorf("writer = %+v", writer)
	}
}

func TestA2AAgentsBadInput(t *testing.T) {
	t.Setenv("SET_TOKEN", "x")
	for _, tc := range []struct{ name, yaml, want string }{
		{"not a mapping", `a2a_agents: [x]`, "a2a_agents: want a mapping"},
		{"missing url", "a2a_agents:\n  r: {description: d}", "missing url"},
		{"bad url", "a2a_agents:\n  r: {url: ftp://x}", `url "ftp://x"`},
		{"url not a string", "a2a_agents:\n  r: {url: [1]}", "want a string"},
		{"unknown field", "a2a_agents:\n  r: {url: http://x, token: abc}", `unknown field "token"`},
		{"unset token", "a2a_agents:\n  r: {url: http://x, token_env: SURELY_UNSET_VAR}", "SURELY_UNSET_VAR is not set"},
		{"bad name", "a2a_agents:\n  r r: {url: http://x}", "may contain only"},
		{"long name", "a2a_agents:\n  " + strings.Repeat("r", 60) + ": {url: http://x}", "longer than"},
		{"agent's name", "a2a_agents:\n  w: {url: http://x}\nagents:\n  w: {instructions: i}", "already used by the agent"},
		{"swarm's name", "a2a_agents:\n  s: {url: http://x}\nswarms:\n  s: {instructions: i}", "already used by the swarm"},
		{"undeclared handoff", "a2a_agents:\n  r: {url: http://x}\nswarms:\n  s: {handoffs: [q]}", `unknown agent "q"`},
		{"listed twice", "a2a_agents:\n  r: {url: http://x}\nswarms:\n  s: {handoffs: [r, r]}", "listed twice"},
	} {
		_, err := config.Parse([]byte("version: 1\n"+tc.yaml+"\n"), "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	// A broken entry is reported once, where it is defined, not again at
	// each handoff naming it.
	_, err := config.Parse([]byte("version: 1\na2a_agents:\n  r: {url: ftp://x}\nswarms:\n  s: {handoffs: [r]}\n"), "")
	if err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("broken entry: %v", err)
	}
	// A token from a set variable is fine.
	if _, err := config.Parse([]byte("version: 1\na2a_agents:\n  r: {url: http://x, token_env: SET_TOKEN}\n"), ""); err != nil {
		t.Errorf("valid entry: %v", err)
	}
}

// recorder keeps the requests a model is sent.
type recorder struct {
	model.Model
	mu   sync.Mutex
	reqs []model.Request
}

func (r *recorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, *req)
	r.mu.Unlock()
	return r.Model.Generate(ctx, req)
}
