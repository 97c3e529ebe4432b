package a2a_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/auth"
)

// TestInteropJS runs interop/a2a/interop.mjs, which drives our server with
// the official A2A JavaScript client (@a2a-js/sdk, pinned in its
// package-lock.json): card, send, stream, resume of an input-required task,
// cancel. It needs node and `npm ci` in interop/a2a; in CI (CI=true) their
// absence is a failure, elsewhere a loud skip.
func TestInteropJS(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "interop", "a2a"))
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	node, err := exec.LookPath("node")
	if err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk")); err != nil {
		missing = "interop/a2a/node_modules is missing (run: cd interop/a2a && npm ci)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("A2A interop test cannot run: %s", missing)
		}
		t.Skipf("SKIPPING the A2A interop test with @a2a-js/sdk: %s", missing)
	}

	a, err := auth.New([]auth.Token{{Name: "interop", Secret: "interop-token", Swarms: []string{"echo", "approver", "slow"}}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, a2a.Options{Auth: a}, a.Middleware)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "interop.mjs", e.srv.URL, "interop-token")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("node interop.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("interop script failed: %v", err)
	}
	if !strings.Contains(string(out), "PASS ") {
		t.Fatal("interop script did not report PASS")
	}
}
