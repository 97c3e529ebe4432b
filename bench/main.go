// Command bench compares this runtime with CloudWeGo Eino on one workload:
// an orchestrator hands off once to a specialist agent, then answers (three
// model calls per run), through each framework's OpenAI provider against an
// OpenAI-compatible fake server on loopback (package fake).
//
// Run it from the repository's root:
//
//	go run ./bench                  # default size: a few minutes on 2 cores
//	go run ./bench -n 10000         # 10,000 concurrent runs
//
// It builds two drivers, this project's (bench/driver, on the memory store
// and on SQLite) and Eino's (bench/eino, a Go module of its own so that the
// project's module does not depend on Eino), and runs each of them as a
// child process for every measurement, interleaved, -reps times. It prints
// one table of medians, with the ratios to Eino.
//
// The driver protocol: a driver takes -url, -store, -runs, -warm and
// -concurrent, runs -warm runs one after another and then -runs runs (all
// at once with -concurrent), and prints one JSON line {"runs", "cpu_ns",
// "wall_ns"} about the measured runs.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/swarmrt/swarm/bench/fake"
)

// impl is one implementation under test.
type impl struct {
	name  string // column header
	bin   string // driver binary
	store string // -store flag
}

// sample is one measurement of one implementation.
type sample struct {
	cpuPerRound float64 // µs of CPU per model call, runs one after another
	bytesPerRun float64
	bytesBare   float64 // with the built-in tools off (Eino: the same)
	concCPU     float64 // µs of CPU per model call, runs all at once
	connsPerRun float64
	wall        float64 // s, runs all at once
	rssMB       float64 // peak RSS of the concurrent measurement's process
}

type options struct {
	seq, warm, n, reps int
	latency            time.Duration
	only               string
	profile            string
	memprofile         string
}

