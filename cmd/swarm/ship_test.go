package main_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVersionStamped: a release build stamps its version at link time
// (-ldflags -X), and swarm version names it even without VCS information.
func TestVersionStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "swarm")
	build := exec.Command("go", "build", "-buildvcs=false", "-o", bin,
		"-ldflags", "-X github.com/swarmrt/swarm/internal/cli.Version=v9.8.7-test", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil || !strings.HasPrefix(string(out), "swarm v9.8.7-test, go1.") {
			t.Errorf("swarm %v: %v, %q", args, err, out)
		}
	}
}

// TestHealthcheck: swarm healthcheck exits 0 against a serving node (its
// --addr given as serve's, an unspecified host checked on loopback) and
// non-zero when nothing listens.
func TestHealthcheck(t *testing.T) {
	dir := workdir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := serve(t, ctx, dir, nil)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--addr", u.Host}, {"--addr", "0.0.0.0:" + u.Port()}, {"--ready", "--addr", ":" + u.Port()}} {
		if r := swarmIn(t, dir, nil, "", append([]string{"healthcheck"}, args...)...); r.code != 0 || !strings.Contains(r.stdout, `"status":"`) {
			t.Errorf("healthcheck %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	exitsCleanly(t, s)
	if r := swarmIn(t, dir, nil, "", "healthcheck", "--addr", u.Host); r.code != 1 || !strings.Contains(r.stderr, "healthcheck") {
		t.Errorf("healthcheck of a stopped server: exit %d\n%s", r.code, r.stderr)
	}
	if r := swarmIn(t, dir, nil, "", "healthcheck", "--addr", "nonsense"); r.code != 2 {
		t.Errorf("healthcheck --addr nonsense: exit %d\n%s", r.code, r.stderr)
	}
}

// TestDrainNotReadyBeforeStop: on SIGTERM a node with --drain-delay turns
// not ready (/readyz 503 "draining") while it goes on serving (/healthz
// 200, the API answers), and then exits 0.
func TestDrainNotReadyBeforeStop(t *testing.T) {
	dir := workdir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := serve(t, ctx, dir, nil, "--drain-delay", "5s")
	if code := httpJSON(t, "GET", s.URL+"/readyz", "", nil); code != 200 {
		t.Fatalf("readyz before SIGTERM: %d", code)
	}
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(s.URL + "/readyz")
		if err != nil {
			t.Fatalf("readyz: %v: the node stopped serving before it was seen not ready\n%s", err, s.Log())
		}
		res.Body.Close()
		if res.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz still %d after SIGTERM\n%s", res.StatusCode, s.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := httpJSON(t, "GET", s.URL+"/healthz", "", nil); code != 200 {
		t.Errorf("healthz while draining: %d", code)
	}
	if code := httpJSON(t, "GET", s.URL+"/v1/swarms", "", nil); code != 200 {
		t.Errorf("the API while draining: %d", code)
	}
	exitsCleanly(t, s)
	if !strings.Contains(s.Log(), "draining: not ready") {
		t.Errorf("the node did not say it was draining:\n%s", s.Log())
	}
}

// TestInit: swarm init writes a project that runs at once, offline, with
// swarm run and with go run . (its go.mod builds against this checkout,
// found from the current directory or named by --source), and overwrites
// nothing.
func TestInit(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(t.TempDir(), "My Project")
	// Run from the checkout: it is found without --source.
	if r := swarmIn(t, root, nil, "", "init", proj); r.code != 0 || !strings.Contains(r.stdout, "Try next:") ||
		!strings.Contains(r.stdout, `swarm run hello`) || !strings.Contains(r.stdout, "go run .") {
		t.Fatalf("init: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	gomod, err := os.ReadFile(filepath.Join(proj, "go.mod"))
	if err != nil || !strings.Contains(string(gomod), "module my-project\n") ||
		!strings.Contains(string(gomod), "replace github.com/swarmrt/swarm => "+filepath.ToSlash(root)+"\n") {
		t.Fatalf("go.mod (%v):\n%s", err, gomod)
	}
	r := swarmIn(t, proj, nil, "", "run", "hello", "durable execution")
	if r.code != 0 || !strings.Contains(r.stdout, `"summary":"Durable execution journals every step`) || !strings.Contains(r.stderr, "noted") {
		t.Fatalf("swarm run hello: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// go run ., offline: no proxy, go.mod and go.sum as written.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	gorun := exec.CommandContext(ctx, "go", "run", ".", "crash recovery")
	gorun.Dir = proj
	gorun.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off", "SWARM_MODEL=")
	out, err := gorun.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "researcher answers:") || !strings.Contains(string(out), "tool note: noted") ||
		!strings.Contains(string(out), "\nDurable execution journals every step") {
		t.Fatalf("go run .: %v\n%s", err, out)
	}
	if r := swarmIn(t, proj, []string{"SWARM_STORE=sqlite:.swarm/runs.db"}, "", "ls"); r.code != 0 || strings.Count(r.stdout, "hello") != 1 {
		t.Errorf("swarm ls does not show the run of go run .: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Nothing is overwritten: not even one file of the project.
	other := t.TempDir()
	write(t, other, map[string]string{"swarm.yaml": "mine\n"})
	if r := swarmIn(t, root, nil, "", "init", "--source", root, other); r.code != 2 || !strings.Contains(r.stderr, "would overwrite "+filepath.Join(other, "swarm.yaml")) {
		t.Errorf("init over swarm.yaml: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(other, "swarm.yaml")); string(b) != "mine\n" {
		t.Errorf("swarm.yaml overwritten: %q", b)
	}
	if _, err := os.Stat(filepath.Join(other, "main.go")); err == nil {
		t.Error("init wrote main.go beside an existing swarm.yaml")
	}
	if r := swarmIn(t, other, nil, "", "init", "--source", other, filepath.Join(other, "p")); r.code != 2 || !strings.Contains(r.stderr, "--source") {
		t.Errorf("init --source of a directory that is no checkout: exit %d\n%s", r.code, r.stderr)
	}
}
