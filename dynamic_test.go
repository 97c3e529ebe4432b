package swarm_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// changing is a tool set whose content the test changes between model
// calls.
type changing struct {
	mu    sync.Mutex
	tools []swarm.Tool
}

func (c *changing) set(ts ...swarm.Tool) { c.mu.Lock(); c.tools = ts; c.mu.Unlock() }
func (c *changing) Tools(context.Context) ([]swarm.Tool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.tools), nil
}

type empty struct{}

func echoTool(name string) swarm.Tool {
	return swarm.NewTool(name, "echoes", func(ctx context.Context, _ empty) (string, error) { return name + " ran", nil })
}

// TestDynamicTools: a dynamic tool set is resolved at every model call:
// a tool added between calls is offered at the next one, a removed tool
// is not, a static tool's name wins, a call runs the tool offered at the
// model call that asked for it, and a call to a tool not offered is an
// unknown tool to the model.
func TestDynamicTools(t *testing.T) {
	set := &changing{}
	set.set(echoTool("alpha"), echoTool("local"))
	var offered [][]string
	var mu sync.Mutex
	step := 0
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		var names []string
		for _, d := range req.Tools {
			names = append(names, d.Name)
		}
		mu.Lock()
		defer mu.Unlock()
		offered = append(offered, names)
		step++
		call := func(name string) *model.Response {
			return &model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: name, Name: name, Arguments: json.RawMessage(`{}`)}}}}
		}
		switch step {
		case 1:
			set.set(echoTool("alpha"), echoTool("beta"))
			return call("alpha"), nil
		case 2:
			set.set(echoTool("beta"))
			return call("alpha"), nil // offered at this call: it runs
		case 3:
			return call("alpha"), nil // not offered any more
		default:
			return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "done"}}, nil
		}
	})
	rt, err := swarm.New(swarm.Config{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sw := swarm.Define[string, string]("dyn", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{echoTool("local"), swarm.DynamicTools("set", set)}}
	})
	if err := rt.Register(sw); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, run, err := sw.Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.(swarm.Completed[string]); !ok {
		t.Fatalf("result %#v", res)
	}
	own := func(names []string) string {
		return strings.Join(slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "pause" || n == "fail" || n == "complete" }), " ")
	}
	if got := []string{own(offered[0]), own(offered[1]), own(offered[2]), own(offered[3])}; !slices.Equal(got, []string{"local alpha", "local alpha beta", "local beta", "local beta"}) {
		t.Fatalf("offered %q", got)
	}
	evs, err := rt.History(ctx, run.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, ev := range evs {
		if ev.Type == swarm.EventToolResult {
			outs = append(outs, ev.Output)
		}
	}
	if len(outs) != 3 || outs[0] != "alpha ran" || outs[1] != "alpha ran" || !strings.Contains(outs[2], `unknown tool "alpha"`) {
		t.Fatalf("tool results %q", outs)
	}
}

// TestUnknownToolListsTheOffer: the error result of a call to a tool the
// agent does not have lists exactly the tools of the request it answered,
// the dynamic (network) ones included.
func TestUnknownToolListsTheOffer(t *testing.T) {
	set := &changing{}
	set.set(echoTool("net_weather"))
	var mu sync.Mutex
	var offered []string
	m := scripted.New(scripted.Script{"dyn": {
		scripted.Tools(scripted.CallTool("no_such_tool", nil)),
		scripted.Text("done"),
	}})
	spy := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		mu.Lock()
		if req.Call == 0 {
			for _, d := range req.Tools {
				offered = append(offered, d.Name)
			}
		}
		mu.Unlock()
		return m.Generate(ctx, req)
	})
	rt, err := swarm.New(swarm.Config{Model: spy})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sw := swarm.Define[string, string]("dyn", "", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{echoTool("local"), swarm.DynamicTools("network", set)}}
	})
	if err := rt.Register(sw); err != nil {
		t.Fatal(err)
	}
	ctx := swarmtest.Context(t)
	_, run, err := sw.Run(ctx, rt, "go")
	if err != nil {
		t.Fatal(err)
	}
	var out string
	for _, ev := range swarmtest.Events(t, rt, run.ID()) {
		if ev.Type == swarm.EventToolResult {
			out = ev.Output
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(offered, "net_weather") {
		t.Fatalf("offered %q, want the dynamic tool among them", offered)
	}
	want := `error: unknown tool "no_such_tool"; the available tools are: ` + strings.Join(offered, ", ")
	if out != want {
		t.Fatalf("tool result %q\nwant %q", out, want)
	}
}