func main() {
	var o options
	flag.IntVar(&o.seq, "seq", 300, "runs one after another per CPU measurement")
	flag.IntVar(&o.warm, "warm", 30, "warm-up runs before each CPU measurement")
	flag.IntVar(&o.n, "n", 1000, "concurrent runs per concurrency measurement")
	flag.DurationVar(&o.latency, "latency", time.Second, "fake model latency in the concurrency measurement")
	flag.IntVar(&o.reps, "reps", 3, "measurements of each implementation (medians are reported)")
	flag.StringVar(&o.only, "only", "", "comma-separated subset of implementations: memory, sqlite, eino")
	flag.StringVar(&o.profile, "cpuprofile", "", "write CPU profiles of this project's driver (runs one after another) to this directory")
	flag.StringVar(&o.memprofile, "memprofile", "", "write heap profiles and peak memory statistics of this project's driver (concurrent runs) to this directory")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.seq <= 0 || o.n <= 0 || o.reps <= 0 || o.warm < 0 {
		return errors.New("-seq, -n and -reps must be positive, -warm not negative")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "swarm-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ours := filepath.Join(tmp, "swarm-driver")
	if err := build(ctx, root, "./bench/driver", ours); err != nil {
		return err
	}
	impls := []impl{{"swarm memory", ours, "memory"}, {"swarm sqlite", ours, "sqlite"}}
	eino := filepath.Join(tmp, "eino-driver")
	if err := build(ctx, filepath.Join(root, "bench", "eino"), ".", eino); err != nil {
		fmt.Fprintf(os.Stderr, "bench: cannot build the Eino driver, measuring without it: %v\n", err)
	} else {
		impls = append(impls, impl{"eino", eino, ""})
	}
	if o.only != "" {
		want := strings.Split(o.only, ",")
		impls = slices.DeleteFunc(impls, func(im impl) bool {
			return !slices.ContainsFunc(want, func(w string) bool { return strings.Contains(im.name, strings.TrimSpace(w)) })
		})
	}
	if len(impls) == 0 {
		return errors.New("-only selects no implementation")
	}
	samples := make(map[string][]sample, len(impls))
	for rep := range o.reps {
		// Interleave: every repetition measures each implementation once,
		// in a rotated order.
		for i := range impls {
			im := impls[(i+rep)%len(impls)]
			s, err := measure(ctx, im, o)
			if err != nil {
				return fmt.Errorf("%s: %w", im.name, err)
			}
			fmt.Fprintf(os.Stderr, "rep %d %-13s cpu/round %6.0f µs  bytes/run %5.0f  conc cpu/round %6.0f µs  conns/run %.2f  wall %.2f s  rss %.0f MB\n",
				rep+1, im.name, s.cpuPerRound, s.bytesPerRun, s.concCPU, s.connsPerRun, s.wall, s.rssMB)
			samples[im.name] = append(samples[im.name], s)
		}
	}
	printTable(os.Stdout, impls, samples, o)
	return nil
}

// measure runs one implementation's two measurements, each in a fresh
// process against a fresh fake server.
func measure(ctx context.Context, im impl, o options) (sample, error) {
	var s sample
	// CPU per round and bytes per run: runs one after another, no latency.
	args := []string{"-runs", fmt.Sprint(o.seq), "-warm", fmt.Sprint(o.warm)}
	if o.profile != "" && im.store != "" {
		args = append(args, "-cpuprofile", filepath.Join(o.profile, im.store+".pprof"))
	}
	res, counts, _, err := drive(ctx, im, 0, args...)
	if err != nil {
		return s, err
	}
	total := o.seq + o.warm
	if err := check(counts, total); err != nil {
		return s, err
	}
	s.cpuPerRound = float64(res.CPUNs) / 1e3 / float64(3*o.seq)
	s.bytesPerRun = float64(counts.Bytes) / float64(total)
	s.bytesBare = s.bytesPerRun
	if im.store != "" {
		const bare = 5
		_, counts, _, err := drive(ctx, im, 0, "-runs", fmt.Sprint(bare), "-warm", "0", "-builtins=false")
		if err != nil {
			return s, err
		}
		if err := check(counts, bare); err != nil {
			return s, err
		}
		s.bytesBare = float64(counts.Bytes) / bare
	}
	// Concurrency: n runs at once, each model call answered after latency.
	args = []string{"-runs", fmt.Sprint(o.n), "-warm", "0", "-concurrent"}
	if o.memprofile != "" && im.store != "" {
		args = append(args, "-memprofile", filepath.Join(o.memprofile, im.store+".heap"))
	}
	res, counts, rss, err := drive(ctx, im, o.latency, args...)
	if err != nil {
		return s, err
	}
	if err := check(counts, o.n); err != nil {
		return s, err
	}
	s.concCPU = float64(res.CPUNs) / 1e3 / float64(3*o.n)
	s.connsPerRun = float64(counts.Conns) / float64(o.n)
	s.wall = float64(res.WallNs) / 1e9
	s.rssMB = float64(rss) / 1024
	return s, nil
}

// check verifies that every run made the workload's three calls.
func check(c fake.Counts, runs int) error {
	if c.Bad > 0 || c.Requests != int64(3*runs) || c.Handoffs != int64(runs) {
		return fmt.Errorf("workload not followed: %d runs made %d requests (%d handoffs, %d undecodable); want %d and %d", runs, c.Requests, c.Handoffs, c.Bad, 3*runs, runs)
	}
	return nil
}

type result struct {
	Runs   int   `json:"runs"`
	CPUNs  int64 `json:"cpu_ns"`
	WallNs int64 `json:"wall_ns"`
}

// drive runs a driver process against a new fake server and returns its
// result, what the server counted and the process's peak RSS in KB.
func drive(ctx context.Context, im impl, latency time.Duration, args ...string) (result, fake.Counts, int64, error) {
	var res result
	srv, err := fake.Start(latency)
	if err != nil {
		return res, fake.Counts{}, 0, err
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, im.bin, append([]string{"-url", srv.URL, "-store", im.store}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return res, fake.Counts{}, 0, fmt.Errorf("driver: %w: %s", err, tail(errb.String()))
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, fake.Counts{}, 0, fmt.Errorf("driver output %q: %w", tail(out.String()), err)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss
	}
	return res, srv.Counts(), rss, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func printTable(w io.Writer, impls []impl, samples map[string][]sample, o options) {
	figures := []struct {
		name string
		get  func(sample) float64
		f    string
	}{
		{"CPU per model round, runs one after another (µs)", func(s sample) float64 { return s.cpuPerRound }, "%.0f"},
		{"bytes sent to the model per run", func(s sample) float64 { return s.bytesPerRun }, "%.0f"},
		{"bytes sent to the model per run, built-in tools off (Spec.NoBuiltins)", func(s sample) float64 { return s.bytesBare }, "%.0f"},
		{fmt.Sprintf("CPU per model round, %d concurrent runs (µs)", o.n), func(s sample) float64 { return s.concCPU }, "%.0f"},
		{fmt.Sprintf("TCP connections per run, %d concurrent", o.n), func(s sample) float64 { return s.connsPerRun }, "%.2f"},
		{fmt.Sprintf("wall, %d concurrent runs at %s per call (s)", o.n, o.latency), func(s sample) float64 { return s.wall }, "%.2f"},
		{fmt.Sprintf("peak RSS, %d concurrent runs (MB)", o.n), func(s sample) float64 { return s.rssMB }, "%.0f"},
	}
	_, hasEino := samples["eino"]
	head := "| figure |"
	sep := "| --- |"
	for _, im := range impls {
		head += " " + im.name + " |"
		sep += " ---: |"
	}
	if hasEino {
		for _, im := range impls {
			if im.name != "eino" {
				head += " " + strings.TrimPrefix(im.name, "swarm ") + " / eino |"
				sep += " ---: |"
			}
		}
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	fmt.Fprintf(bw, "\nmachine: %s, %d cores, %s %s/%s; medians of %d interleaved runs\n\n", cpuModel(), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, o.reps)
	fmt.Fprintln(bw, head)
	fmt.Fprintln(bw, sep)
	for _, f := range figures {
		line := "| " + f.name + " |"
		meds := map[string]float64{}
		for _, im := range impls {
			var xs []float64
			for _, s := range samples[im.name] {
				xs = append(xs, f.get(s))
			}
			meds[im.name] = median(xs)
			line += " " + fmt.Sprintf(f.f, meds[im.name]) + " |"
		}
		if hasEino {
			for _, im := range impls {
				if im.name != "eino" {
					line += fmt.Sprintf(" %.2f× |", meds[im.name]/meds["eino"])
				}
			}
		}
		fmt.Fprintln(bw, line)
	}
}

// cpuModel names the machine's processor, from /proc/cpuinfo where there
// is one.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}

// moduleRoot is the directory of the project's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run bench from the repository (go run ./bench)")
	}
	return filepath.Dir(mod), nil
}

// build builds the package pkg of the module in dir into out.
func build(ctx context.Context, dir, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %w: %s", pkg, dir, err, tail(string(b)))
	}
	return nil
}
