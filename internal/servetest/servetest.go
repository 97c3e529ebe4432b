// Package servetest runs the swarm command as a real process for tests of
// the protocols it serves: `swarm serve` on a loopback port, with the
// server's own middleware in front of every handler, as users run it.
package servetest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary builds the swarm command once per test process and returns its
// path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		_, here, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(here), "..", "..")
		dir, err := os.MkdirTemp("", "swarm-bin")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "swarm")
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/swarm")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build ./cmd/swarm: " + e.err.Error() + "\n" + e.out }

// Process is a running `swarm serve`.
type Process struct {
	// URL is the server's base URL, such as http://127.0.0.1:41234.
	URL string
	// Cmd is the process's command; signal it through Cmd.Process.
	Cmd *exec.Cmd
	// Exited is closed once the process has exited.
	Exited chan struct{}

	mu     sync.Mutex
	stderr bytes.Buffer
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// Serve starts `swarm serve --addr 127.0.0.1:0` in dir (which holds the
// swarm.yaml) with env added to the environment (the store defaults to
// memory: and the model to the file's), and waits for its address. The
// process is killed when the test ends.
func Serve(t testing.TB, dir string, env []string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(Binary(t), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "SWARM_STORE=memory:", "SWARM_MODEL=", "NO_COLOR=1"), env...)
	return Start(t, cmd, nil)
}

// Start starts cmd, a prepared `swarm serve` command that listens on a
// port of its choice, and waits up to a minute for it to print its
// address. Each line the process writes on stderr is kept (see Log) and
// handed to onLine, if not nil, as it comes. The process is killed when
// the test ends.
func Start(t testing.TB, cmd *exec.Cmd, onLine func(string)) *Process {
	t.Helper()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd, Exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if onLine != nil {
				onLine(sc.Text())
			}
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		close(addr)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.Exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.Exited
	})
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("swarm serve exited: %s", p.Log())
		}
		p.URL = a
	case <-timer.C:
		t.Fatalf("swarm serve did not print its address within a minute: %s", p.Log())
	}
	return p
}

// Log returns what the process has written on stderr so far.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}
