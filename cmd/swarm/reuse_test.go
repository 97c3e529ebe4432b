package main_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
)

// TestRmThenRunSameIDRemembers: a run's id used again after `swarm rm`
// is a new run: its memory write, at the same step as the deleted run's,
// is stored, not dropped as a repeat of the deleted run's write.
func TestRmThenRunSameIDRemembers(t *testing.T) {
	dir := memoryDir(t)
	start := func() {
		t.Helper()
		r := swarmIn(t, dir, nil, "", "run", "-q", "--id", "trip-1", "--values", `{"user":"carol"}`, "support", "Book me on the Lisbon flight, aisle seat please")
		if r.code != 0 {
			t.Fatalf("run: exit %d %s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	start()
	// carol asks to be forgotten; the run is deleted; she books again
	// under the same id and states her preference again.
	for _, args := range [][]string{{"memory", "rm", "user:carol", "preferences/seat"}, {"rm", "trip-1"}} {
		if r := swarmIn(t, dir, nil, "", args...); r.code != 0 {
			t.Fatalf("swarm %v: exit %d %s\n%s", args, r.code, r.stdout, r.stderr)
		}
	}
	start()
	r := swarmIn(t, dir, nil, "", "memory", "ls", "user:carol")
	if r.code != 0 || !strings.Contains(r.stdout, "preferences/seat") {
		t.Fatalf("memory ls user:carol after the second run: exit %d %q\n%s\nwant the preference the second run wrote", r.code, r.stdout, r.stderr)
	}
}

// memoryDir returns a directory holding the memory example (a support
// swarm with a bank per user, scripted).
func memoryDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{}
	for _, f := range []string{"swarm.yaml", "script.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "memory", f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(b)
	}
	write(t, dir, files)
	return dir
}

// TestServeReusedIDReadsItsOwnBank: in one `swarm serve` process, a run
// for carol is deleted over HTTP and its id started again for dave:
// dave's run searches and writes dave's bank, not carol's.
func TestServeReusedIDReadsItsOwnBank(t *testing.T) {
	dir := memoryDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := serve(t, ctx, dir, nil)
	for _, user := range []string{"carol", "dave"} {
		body := `{"id": "trip-1", "input": "Book me on the Lisbon flight, aisle seat please", "values": {"user": "` + user + `"}}`
		if code := httpJSON(t, "POST", s.URL+"/v1/swarms/support/runs", body, nil); code != 201 {
			t.Fatalf("start for %s: %d", user, code)
		}
		var st struct{ State, Reason string }
		for st.State != "completed" {
			if code := httpJSON(t, "GET", s.URL+"/v1/runs/trip-1", "", &st); code >= 300 || st.State == "failed" || ctx.Err() != nil {
				t.Fatalf("run for %s: %d %+v", user, code, st)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if user == "carol" {
			if code := httpJSON(t, "DELETE", s.URL+"/v1/runs/trip-1", "", nil); code != 204 {
				t.Fatalf("delete: %d", code)
			}
		}
	}
	r := swarmIn(t, dir, nil, "", "events", "trip-1")
	if r.code != 0 || !strings.Contains(r.stdout, `\"bank\":\"user:dave\"`) || strings.Contains(r.stdout, "user:carol") {
		t.Errorf("dave's run's events name another bank than dave's:\n%s", r.stdout)
	}
	if r := swarmIn(t, dir, nil, "", "memory", "ls", "user:dave"); r.code != 0 || !strings.Contains(r.stdout, "preferences/seat") {
		t.Errorf("memory ls user:dave: exit %d %q, want the preference dave's run wrote", r.code, r.stdout)
	}
}

// TestKilledStartWithLargeImageRecovers kills `swarm run` with SIGKILL as
// soon as its run's start record is in the store, while it has a large
// image to store: the image is there with the record (no record names a
// blob that is not stored), and `swarm recover` completes the run with
// the model given the image.
func TestKilledStartWithLargeImageRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes")
	}
	const size = 24 << 20 // large, so that storing it takes a while
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"swarm.yaml":  "version: 1\nmodel: scripted:script.yaml\nswarms:\n  vision:\n    description: Describes a picture\n    instructions: Describe the picture.\n",
		"script.yaml": "vision:\n  - expect_parts: [{type: image, media_type: image/png, min_bytes: 25165824}]\n    text: a cat\n",
	})
	img := make([]byte, size)
	_, _ = rand.Read(img)
	copy(img, "\x89PNG\r\n\x1a\n")
	if err := os.WriteFile(filepath.Join(dir, "big.png"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd, errb, st := startWatched(ctx, t, dir, "run", "-q", "--lease", "500ms", "--id", "big", "--attach", "big.png", "vision", "what is it?")
	defer st.Close()
	for {
		if r, err := st.Get(ctx, "big"); err == nil && r.LastSeq >= 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the run was never started\n%s", errb.String())
		}
		time.Sleep(200 * time.Microsecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	recs, err := st.Read(ctx, "big", 0, 1)
	if err != nil || len(recs) != 1 {
		t.Fatalf("start record: %v, %v", recs, err)
	}
	var ev swarm.Event
	if err := json.Unmarshal(recs[0].Data, &ev); err != nil || len(ev.Parts) != 1 || ev.Parts[0].Blob == "" {
		t.Fatalf("start record %s: %v; want the image by reference", recs[0].Data, err)
	}
	if got, err := st.Blob(ctx, "big", ev.Parts[0].Blob); err != nil || len(got) != size {
		t.Errorf("the image the start record names, after the kill: %d bytes, %v; want it stored", len(got), err)
	}
	r := swarmIn(t, dir, nil, "", "recover")
	if r.code != 0 {
		t.Fatalf("recover: exit %d %s\n%s", r.code, r.stdout, r.stderr)
	}
	run, err := st.Get(ctx, "big")
	if err != nil || run.State != store.Completed {
		t.Fatalf("after recover: %s %q, %v; want completed", run.State, run.Reason, err)
	}
}
