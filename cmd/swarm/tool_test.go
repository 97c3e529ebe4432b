package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
