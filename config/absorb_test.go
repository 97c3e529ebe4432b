package config_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/config"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

func init() {
	absorb.Provide(absorb.Provider{ID: "configtest.greeter", Description: "Greets", Build: func() *swarm.Agent {
		return &swarm.Agent{Instructions: "Greet."}
	}})
}

// TestAbsorbInYAML: a swarm with absorb: all gets every agent of the file
// and every provided agent as tools, with the skills and typed inputs the
// file declares; an agent absorbs a list naming a provided agent by its
// provider id.
func TestAbsorbInYAML(t *testing.T) {
	f, err := config.Parse([]byte(`
version: 1
agents:
  factor:
    description: Factors integers
    instructions: Factor.
    skills:
      factor:
        description: the prime factors of n
        input: {type: object, properties: {n: {type: integer}}, required: [n]}
  fib:
    description: Fibonacci numbers
    instructions: Fib.
    absorb: [configtest.greeter]
swarms:
  captain:
    instructions: Route.
    absorb: all
`), "")
	if err != nil {
		t.Fatal(err)
	}
	infos := f.Agents()
	if len(infos) != 2 || infos[0].Skills[0].Name != "factor" || !strings.Contains(string(infos[0].Skills[0].Input.Schema()), `"n"`) ||
		!slices.Equal(infos[1].Absorbs, []string{"configtest.greeter"}) {
		t.Fatalf("agents %+v", infos)
	}
	m := scripted.New(scripted.Script{
		"captain": {
			scripted.Tools(scripted.CallTool("factor", map[string]any{"n": "thirty"})),
			scripted.Tools(scripted.CallTool("factor", map[string]any{"n": 30}), scripted.CallTool("greeter", map[string]any{"request": "hi"})),
			scripted.Text("done"),
		},
		"factor":  {scripted.Text("2, 3, 5")},
		"greeter": {scripted.Text("hello")},
	})
	rt, id := runFile(t, f, m, "captain")
	// The call with invalid arguments is no delegation: the model gets
	// the error as the tool's result, and the sibling never runs.
	var got []string
	invalid := 0
	for _, ev := range swarmtest.Events(t, rt, id) {
		switch {
		case ev.Type == swarm.EventHandoffReturned:
			got = append(got, ev.Target+": "+ev.Output)
		case ev.Type == swarm.EventToolResult && ev.Tool == "factor" && strings.Contains(ev.Output, "invalid arguments"):
			invalid++
		}
	}
	slices.Sort(got)
	if len(got) != 2 || got[0] != "factor: 2, 3, 5" || got[1] != "greeter: hello" || invalid != 1 {
		t.Fatalf("delegations %q, invalid calls answered with an error %d", got, invalid)
	}

	// A provided agent whose name is taken by an agent of the file.
	_, err = config.Parse([]byte("version: 1\nagents:\n  greeter: {}\n  a:\n    absorb: all\n"), "")
	var ce *config.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `the agent "greeter" of this file has the name of an agent provided`) {
		t.Errorf("name clash: %v", err)
	}
	// A skill input that is not an object is refused when registered.
	f, err = config.Parse([]byte("version: 1\nagents:\n  n:\n    skills: {count: {input: {type: integer}}}\n  a:\n    absorb: [n]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Register(rt); !errors.Is(err, absorb.ErrIncompatible) {
		t.Errorf("integer input: %v", err)
	}
}

// TestAbsorbRemoteInYAML: a swarm absorbs an a2a_agents entry and an
// mcp_servers entry by name; each gives the tools a local agent would.
func TestAbsorbRemoteInYAML(t *testing.T) {
	remoteRT, _ := swarmtest.NewRuntime(t, scripted.Script{"researcher": {scripted.Text("three sources")}},
		swarm.Define[string, string]("researcher", "Finds sources", nil))
	h, err := a2a.NewHandler(remoteRT, a2a.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	t.Setenv("CALC_KEY", "secret")
	f, err := config.Parse([]byte(`
version: 1
a2a_agents:
  research:
    url: `+srv.URL+`/a2a/researcher
    description: Finds sources
mcp_servers:
  calc:
    url: `+calc(t)+`
    headers: {X-Key: "${CALC_KEY}"}
swarms:
  desk:
    instructions: Route.
    absorb: [research, calc]
`), "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := scripted.New(scripted.Script{"desk": {
		scripted.Tools(
			scripted.CallTool("research", map[string]any{"request": "bees"}),
			scripted.CallTool("calc__add", map[string]any{"a": 2, "b": 3}),
		),
		scripted.Text("done"),
	}})
	rt, id := runFile(t, f, m, "desk")
	got := map[string]string{}
	for _, ev := range swarmtest.Events(t, rt, id) {
		if ev.Type == swarm.EventToolResult {
			got[ev.Tool] = ev.Output
		}
	}
	if got["research"] != "three sources" || got["calc__add"] != "5" {
		t.Fatalf("results %v", got)
	}
}

