package a2a_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/internal/servetest"
	"github.com/swarmrt/swarm/model"
)

// TestInteropJS runs interop/a2a/interop.mjs, which drives our server with
// the official A2A JavaScript client (@a2a-js/sdk, pinned in its
// package-lock.json): card, send, stream, resume of an input-required task,
// cancel. It needs node and `npm ci` in interop/a2a; in CI (CI=true) their
// absence is a failure, elsewhere a loud skip.
func TestInteropJS(t *testing.T) {
	dir, node := interopNode(t)
	a, err := auth.New([]auth.Token{{Name: "interop", Secret: "interop-token", Swarms: []string{"echo", "approver", "slow", "thumbnailer", "inspector"}}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, a2a.Options{Auth: a}, a.Middleware, thumbnailer(), swarm.Define[string, string]("inspector", "Looks at screenshots", nil))
	t.Setenv("A2A_PARTS", "1")
	runInterop(t, dir, node, e.srv.URL, "interop-token")
}

// thumbnailer's model checks that a PNG arrived, and its tool attaches a
// 6000-byte PNG thumbnail to the run's result.
func thumbnailer() swarm.Definition {
	thumb := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{5}, 6000-8)...)
	tool := swarm.NewTool("thumbnail", "makes the thumbnail", func(ctx context.Context, _ struct{}) (string, error) {
		return "done", swarm.AttachOutput(ctx, model.Image("image/png", thumb))
	})
	return swarm.Define[string, string]("thumbnailer", "Makes thumbnails", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{tool}}
	})
}

// TestInteropJSServe runs interop/a2a/interop.mjs against a real `swarm
// serve` process, where the A2A handler sits behind the server's own
// middleware (request logging, body limit): streaming must work through it.
func TestInteropJSServe(t *testing.T) {
	dir, node := interopNode(t)
	conf, err := filepath.Abs(filepath.Join("testdata", "serve"))
	if err != nil {
		t.Fatal(err)
	}
	p := servetest.Serve(t, conf, nil)
	runInterop(t, dir, node, p.URL, "")
	if strings.Contains(p.Log(), "level=ERROR") {
		t.Errorf("swarm serve logged errors:\n%s", p.Log())
	}
}

// interopNode finds node and the installed client; it skips the test (or
// fails it in CI) when either is missing.
func interopNode(t *testing.T) (dir, node string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "interop", "a2a"))
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	node, err = exec.LookPath("node")
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
	return dir, node
}

// runInterop runs interop.mjs against base and requires it to pass.
func runInterop(t *testing.T, dir, node, base, token string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"interop.mjs", base}
	if token != "" {
		args = append(args, token)
	}
	cmd := exec.CommandContext(ctx, node, args...)
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
