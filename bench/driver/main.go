// Command driver runs the peer benchmark's workload on this project's
// runtime, for bench: an orchestrator hands off once to a specialist agent,
// then answers (three model calls per run), through the OpenAI provider
// (model/openai) against the benchmark's fake server.
//
// It runs -warm runs one after another, then -runs runs: one after another,
// or all at once with -concurrent, and prints one JSON line: the process CPU
// time and the wall time of the measured runs (see bench's driver protocol).
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/openai"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/store/sqlite"
)

// The workload's prompts, the same in every driver.
const (
	orchestratorPrompt = "You are the orchestrator. Delegate the user's question to the specialist, then answer the user with the specialist's answer."
	specialistPrompt   = "You are the specialist. Answer the question in one sentence."
	specialistDesc     = "A specialist who answers questions."
	question           = "What is the answer to the ultimate question?"
)

// result is the driver protocol's one output line.
type result struct {
	Runs   int   `json:"runs"`
	CPUNs  int64 `json:"cpu_ns"`
	WallNs int64 `json:"wall_ns"`
}

func main() {
	url := flag.String("url", "", "base URL of the fake model server")
	kind := flag.String("store", "memory", "store: memory or sqlite")
	runs := flag.Int("runs", 100, "measured runs")
	warm := flag.Int("warm", 10, "warm-up runs before measuring")
	concurrent := flag.Bool("concurrent", false, "start the measured runs all at once")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the measured runs to this file")
	builtins := flag.Bool("builtins", true, "offer the orchestrator the built-in tools (Spec.NoBuiltins when false)")
	memprofile := flag.String("memprofile", "", "with -concurrent, write to this file a heap profile taken when the most goroutines were alive, and the peak memory statistics to this file plus .txt")
	flag.Parse()
	if err := run(*url, *kind, *runs, *warm, *concurrent, *profile, *memprofile, *builtins); err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
}

func run(url, kind string, runs, warm int, concurrent bool, profile, memprofile string, builtins bool) error {
	if url == "" || runs <= 0 || warm < 0 {
		return errors.New("need -url, -runs > 0 and -warm >= 0")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var st store.Store
	switch kind {
	case "memory":
		st = memory.New()
	case "sqlite":
		dir, err := os.MkdirTemp("", "swarm-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		s, err := sqlite.Open(ctx, filepath.Join(dir, "bench.db"))
		if err != nil {
			return err
		}
		st = s
	default:
		return fmt.Errorf("unknown store %q", kind)
	}
	defer st.Close()
	m, err := openai.New(openai.WithBaseURL(url), openai.WithModel("gpt-4.1-mini"), openai.WithAPIKey("bench"))
	if err != nil {
		return err
	}
	rt, err := swarm.New(swarm.Config{Store: st, Model: m, PollInterval: time.Second})
	if err != nil {
		return err
	}
	defer rt.Close()
	specialist := &swarm.Agent{Name: "specialist", Description: specialistDesc, Instructions: specialistPrompt}
	def := swarm.Define[string, string]("orchestrator", "Answers questions with a specialist's help", func(string) swarm.Spec {
		return swarm.Spec{Instructions: orchestratorPrompt, Handoffs: []swarm.Handoff{swarm.ToAgent(specialist)}, NoBuiltins: !builtins}
	})
	if err := rt.Register(def); err != nil {
		return err
	}
	input, _ := json.Marshal(question)
	one := func() error {
		id, err := rt.Start(ctx, def.ID(), input)
		if err != nil {
			return err
		}
		s, err := rt.Wait(ctx, id)
		if err != nil {
			return err
		}
		if s.State != swarm.StateCompleted {
			return fmt.Errorf("run %s: %s %s", id, s.State, s.Reason)
		}
		return nil
	}
	for range warm {
		if err := one(); err != nil {
			return err
		}
	}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	cpu0, start := cpuTime(), time.Now()
	if concurrent {
		if memprofile != "" {
			stop := sampleMemory(memprofile)
			defer stop()
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		for range runs {
			wg.Go(func() {
				if err := one(); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if first != nil {
			return first
		}
	} else {
		for range runs {
			if err := one(); err != nil {
				return err
			}
		}
	}
	out := result{Runs: runs, WallNs: int64(time.Since(start)), CPUNs: int64(cpuTime() - cpu0)}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// sampleMemory samples the memory statistics every 100 ms until stop is
// called, keeping the peaks and a heap profile taken whenever the
// goroutines reached a new high (by a tenth); stop writes the profile to
// path and the peaks to path+".txt".
func sampleMemory(path string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	var peak struct{ goroutines, stack, heapInuse, heapLive, sys uint64 }
	var heap bytes.Buffer
	go func() {
		defer close(finished)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			g := uint64(goruntime.NumGoroutine())
			if g > peak.goroutines+peak.goroutines/10 {
				heap.Reset()
				_ = pprof.Lookup("heap").WriteTo(&heap, 0)
			}
			peak.goroutines = max(peak.goroutines, g)
			peak.stack = max(peak.stack, ms.StackInuse)
			peak.heapInuse = max(peak.heapInuse, ms.HeapInuse)
			peak.heapLive = max(peak.heapLive, ms.HeapAlloc)
			peak.sys = max(peak.sys, ms.Sys)
		}
	}()
	return func() {
		close(done)
		<-finished
		if err := os.WriteFile(path, heap.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "driver:", err)
		}
		const mb = 1 << 20
		txt := fmt.Sprintf("peak goroutines %d\npeak goroutine stacks %d MB\npeak heap in use %d MB\npeak heap allocated (live and not yet collected) %d MB\npeak memory from the OS %d MB\n",
			peak.goroutines, peak.stack/mb, peak.heapInuse/mb, peak.heapLive/mb, peak.sys/mb)
		if err := os.WriteFile(path+".txt", []byte(txt), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "driver:", err)
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