// runFile registers f with a new runtime on model m, runs swarm id on "go"
// and returns the runtime and the completed run's id.
func runFile(t *testing.T, f *config.File, m *scripted.Model, id string) (*swarm.Runtime, string) {
	t.Helper()
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if err := f.Register(rt); err != nil {
		t.Fatal(err)
	}
	ctx := swarmtest.Context(t)
	runID, err := rt.Start(ctx, id, []byte(`"go"`))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, runID); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("%+v %v", st, err)
	}
	return rt, runID
}

// TestAbsorbProvidedByID: two provided agents sharing a name ("coder") are
// told apart by their provider ids: a list naming one by id absorbs that
// one; naming them by agent name, or absorb: all, is an error naming both
// ids. The providers are registered in a process of the test's own, so
// that the other tests of the package do not see them.
func TestAbsorbProvidedByID(t *testing.T) {
	if os.Getenv("SWARM_CONFIGTEST_CODERS") != "1" {
		ctx := swarmtest.Context(t)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAbsorbProvidedByID$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SWARM_CONFIGTEST_CODERS=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	for _, ns := range []string{"configone", "configtwo"} {
		absorb.Provide(absorb.Provider{ID: ns + ".coder", Build: func() *swarm.Agent { return &swarm.Agent{Instructions: "I am " + ns + "."} }})
	}
	f, err := config.Parse([]byte("version: 1\nswarms:\n  desk:\n    instructions: Route.\n    absorb: [configtwo.coder]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	var system []string
	m := scripted.New(scripted.Script{
		"desk":  {scripted.Tools(scripted.CallTool("coder", map[string]any{"request": "code"})), scripted.Text("done")},
		"coder": {scripted.Text("coded")},
	})
	rec := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if req.Agent == "coder" {
			system = append(system, req.System)
		}
		return m.Generate(ctx, req)
	})
	rt, err := swarm.New(swarm.Config{Store: memory.New(), Model: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := f.Register(rt); err != nil {
		t.Fatalf("absorb: [configtwo.coder]: %v", err)
	}
	ctx := swarmtest.Context(t)
	id, err := rt.Start(ctx, "desk", []byte(`"go"`))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("%+v %v", st, err)
	}
	if !slices.Equal(system, []string{"I am configtwo."}) {
		t.Errorf("the coder asked had the instructions %q; want those of configtwo.coder", system)
	}

	for _, absorb := range []string{"[coder]", "all"} {
		_, err := config.Parse([]byte("version: 1\nswarms:\n  desk:\n    absorb: "+absorb+"\n"), "")
		if err == nil || !strings.Contains(err.Error(), "configone.coder") || !strings.Contains(err.Error(), "configtwo.coder") {
			t.Errorf("absorb: %s with two provided agents named coder: %v; want an error naming both provider ids", absorb, err)
		}
	}
}

// TestAbsorbProvidedOfOwnName: a swarm naming, by provider id, a provided
// agent of its own name is refused (it would absorb itself), not silently
// given nothing.
func TestAbsorbProvidedOfOwnName(t *testing.T) {
	_, err := config.Parse([]byte("version: 1\nswarms:\n  greeter:\n    instructions: Route.\n    absorb: [configtest.greeter]\n"), "")
	var ce *config.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "cannot absorb an agent of its own name") {
		t.Errorf("swarm greeter absorbing configtest.greeter: %v", err)
	}
}
