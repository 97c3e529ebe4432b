// Command evalbench measures an eval run of a large set on scripted
// models: a swarm under test that calls a tool and answers (two model
// calls a case), and a judge scoring a rubric per case (one more).
//
// Run it from the repository's root:
//
//	go run ./eval/internal/evalbench -cases 1000
//	go run ./eval/internal/evalbench -cases 1000 -kill 0.5
//
// The first command runs the set once in this process and prints cases
// per second, the peak resident memory and the Go heap. The second runs
// it in a child process on a SQLite file, kills it with SIGKILL once half
// of the cases have finished (as its journal shows), then runs the same
// command in a second child, which continues the eval run, and prints
// the time and the model calls the second child needed to finish. With
// -store a PostgreSQL URL, the store is that database instead (it must
// be empty of eval runs of this set).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/eval"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"

	_ "github.com/swarmrt/swarm/store/postgres"
	_ "github.com/swarmrt/swarm/store/sqlite"
)

func main() {
	if err := bench(); err != nil {
		fmt.Fprintln(os.Stderr, "evalbench:", err)
		os.Exit(1)
	}
}

func bench() error {
	cases := flag.Int("cases", 1000, "cases in the set")
	parallel := flag.Int("parallel", 16, "cases at once")
	kill := flag.Float64("kill", 0, "kill the run with SIGKILL when this share of cases has finished (0: no kill)")
	storeURL := flag.String("store", "", "store URL (default: a SQLite file in a temporary directory)")
	child := flag.Bool("child", false, "run the set in this process and print its figures as JSON (used by -kill)")
	flag.Parse()
	ctx := context.Background()
	url := *storeURL
	if url == "" && !*child {
		dir, err := os.MkdirTemp("", "evalbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		url = "sqlite:" + filepath.Join(dir, "runs.db")
	}
	switch {
	case *child:
		return runChild(ctx, url, *cases, *parallel)
	case *kill > 0:
		return killAndRecover(ctx, url, *cases, *parallel, *kill)
	}
	return once(ctx, url, *cases, *parallel)
}

// figures are what a run in one process measured.
type figures struct {
	Cases      int     `json:"cases"`
	Seconds    float64 `json:"seconds"`
	ModelCalls int64   `json:"model_calls"`
	JudgeCalls int64   `json:"judge_calls"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	HeapMiB    float64 `json:"heap_mib"`
	Passed     int     `json:"passed"`
	// Called are the cases whose run's model or whose judge this process
	// called, by ID.
	Called []string `json:"called,omitempty"`
}

func once(ctx context.Context, url string, cases, parallel int) error {
	f, err := run(ctx, url, cases, parallel)
	if err != nil {
		return err
	}
	fmt.Printf("%d cases with a judge each in %.2fs: %.1f cases/s; %d model calls (%d by the judge); peak RSS %.0f MiB, Go heap %.0f MiB; %d passed\n",
		f.Cases, f.Seconds, float64(f.Cases)/f.Seconds, f.ModelCalls, f.JudgeCalls, f.PeakRSSMiB, f.HeapMiB, f.Passed)
	return nil
}

// runChild runs the set and prints its figures as JSON.
func runChild(ctx context.Context, url string, cases, parallel int) error {
	f, err := run(ctx, url, cases, parallel)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(f)
}

// lease is the runtime's lease: a run whose process died is taken over
// this long after its last renewal.
const lease = 2 * time.Second

// run runs (or continues) the eval run of the set on the store at url.
func run(ctx context.Context, url string, cases, parallel int) (*figures, error) {
	st, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var calls, judged atomic.Int64
	var mu sync.Mutex
	called := map[string]bool{}
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		calls.Add(1)
		mu.Lock()
		called[caseOf(req)] = true
		mu.Unlock()
		text := ""
		switch {
		case req.Agent == "judge":
			judged.Add(1)
			text = `{"score": 1, "label": "pass", "explanation": "The answer says where the order is."}`
		case req.Call == 0:
			return &model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "lookup_order", Arguments: json.RawMessage(`{"id":"42"}`)}}},
				Usage: model.Usage{InputTokens: 120, OutputTokens: 12}}, nil
		default:
			text = "Order 42 has shipped."
		}
		return &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: text}, Usage: model.Usage{InputTokens: 150, OutputTokens: 20}}, nil
	})
	rt, err := swarm.New(swarm.Config{Store: st, Model: m, Lease: lease, PollInterval: 20 * time.Millisecond, MaxParallel: parallel})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	lookup := swarm.NewTool("lookup_order", "Finds an order", func(ctx context.Context, in struct {
		ID string `json:"id"`
	}) (string, error) {
		return "order " + in.ID + ": shipped", nil
	})
	support := swarm.Define[string, string]("support", "Answers customers", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Help the customer.", Tools: []swarm.Tool{lookup}}
	})
	if err := rt.Register(support); err != nil {
		return nil, err
	}
	if err := rt.RegisterAgent(&swarm.Agent{Name: "judge", Instructions: "You judge answers."}); err != nil {
		return nil, err
	}
	if err := eval.Define(rt, eval.Options{}); err != nil {
		return nil, err
	}
	start := time.Now()
	rep, err := eval.Run(ctx, rt, set(cases, parallel), eval.RunOptions{Config: "bench"})
	if err != nil {
		return nil, err
	}
	f := &figures{Cases: len(rep.Cases), Seconds: time.Since(start).Seconds(), ModelCalls: calls.Load(), JudgeCalls: judged.Load(), Passed: rep.Passed}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.HeapMiB = float64(ms.HeapInuse) / (1 << 20)
	f.PeakRSSMiB = peakRSS()
	f.Called = slices.Sorted(maps.Keys(called))
	return f, nil
}

// caseNumber finds a case's number in the judge's question.
var caseNumber = regexp.MustCompile(`Where is order 42\? \((\d+)\)`)

// caseOf is the ID of the case a model request is for: the case's own
// run's, or the case whose input the judge is asked about.
func caseOf(req *model.Request) string {
	if _, id, ok := strings.Cut(req.RunID, ".case."); ok {
		return id
	}
	for _, m := range req.Messages {
		if n := caseNumber.FindStringSubmatch(m.Content); n != nil {
			return "case-" + n[1]
		}
	}
	return "?"
}

// set is the benchmark's set: cases with an output, a trajectory and a
// rubric for the judge.
func set(n, parallel int) *eval.Set {
	s := &eval.Set{Name: "bench", Swarm: "support", Judge: "judge", Parallel: parallel}
	for i := range n {
		s.Cases = append(s.Cases, eval.Case{ID: "case-" + strconv.Itoa(i), Input: fmt.Sprintf("Where is order 42? (%d)", i), Expect: eval.Expect{
			Output:     &eval.Output{Contains: []string{"shipped"}},
			Trajectory: &eval.Trajectory{Calls: []eval.Call{{Name: "lookup_order", Args: map[string]any{"id": "42"}}}},
			Rubrics:    []eval.Rubric{{Name: "helpful", Criteria: "The answer says where the order is."}},
		}})
	}
	return s
}

// peakRSS is the process's peak resident memory in MiB (Linux), 0 when
// unknown.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// killAndRecover runs the set in a child process, kills it with SIGKILL
// once share of its cases have finished, and finishes it in a second
// child.
func killAndRecover(ctx context.Context, url string, cases, parallel int, share float64) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"-child", "-store", url, "-cases", strconv.Itoa(cases), "-parallel", strconv.Itoa(parallel)}
	first := exec.CommandContext(ctx, self, args...)
	first.Stderr = os.Stderr
	began := time.Now()
	if err := first.Start(); err != nil {
		return err
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	want := int(float64(cases) * share)
	var done []string
	for len(done) < want {
		time.Sleep(20 * time.Millisecond)
		if done, err = finished(ctx, st); err != nil {
			return err
		}
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	_ = first.Wait()
	killedAt := time.Since(began)
	if done, err = finished(ctx, st); err != nil {
		return err
	}
	second := exec.CommandContext(ctx, self, args...)
	second.Stderr = os.Stderr
	t0 := time.Now()
	out, err := second.Output()
	if err != nil {
		return fmt.Errorf("second process: %w", err)
	}
	var f figures
	if err := json.Unmarshal(out, &f); err != nil {
		return fmt.Errorf("second process: %w: %s", err, out)
	}
	redone := 0
	for _, id := range done {
		if _, found := slices.BinarySearch(f.Called, id); found {
			redone++
		}
	}
	left := cases - len(done)
	fmt.Printf("killed (SIGKILL) after %.2fs with %d of %d cases finished; the second process finished the other %d in %.2fs (the lease, %s, included) with %d model calls (%d by the judge: %.2f a remaining case, at most 3); %d finished cases called again; %d passed\n",
		killedAt.Seconds(), len(done), cases, left, time.Since(t0).Seconds(), lease, f.ModelCalls, f.JudgeCalls, float64(f.ModelCalls)/float64(max(left, 1)), redone, f.Passed)
	if redone > 0 {
		return fmt.Errorf("%d finished cases were called again", redone)
	}
	return nil
}

// finished lists the cases whose result the eval run in st journaled.
func finished(ctx context.Context, st store.Store) ([]string, error) {
	runs, err := st.List(ctx, store.Filter{Swarm: eval.SwarmID})
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	recs, err := st.Read(ctx, runs[0].ID, 0, 0)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, r := range recs {
		if id, ok := strings.CutPrefix(r.Key, "case/"); ok && strings.HasSuffix(id, "/result") {
			out = append(out, strings.TrimSuffix(id, "/result"))
		}
	}
	return out, nil
}
