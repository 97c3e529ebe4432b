//go:build unix

package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/config"
	_ "github.com/swarmrt/swarm/model/scripted" // the scripted: model provider
)

// loadTool writes a script and a file defining the tool t that runs it, and
// returns the tool. extra is added to the tool's definition.
func loadTool(t *testing.T, dir, script, extra string) swarm.Tool {
	t.Helper()
	write(t, dir, "tool.sh", "#!/bin/sh\n"+script, 0o755)
	y := "version: 1\ntools:\n  t:\n    description: test tool\n    command: [./tool.sh, --flag, two words]\n" + extra
	f, err := config.Load(write(t, dir, "swarm.yaml", y, 0o644))
	if err != nil {
		t.Fatal(err)
	}
	return f.Tool("t")
}

func TestCommandStdinArgsAndEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SWARM_RUN_ID", "inherited") // must not leak into the tool
	t.Setenv("INHERITED", "yes")
	tool := loadTool(t, dir, `
printf 'stdin=%s\n' "$(cat)"
printf 'argc=%s 1=%s 2=%s\n' "$#" "$1" "$2"
printf 'foo=%s inherited=%s\n' "$FOO" "$INHERITED"
printf 'run=%s step=%s key=%s tool=%s\n' "$SWARM_RUN_ID" "$SWARM_STEP_KEY" "$SWARM_IDEMPOTENCY_KEY" "$SWARM_TOOL"
pwd
`, "    dir: work\n    env: {FOO: bar baz}\n")
	out, err := tool.Call(context.Background(), json.RawMessage(`{"q": "héllo"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		`stdin={"q": "héllo"}`,
		"argc=2 1=--flag 2=two words",
		"foo=bar baz inherited=yes",
		"run= step= key= tool=t",
		filepath.Join(dir, "work"),
	}, "\n")
	if out != want {
		t.Errorf("output\n%s\nwant\n%s", out, want)
	}
	// Empty arguments are an empty object.
	out, err = loadTool(t, dir, "cat\n", "").Call(context.Background(), nil)
	if err != nil || out != "{}" {
		t.Errorf("empty arguments: %q, %v", out, err)
	}
}

func TestCommandNonZeroExit(t *testing.T) {
	tool := loadTool(t, t.TempDir(), "echo partial\necho 'policy not found' >&2\nexit 3\n", "")
	out, err := tool.Call(context.Background(), json.RawMessage(`{}`))
	if err == nil {
		t.Fatalf("no error; output %q", out)
	}
	if msg := err.Error(); !strings.Contains(msg, `"./tool.sh" exited with status 3`) || !strings.HasSuffix(msg, "; stderr: policy not found") {
		t.Errorf("error %q", msg)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("error does not wrap the exit status: %v", err)
	}
	// Without stderr, the end of stdout explains the failure; only the end
	// of a long stderr is kept.
	_, err = loadTool(t, t.TempDir(), "echo 'bad input'\nexit 1\n", "").Call(context.Background(), nil)
	if err == nil || !strings.HasSuffix(err.Error(), "exited with status 1; output: bad input") {
		t.Errorf("error %v", err)
	}
	_, err = loadTool(t, t.TempDir(), "i=0; while [ $i -lt 500 ]; do echo \"line $i\" >&2; i=$((i+1)); done; exit 2\n", "").Call(context.Background(), nil)
	if err == nil || !strings.HasSuffix(err.Error(), "line 499") || strings.Contains(err.Error(), "line 1\n") || len(err.Error()) > 3000 {
		t.Errorf("error %v", err)
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err) || !dirExists("/proc/self")
	}
	// The state follows the parenthesized command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func waitDead(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCommandTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	tool := loadTool(t, dir, `
sleep 100 &
echo $! > "$PIDFILE"
echo started
wait
`, "    timeout: 300ms\n    env: {PIDFILE: "+strconv.Quote(pidFile)+"}\n")
	start := time.Now()
	_, err := tool.Call(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), `"./tool.sh" timed out after 300ms`) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("call took %s", d)
	}
	waitDead(t, pidFile)
}

func TestCommandCancelKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	tool := loadTool(t, dir, "sleep 100 &\necho $! > \"$PIDFILE\"\nwait\n", "    env: {PIDFILE: "+strconv.Quote(pidFile)+"}\n")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := tool.Call(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "cancelled") || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("call took %s", d)
	}
	waitDead(t, pidFile)
	if _, err := tool.Call(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("call with a cancelled context: %v", err)
	}
}

func TestCommandArgumentsValidatedBeforeStart(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	tool := loadTool(t, dir, "touch \"$MARKER\"\n", `    env: {MARKER: `+strconv.Quote(marker)+`}
    input_schema:
      type: object
      properties: {policy: {type: string}}
      required: [policy]
      additionalProperties: false
`)
	for _, args := range []string{`{"policy": 5}`, `{}`, `{"policy": "a", "x": 1}`, `{"policy":`, `[1]`} {
		_, err := tool.Call(context.Background(), json.RawMessage(args))
		var ae *swarm.ArgumentError
		if !errors.As(err, &ae) || ae.Tool != "t" {
			t.Errorf("%s: error %T %v, want *swarm.ArgumentError", args, err, err)
		}
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the command ran with invalid arguments")
	}
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"policy": "P-1"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the command did not run with valid arguments")
	}
}

func TestCommandOutput(t *testing.T) {
	// Only one trailing newline is removed.
	out, err := loadTool(t, t.TempDir(), "printf 'a\\n\\n'\n", "").Call(context.Background(), nil)
	if err != nil || out != "a\n" {
		t.Errorf("output %q, %v", out, err)
	}
	// Output beyond 1 MiB is dropped (and the command is not blocked).
	out, err = loadTool(t, t.TempDir(), "head -c 3000000 /dev/zero | tr '\\0' a\n", "").Call(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, strings.Repeat("a", 1<<20)+"\n[output truncated") || len(out) > 1<<20+100 {
		t.Errorf("output of %d bytes ends with %q", len(out), out[max(0, len(out)-80):])
	}
}

func TestCommandLeftBehindProcessDoesNotHang(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// The background sleep keeps stdout open after the script exits.
	tool := loadTool(t, dir, "sleep 100 &\necho $! > \"$PIDFILE\"\necho done\n", "    env: {PIDFILE: "+strconv.Quote(pidFile)+"}\n")
	start := time.Now()
	out, err := tool.Call(context.Background(), nil)
	if err != nil || out != "done" {
		t.Errorf("output %q, %v", out, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("call took %s", d)
	}
	if b, err := os.ReadFile(pidFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func TestCommandBareNameFromPath(t *testing.T) {
	dir := t.TempDir()
	f, err := config.Parse([]byte("version: 1\ntools:\n  echo:\n    command: [cat]\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Tool("echo").Call(context.Background(), json.RawMessage(`{"a":1}`))
	if err != nil || out != `{"a":1}` {
		t.Errorf("output %q, %v", out, err)
	}
}
