package temporal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/sqlite"
	"github.com/swarmrt/swarm/strategy"
	"github.com/swarmrt/swarm/temporal"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
)

// The crash test's worker: the test binary run again with these set.
const (
	envWorker = "SWARM_TEMPORAL_CRASH_WORKER" // the kill mode: tool, model or none
	envAddr   = "SWARM_TEMPORAL_CRASH_ADDR"
	envNS     = "SWARM_TEMPORAL_CRASH_NAMESPACE"
	envDB     = "SWARM_TEMPORAL_CRASH_DB"
	envLogs   = "SWARM_TEMPORAL_CRASH_LOGS"
	envKind   = "SWARM_TEMPORAL_CRASH_KIND"
)

// crashKind is a kind of run the crash test kills workers of.
type crashKind struct {
	def func() (swarm.Definition, model.Model)
	// result is the run's, calls its model calls and tools its tool
	// executions (-1: not counted).
	result       string
	calls, tools int
	// records is the number of executions of its Records' functions
	// (-1: not counted); answer, when set, answers its pause.
	records int
	answer  string
	// modes are the kill modes of its successive worker processes (see
	// crashWorker); "pause" starts a worker that the test kills once the
	// run waits at its pause, before answering it. Nil: the default.
	modes []string
}

var crashKinds = map[string]crashKind{
	"loop": {def: crashPinger, result: `"pinged"`, calls: 4, tools: 3, records: -1},
	"workflow": {def: func() (swarm.Definition, model.Model) {
		def, m := tagline()
		return def, m.m
	}, result: `"Boils water fast"`, calls: 2, tools: -1, records: -1},
	"adaptive": {def: func() (swarm.Definition, model.Model) {
		def, m := research()
		return def, m.m
	}, result: `"a short report"`, calls: 7, tools: -1, records: -1},
	// A user strategy: killed while it waits at its pause, answered on
	// the next worker, killed again between its model calls.
	"user": {def: crashUser, result: `"first|a0,a1|sure|second|third"`, calls: 3, tools: -1, records: 3,
		answer: "sure", modes: []string{"pause", "model", "none"}},
}

// recorder is a user strategy: it records a value, asks its model, records
// two values in parallel branches, waits for a human, then asks its model
// twice more.
type recorder struct{}

func (recorder) Drive(ctx context.Context, d *strategy.Driver) (json.RawMessage, error) {
	record := func(ctx context.Context, key, v string) (string, error) {
		raw, err := d.Record(ctx, key, "value", func(context.Context) (json.RawMessage, error) {
			appendLine("records.log", key)
			return json.Marshal(v)
		})
		if err != nil {
			return "", err
		}
		var s string
		err = json.Unmarshal(raw, &s)
		return s, err
	}
	ask := func(key string) (string, error) {
		return d.Ask(ctx, key, strategy.AskOptions{}, []model.Message{{Role: model.RoleUser, Content: key}})
	}
	if _, err := record(ctx, "seed", "s"); err != nil {
		return nil, err
	}
	first, err := ask("first")
	if err != nil {
		return nil, err
	}
	branches := make([]string, 2)
	if err := errors.Join(d.Parallel(ctx, 2, func(ctx context.Context, i int) error {
		var err error
		branches[i], err = record(ctx, fmt.Sprint("branch", i), fmt.Sprint("a", i))
		return err
	})...); err != nil {
		return nil, err
	}
	answer, err := d.Await(ctx, "human", strategy.Question{Reason: "go on?"})
	if err != nil {
		return nil, err
	}
	second, err := ask("second")
	if err != nil {
		return nil, err
	}
	third, err := ask("third")
	if err != nil {
		return nil, err
	}
	return json.Marshal(strings.Join([]string{first, strings.Join(branches, ","), answer, second, third}, "|"))
}

func crashUser() (swarm.Definition, model.Model) {
	def := swarm.Define[string, string]("recorder", "records, asks and waits", func(string) swarm.Spec {
		return swarm.Spec{Strategy: strategy.Of(recorder{})}
	})
	return def, scripted.New(scripted.Script{"recorder": {scripted.Text("first"), scripted.Text("second"), scripted.Text("third")}})
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(envWorker); mode != "" {
		if err := crashWorker(mode); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// appendLine appends line to the file name in the logs directory.
func appendLine(name, line string) {
	f, err := os.OpenFile(filepath.Join(os.Getenv(envLogs), name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		panic(err)
	}
}

func die() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }

// crashPinger is pinger(3) whose tool logs each execution.
func crashPinger() (swarm.Definition, model.Model) {
	ping := swarm.NewTool("ping", "pings", func(context.Context, struct{}) (string, error) {
		appendLine("tools.log", "ping")
		return "pong", nil
	})
	def := swarm.Define[string, string]("pinger", "pings", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Ping.", Tools: []swarm.Tool{ping}}
	})
	var steps []scripted.Step
	for i := range 3 {
		steps = append(steps, scripted.Tools(scripted.ToolCall{ID: fmt.Sprint("c", i), Name: "ping"}))
	}
	steps = append(steps, scripted.Text("pinged"))
	return def, scripted.New(scripted.Script{"pinger": steps})
}

// crashWorker runs a worker of the engine until it kills itself: mode
// "tool" right after a tool's result is journaled (inside the round's
// activity), "model" as a second model call of this process begins (after
// the activity of the first completed), "none" never.
func crashWorker(mode string) error {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, os.Getenv(envDB))
	if err != nil {
		return err
	}
	def, sm := crashKinds[os.Getenv(envKind)].def()
	var calls atomic.Int32
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if calls.Add(1) == 2 && mode == "model" {
			die()
		}
		appendLine("calls.log", req.Agent)
		return sm.Generate(ctx, req)
	})
	cfg := swarm.Config{Store: st, Model: m}
	if mode == "tool" {
		cfg.Hooks.OnToolUse = func(context.Context, swarm.Event) { die() }
	}
	rt, err := swarm.New(cfg)
	if err != nil {
		return err
	}
	if err := rt.Register(def); err != nil {
		return err
	}
	c, err := client.Dial(client.Options{HostPort: os.Getenv(envAddr), Namespace: os.Getenv(envNS)})
	if err != nil {
		return err
	}
	e, err := temporal.New(rt, temporal.Options{Client: c, TaskQueue: "swarm-crash", HeartbeatTimeout: 2 * time.Second})
	if err != nil {
		return err
	}
	w := worker.New(c, "swarm-crash", worker.Options{})
	e.Register(w)
	return w.Run(worker.InterruptCh())
}

