package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const loadDefs = `version: 1
model: scripted:load.yaml
agents:
  helper: {description: helps, instructions: help}
swarms:
  quick:
    description: a handoff and an answer
    instructions: go
    handoffs: [helper]
`

// loadScript's model delay keeps every subscriber's stream open while its
// run works, so that the 200 streams are open at once.
const loadScript = `quick:
  - tool_calls: [{name: handoff_to_helper, arguments: {request: "x"}}]
    delay: 200ms
  - text: "done"
helper:
  - text: "ok"
`

// TestLoad starts 1,000 runs over HTTP against `swarm serve` (SQLite
// store, scripted model) with 200 concurrent SSE subscribers, each
// following its runs to completion, and reports throughput, start-to-
// completion latency and the server's peak memory. It runs only with
// SWARM_LOAD=1: go test -run TestLoad -v ./cmd/swarm
func TestLoad(t *testing.T) {
	if os.Getenv("SWARM_LOAD") != "1" {
		t.Skip("set SWARM_LOAD=1 to run the load test")
	}
	const runs, subscribers = 1000, 200
	dir := t.TempDir()
	for name, text := range map[string]string{"swarm.yaml": loadDefs, "load.yaml": loadScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := serve(t, ctx, dir, nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * subscribers, MaxConnsPerHost: 0}}

	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  []string
		peakOpen  int
		open      int
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	follow := func(n int) {
		t0 := time.Now()
		req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/v1/swarms/quick/runs",
			strings.NewReader(fmt.Sprintf(`{"input": "load %d", "id": "load-%d"}`, n, n)))
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			fail("start %d: %v", n, err)
			return
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 201 {
			fail("start %d: %d", n, res.StatusCode)
			return
		}
		req, _ = http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/runs/load-"+strconv.Itoa(n)+"/events", nil)
		res, err = client.Do(req)
		if err != nil {
			fail("events %d: %v", n, err)
			return
		}
		defer res.Body.Close()
		mu.Lock()
		open++
		peakOpen = max(peakOpen, open)
		mu.Unlock()
		defer func() {
			mu.Lock()
			open--
			mu.Unlock()
		}()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if sc.Text() == "event: completed" {
				mu.Lock()
				latencies = append(latencies, time.Since(t0))
				mu.Unlock()
				return
			}
		}
		fail("run %d: stream ended without completion: %v", n, sc.Err())
	}

	start := time.Now()
	var wg sync.WaitGroup
	for w := range subscribers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < runs; i += subscribers {
				follow(i)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	hwm, rss := procMemory(t, s.Cmd.Process.Pid)
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	<-s.Exited

	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), failures[0])
	}
	slices.Sort(latencies)
	pct := func(p float64) time.Duration { return latencies[int(p*float64(len(latencies)-1))] }
	t.Logf("%d runs, %d concurrent SSE subscribers (peak %d open streams), SQLite store, scripted model with a 200ms step", len(latencies), subscribers, peakOpen)
	t.Logf("wall %s, throughput %.0f runs/s", elapsed.Round(time.Millisecond), float64(len(latencies))/elapsed.Seconds())
	t.Logf("start-to-completion latency p50 %s, p99 %s, max %s", pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), latencies[len(latencies)-1].Round(time.Microsecond))
	t.Logf("server peak memory VmHWM %s, VmRSS at end %s", hwm, rss)
}

// procMemory reads a process's peak and current resident memory.
func procMemory(t *testing.T, pid int) (hwm, rss string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Logf("memory: %v", err)
		return "?", "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			hwm = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			rss = strings.TrimSpace(v)
		}
	}
	return hwm, rss
}
