package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestToolDedupeIsAtomic: attempts of one tool call that run at the same
// time, as a node frozen past its lease and the run's new owner may, make
// the side effect once and all answer its result. (The chaos test's
// SIGSTOP round once saw an effect twice when the tool checked for a
// stored result and then acted.)
func TestToolDedupeIsAtomic(t *testing.T) {
	dir := workdir(t)
	const attempts = 8
	outs := make([]string, attempts)
	var wg sync.WaitGroup
	for i := range attempts {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "./tool.sh")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "EFFECTS="+dir, "SWARM_IDEMPOTENCY_KEY=r1/t1/tool/call_0", "TOOL_SLEEP=0.2")
			cmd.Stdin = strings.NewReader(`{"item":"seat"}`)
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("attempt %d: %v", i, err)
			}
			outs[i] = string(out)
		})
	}
	wg.Wait()
	if effects := lines(t, filepath.Join(dir, "effects.log")); len(effects) != 1 {
		t.Errorf("%d attempts at once made the effect %d times: %v", attempts, len(effects), effects)
	}
	for i, out := range outs {
		if out != `booked {"item":"seat"}` {
			t.Errorf("attempt %d answered %q", i, out)
		}
	}

	// An attempt killed while it holds the key leaves no claim behind: the
	// next attempt makes the effect.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder := exec.CommandContext(ctx, "./tool.sh")
	holder.Dir = dir
	holder.Env = append(os.Environ(), "EFFECTS="+dir, "SWARM_IDEMPOTENCY_KEY=r2/t1/tool/call_0", "TOOL_SLEEP=0", "TOOL_HOLD=60")
	holder.Stdin = strings.NewReader(`{"item":"bus"}`)
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as the runtime runs command tools
	pipe, err := holder.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := pipe.Read(make([]byte, 7)); err != nil {
		t.Fatalf("attempt to be killed: %v", err)
	}
	_ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL) // the attempt's process group, as a cancelled call's
	_ = holder.Wait()
	cmd := exec.CommandContext(ctx, "./tool.sh")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EFFECTS="+dir, "SWARM_IDEMPOTENCY_KEY=r2/t1/tool/call_0")
	cmd.Stdin = strings.NewReader(`{"item":"bus"}`)
	out, err := cmd.Output()
	if err != nil || string(out) != `booked {"item":"bus"}` {
		t.Fatalf("attempt after a killed one: %q, %v", out, err)
	}
	if effects := lines(t, filepath.Join(dir, "effects.log")); len(effects) != 2 || effects[1] != "effect r2/t1/tool/call_0" {
		t.Errorf("effects after a killed attempt: %v", effects)
	}
}

// TestCommandToolDiesWithSwarm: a swarm process SIGKILLed while a command
// tool runs takes the command with it; no orphan is left running.
func TestCommandToolDiesWithSwarm(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux kills a command when its parent dies")
	}
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"swarm.yaml": `version: 1
model: scripted:script.yaml
tools:
  hold:
    description: Runs for a long time
    command: ["./hold.sh"]
    timeout: 10m
swarms:
  holder:
    description: Calls a long command
    instructions: Call hold.
    tools: [hold]
`,
		"script.yaml": `holder:
  - tool_calls:
      - {name: hold, arguments: {n: 1}}
  - text: "done"
`,
		// exec: the command's own process is the one that sleeps.
		"hold.sh": "#!/bin/sh\ncat > \"$EFFECTS/input.json\"\necho $$ > \"$EFFECTS/hold.pid.tmp\"\nmv \"$EFFECTS/hold.pid.tmp\" \"$EFFECTS/hold.pid\"\nexec sleep 600\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := swarmCmd(ctx, dir, "run", "-q", "holder", "go")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	var pid int
	for pid == 0 {
		if b, err := os.ReadFile(filepath.Join(dir, "hold.pid")); err == nil {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				t.Fatal(err)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the command tool did not start within 30s")
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if in, err := os.ReadFile(filepath.Join(dir, "input.json")); err != nil || string(in) != `{"n":1}` {
		t.Errorf("the command's input: %q, %v", in, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for alive(pid) {
		select {
		case <-ctx.Done():
			t.Fatalf("command tool process %d still runs after its swarm process was killed", pid)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// alive reports whether process pid runs (a zombie, dead but not reaped
// by its new parent, does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