// TestWorkerKilled kills the worker process (SIGKILL) inside a round's
// activity after its tool's result is journaled, and between activities as
// a model call begins, again and again; another worker process takes the
// run over each time. The run completes as without kills, no tool runs
// twice and no model call whose activity completed is asked again. A
// user strategy's worker is also killed while the run waits at its pause,
// and the next worker takes the answer; no recorded function runs again.
func TestWorkerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	for _, kind := range []string{"loop", "workflow", "adaptive", "user"} {
		t.Run(kind, func(t *testing.T) { killWorkers(t, kind) })
	}
}

func killWorkers(t *testing.T, kind string) {
	k := crashKinds[kind]
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	dir := t.TempDir()
	db, logs := filepath.Join(dir, "swarm.db"), filepath.Join(dir, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	// This process's runtime, on the same store, with its own workers:
	// they must never claim the run.
	def, m := k.def()
	rt, err := swarm.New(swarm.Config{Store: st, Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	c := ts.GetDefaultClient()
	e, err := temporal.New(rt, temporal.Options{Client: c, TaskQueue: "swarm-crash"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := e.Start(ctx, def.ID(), "", []byte(`"go"`))
	if err != nil {
		t.Fatal(err)
	}
	done := func() bool {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		return err == nil && d.WorkflowExecutionInfo.GetStatus() != enums.WORKFLOW_EXECUTION_STATUS_RUNNING
	}
	killed := 0
	var killedAt time.Time
	var killedSeq int64
	var takeovers []time.Duration
	modes := k.modes
	if modes == nil {
		modes = []string{"tool", "model", "tool", "model", "tool", "none"}
	}
	resumed := make(chan error, 1)
	answered := false
	for _, mode := range modes {
		if done() {
			break
		}
		workerMode := mode
		if mode == "pause" {
			workerMode = "none"
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWorker+"="+workerMode, envAddr+"="+ts.GetFrontendHostPort(), envNS+"="+ts.GetDefaultNamespace(),
			envDB+"="+db, envLogs+"="+logs, envKind+"="+kind)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		moved := !killedAt.IsZero()
	wait:
		for {
			if moved {
				// The time from the kill to the next record in the
				// journal: a new process started, connected, and took
				// the run over.
				if r, err := st.Get(ctx, id); err == nil && r.LastSeq > killedSeq {
					takeovers = append(takeovers, time.Since(killedAt))
					moved = false
				}
			}
			select {
			case err := <-exited:
				if ee, ok := err.(*exec.ExitError); ok && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
					killed++
					killedAt = time.Now()
					if r, err := st.Get(ctx, id); err == nil {
						killedSeq = r.LastSeq
					}
					break wait
				}
				t.Fatalf("worker (%s) exited: %v", mode, err)
			case <-time.After(100 * time.Millisecond):
				if k.answer != "" && !answered {
					if s, err := rt.Status(ctx, id); err == nil && s.State == swarm.StatePaused {
						if mode == "pause" {
							// Killed while the run waits: the next
							// worker takes the answer.
							_ = cmd.Process.Signal(syscall.SIGKILL)
							continue
						}
						answered = true
						go func() { resumed <- e.Resume(ctx, id, k.answer) }()
					}
				}
				if done() {
					_ = cmd.Process.Kill()
					<-exited
					break wait
				}
			case <-ctx.Done():
				_ = cmd.Process.Kill()
				t.Fatal("the run did not finish")
			}
		}
	}
	if answered {
		if err := <-resumed; err != nil {
			t.Fatal(err)
		}
	}
	out, err := e.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != "completed" || string(out.Result) != k.result {
		t.Fatalf("outcome %+v", out)
	}
	if killed < 1 {
		t.Errorf("no worker killed")
	}
	t.Logf("%d workers killed; from a kill to the next journal record: %v", killed, takeovers)
	evs, err := rt.History(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	responses := 0
	for _, ev := range evs {
		if ev.Type == swarm.EventModelResponse {
			responses++
		}
	}
	if n := lines(t, filepath.Join(logs, "calls.log")); n != responses || n != k.calls {
		t.Errorf("%d model calls for %d journaled responses, want %d each", n, responses, k.calls)
	}
	if n := lines(t, filepath.Join(logs, "tools.log")); k.tools >= 0 && n != k.tools {
		t.Errorf("%d tool executions, want %d", n, k.tools)
	}
	if n := lines(t, filepath.Join(logs, "records.log")); k.records >= 0 && n != k.records {
		t.Errorf("%d executions of recorded functions, want %d", n, k.records)
	}
}

func lines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for s := bufio.NewScanner(f); s.Scan(); {
		if strings.TrimSpace(s.Text()) != "" {
			n++
		}
	}
	return n
}
