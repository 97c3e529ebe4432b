package storetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
)

// The board, runs and size of the claim race between processes.
const (
	procTeam  = "cross-process"
	procTasks = 500
)

// TaskClaimProcesses races this process against another one to claim
// every task of a board, both in the same order, so that they contend for
// each. The other process is this test binary running test child, which
// calls [TaskClaimChild] on a store sharing s's data (another handle on
// the same file or database), found with environment variable env set to
// value. It checks that each task was won by exactly one process, as each
// saw it and as the board says.
func TaskClaimProcesses(t *testing.T, s store.Store, child, env, value string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a process")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+child+"$")
	cmd.Env = append(os.Environ(), env+"="+value)
	ts := teams(t, s)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, who := range []string{"parent", "child"} {
		create(t, s, who+"-run", "o", long)
	}
	for i := range procTasks {
		addTask(t, ts, procTeam, store.Task{Subject: fmt.Sprint("task ", i+1)})
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// On an early failure, closing stdin ends a child still waiting for
	// the start.
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	var childOut strings.Builder
	for lines.Scan() && lines.Text() != "ready" {
		childOut.WriteString(lines.Text() + "\n")
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatalf("start the child: %v\n%s", err, childOut.String())
	}
	var parentOut strings.Builder
	perr := claimEach(ctx, ts, "parent", &parentOut)
	for lines.Scan() {
		childOut.WriteString(lines.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, childOut.String())
	}
	if perr != nil {
		t.Fatal(perr)
	}
	won := map[int64]string{}
	for who, out := range map[string]string{"parent": parentOut.String(), "child": childOut.String()} {
		for line := range strings.Lines(out) {
			f, ok := strings.CutPrefix(strings.TrimSpace(line), "won ")
			if !ok {
				continue
			}
			id, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatalf("%s wrote %q", who, line)
			}
			if prev, dup := won[id]; dup {
				t.Fatalf("task %d won by %s and %s", id, prev, who)
			}
			won[id] = who
		}
	}
	all := tasks(t, ts, procTeam)
	counts := map[string]int{}
	for _, task := range all {
		who := won[task.ID]
		if who == "" || task.OwnerRun != who+"-run" || task.Status != store.TaskInProgress {
			t.Fatalf("task %+v: won by %q", task, who)
		}
		counts[who]++
	}
	if len(won) != procTasks {
		t.Fatalf("%d tasks won, want %d", len(won), procTasks)
	}
	t.Logf("parent won %d tasks, child %d", counts["parent"], counts["child"])
}

// TaskClaimChild is the other process of [TaskClaimProcesses]: unless
// environment variable env is empty (then it skips t: the test was not
// started by TaskClaimProcesses), it opens a store with open(t, value of
// env), says it is ready, waits for the word on its standard input, then
// races.
func TaskClaimChild(t *testing.T, env string, open func(t *testing.T, value string) store.Store) {
	value := os.Getenv(env)
	if value == "" {
		t.Skip("the other process of a cross-process test")
	}
	s := open(t, value)
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("waiting for the start: %v", err)
	}
	if err := claimEach(ctx, teams(t, s), "child", os.Stdout); err != nil {
		t.Fatal(err)
	}
}

// claimEach tries to claim every task of the cross-process board, in
// order, as who, and writes "won ID" for each claim it wins.
func claimEach(ctx context.Context, ts store.Teams, who string, w io.Writer) error {
	for id := int64(1); id <= procTasks; id++ {
		_, err := ts.ClaimTask(ctx, procTeam, id, who, who+"-run")
		switch {
		case err == nil:
			fmt.Fprintln(w, "won", id)
		case !errors.Is(err, store.ErrConflict):
			return fmt.Errorf("%s: claim task %d: %w", who, id, err)
		}
	}
	return nil
}

// TeamsAcrossHandles runs the races of the team cases through several
// handles on one database (nodes, or processes): claimers race for each
// task, 2 of them 1,000 times and 8 of them 200 times, and 8 adders fill
// one board.
func TeamsAcrossHandles(t *testing.T, handles []store.Store) {
	t.Run("ClaimRace", func(t *testing.T) { TaskClaimRace(t, handles, 2, 1000) })
	t.Run("ClaimRaceEight", func(t *testing.T) { TaskClaimRace(t, handles, 8, 200) })
	t.Run("AddConcurrent", func(t *testing.T) { TaskAddConcurrency(t, handles, 8, 100) })
}

// TeamsReopen checks that a board and requests outlive the store handle
// that wrote them: open must return a new handle on the same data each
// time. What one handle added, claimed, completed and requested, a handle
// opened after it was closed finds as it was, and can carry on with.
func TeamsReopen(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	ctx := t.Context()
	s := open(t)
	ts := teams(t, s)
	create(t, s, "lead", "o", long)
	create(t, s, "alice-run", "o", long)
	addTask(t, ts, "lead", store.Task{Key: "k", Subject: "parse", Description: "the input"})
	addTask(t, ts, "lead", store.Task{Subject: "test", BlockedBy: []int64{1}})
	addTask(t, ts, "lead", store.Task{Subject: "ship", BlockedBy: []int64{1, 2}})
	claimTask(t, ts, "lead", 1, "alice", "alice-run")
	if _, err := ts.CompleteTask(ctx, "lead", 1, "alice-run", "parsed"); err != nil {
		t.Fatal(err)
	}
	claimTask(t, ts, "lead", 2, "alice", "alice-run")
	r := store.Request{ID: "plan-1", Kind: "plan_approval", From: "alice", To: "lead", Content: "the plan",
		Deadline: time.Now().Add(time.Hour)}
	addRequest(t, ts, "lead", r)
	addRequest(t, ts, "lead", store.Request{ID: "stop-1", Kind: "shutdown", From: "lead", To: "alice"})
	if _, err := ts.ResolveRequest(ctx, "lead", "stop-1", store.RequestRejected, "busy"); err != nil {
		t.Fatal(err)
	}
	board := tasks(t, ts, "lead")
	reqs, err := ts.Requests(ctx, "lead")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t)
	defer s.Close()
	ts = teams(t, s)
	after := tasks(t, ts, "lead")
	if len(after) != len(board) {
		t.Fatalf("after reopening: %d tasks, want %d", len(after), len(board))
	}
	for i := range board {
		if !sameTask(after[i], board[i]) {
			t.Fatalf("after reopening: task %+v, want %+v", after[i], board[i])
		}
	}
	wantRequests(t, ts, "lead", reqs...)
	// The claim holds, the IDs go on, and the pending request can be
	// answered.
	_, err = ts.ClaimTask(ctx, "lead", 2, "bob", "bob-run")
	wantErrText(t, "ClaimTask of a task claimed before reopening", err, store.ErrConflict, "alice")
	if again := addTask(t, ts, "lead", store.Task{Key: "k", Subject: "other"}); again.ID != 1 {
		t.Fatalf("Key after reopening gave task %d", again.ID)
	}
	if next := addTask(t, ts, "lead", store.Task{Subject: "docs"}); next.ID != 4 {
		t.Fatalf("next task after reopening has ID %d, want 4", next.ID)
	}
	if got, err := ts.ResolveRequest(ctx, "lead", "plan-1", store.RequestApproved, "go"); err != nil || got.State != store.RequestApproved {
		t.Fatalf("ResolveRequest after reopening = %+v, %v", got, err)
	}
}
