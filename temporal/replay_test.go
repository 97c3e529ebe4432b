package temporal_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/temporal"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/worker"
)

var update = flag.Bool("update", false, "record the workflow histories of testdata/replay anew")

// scenario is a run of a supported kind whose workflow histories the
// replay test keeps.
type scenario struct {
	name string
	defs func() ([]swarm.Definition, model.Model)
	opts temporal.Options
	// drive runs it and returns the ids of the workflows to keep.
	drive func(t *testing.T, v *env) []string
}

func scenarios() []scenario {
	one := func(def swarm.Definition, m *counting) ([]swarm.Definition, model.Model) {
		return []swarm.Definition{def}, m
	}
	runs := func(swarmID string, input any) func(t *testing.T, v *env) []string {
		return func(t *testing.T, v *env) []string {
			id, out := v.run(t, swarmID, input)
			if out.Status != "completed" {
				t.Fatalf("outcome %+v", out)
			}
			return []string{id}
		}
	}
	return []scenario{
		{name: "loop", defs: func() ([]swarm.Definition, model.Model) { return one(calc()) }, drive: runs("calc", "2+3?")},
		{name: "workflow", defs: func() ([]swarm.Definition, model.Model) { return one(tagline()) }, drive: runs("tagline", "a solar kettle")},
		{name: "adaptive", defs: func() ([]swarm.Definition, model.Model) { return one(research()) }, drive: runs("research", "durable execution")},
		{name: "child", defs: func() ([]swarm.Definition, model.Model) {
			par, child, m := family()
			return []swarm.Definition{par, child}, m
		}, drive: func(t *testing.T, v *env) []string {
			ids := runs("parent", "x")(t, v)
			return append(ids, ids[0]+".ask-child")
		}},
		{name: "await", defs: func() ([]swarm.Definition, model.Model) {
			return []swarm.Definition{askSwarm()}, scripted.New(nil)
		}, drive: func(t *testing.T, v *env) []string {
			ctx, id := v.asked(t)
			if err := v.e.Resume(ctx, id, "yes"); err != nil {
				t.Fatal(err)
			}
			if out, err := v.e.Wait(ctx, id); err != nil || out.Status != "completed" {
				t.Fatalf("outcome %+v, %v", out, err)
			}
			return []string{id}
		}},
		{name: "stop", defs: func() ([]swarm.Definition, model.Model) {
			return []swarm.Definition{swarm.Define[string, string]("slow", "sleeps", func(string) swarm.Spec {
				return swarm.Spec{Strategy: strategy.Of(sleeper{})}
			})}, scripted.New(nil)
		}, drive: func(t *testing.T, v *env) []string {
			ctx := ctxFor(t)
			id, err := v.e.Start(ctx, "slow", "", json.RawMessage(`"x"`))
			if err != nil {
				t.Fatal(err)
			}
			if err := v.e.Stop(ctx, id, "enough"); err != nil {
				t.Fatal(err)
			}
			if out, err := v.e.Wait(ctx, id); err != nil || out.Status != "stopped" {
				t.Fatalf("outcome %+v, %v", out, err)
			}
			return []string{id}
		}},
		{name: "continued", defs: func() ([]swarm.Definition, model.Model) { return one(pinger(6)) }, opts: temporal.Options{HistoryLimit: 20},
			drive: runs("pinger", "go")},
	}
}

// TestReplay replays the recorded histories of every supported kind of
// run on the workflow's code as it is: a change that is not deterministic
// fails it. go test -run TestReplay -update records them anew (as
// <kind>-<n>.json); the histories of earlier versions of the workflow
// (<kind>-v<version>-<n>.json) are kept, so a change must stay able to
// replay runs in flight (workflow.GetVersion).
func TestReplay(t *testing.T) {
	dir := filepath.Join("testdata", "replay")
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			defs, m := sc.defs()
			if *update {
				v := newEnvWith(t, swarm.Config{Model: m}, sc.opts, defs...)
				old, _ := filepath.Glob(filepath.Join(dir, sc.name+"-[0-9]*.json"))
				for _, f := range old {
					_ = os.Remove(f)
				}
				for i, id := range sc.drive(t, v) {
					writeHistory(t, v, id, filepath.Join(dir, fmt.Sprintf("%s-%d.json", sc.name, i)))
				}
			}
			files, _ := filepath.Glob(filepath.Join(dir, sc.name+"-*.json"))
			if len(files) == 0 {
				t.Fatalf("no recorded history of %s: run go test -run TestReplay -update", sc.name)
			}
			rt, err := swarm.New(swarm.Config{Model: m})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			if err := rt.Register(defs...); err != nil {
				t.Fatal(err)
			}
			e, err := temporal.New(rt, sc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				r := worker.NewWorkflowReplayer()
				e.RegisterWorkflow(r)
				if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
					t.Errorf("%s: %v", f, err)
				}
			}
		})
	}
}

// writeHistory writes the history of workflow id (its last run) to path.
func writeHistory(t *testing.T, v *env, id, path string) {
	t.Helper()
	ctx := context.Background()
	it := v.c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: " "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pinger is the tool-calling loop calling a tool n times before it
// answers.
func pinger(n int) (swarm.Definition, *counting) {
	ping := swarm.NewTool("ping", "pings", func(context.Context, struct{}) (string, error) { return "pong", nil })
	def := swarm.Define[string, string]("pinger", "pings", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Ping.", Tools: []swarm.Tool{ping}}
	})
	var steps []scripted.Step
	for i := range n {
		steps = append(steps, scripted.Tools(scripted.ToolCall{ID: fmt.Sprint("c", i), Name: "ping"}))
	}
	steps = append(steps, scripted.Text("pinged "+strings.Repeat("!", n)))
	return def, &counting{m: scripted.New(scripted.Script{"pinger": steps})}
}

func TestContinueAsNew(t *testing.T) {
	def, m := pinger(6)
	v := newEnvWith(t, swarm.Config{Model: m}, temporal.Options{HistoryLimit: 20}, def)
	id, out := v.run(t, "pinger", "go")
	if out.Status != "completed" || string(out.Result) != `"pinged !!!!!!"` {
		t.Fatalf("outcome %+v", out)
	}
	if n := m.calls("pinger"); n != 7 {
		t.Errorf("%d model calls, want 7 (none asked again after a continuation)", n)
	}
	d, err := v.c.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	if d.WorkflowExecutionInfo.GetFirstRunId() == d.WorkflowExecutionInfo.GetExecution().GetRunId() {
		t.Error("the run did not continue as new")
	}
}
