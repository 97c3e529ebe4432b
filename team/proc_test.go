package team_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	_ "github.com/swarmrt/swarm/store/postgres" // the "postgres:" store scheme for child processes
	"github.com/swarmrt/swarm/store/postgres/pgtest"
	_ "github.com/swarmrt/swarm/store/sqlite" // the "sqlite:" store scheme
	"github.com/swarmrt/swarm/store/storetest"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

// Cross-process team tests: this test binary re-executes itself as a
// worker (a runtime driving teammates with Work) or a sender (posting mail
// straight into a teammate's mailbox), named by environment variables, and
// every process opens the same SQLite file or PostgreSQL schema.
const (
	procRoleEnv  = "SWARM_TEAM_PROC_ROLE"
	procStoreEnv = "SWARM_TEAM_PROC_STORE"
	procArgsEnv  = "SWARM_TEAM_PROC_ARGS"
)

// sqlStores runs f on a fresh SQLite file and a fresh PostgreSQL schema
// (skipped loudly without a server), each given as a store URL.
func sqlStores(t *testing.T, f func(t *testing.T, url string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, "sqlite:"+filepath.Join(t.TempDir(), "team.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.URL(t, "pool_max_conns=8")) })
}

// openStore opens url, closed when tb ends.
func openStore(tb testing.TB, ctx context.Context, url string) store.Store {
	tb.Helper()
	s, err := store.Open(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// memberName is the name of member i of a sink team.
func memberName(i int) string { return fmt.Sprintf("m%02d", i+1) }

// sinkTeam is a team of n teammates that answer every wake with text, so
// that each drains its inbox one model call at a time; every process of a
// test defines it the same way.
func sinkTeam(n int) *team.Team {
	spec := team.TeamSpec{
		Lead:       &swarm.Agent{Name: "lead", Instructions: "You lead a team of sinks."},
		MaxWakes:   3 * storetest.MailPerSender() * 4,
		MaxMembers: max(n, 1),
	}
	for i := range n {
		spec.Members = append(spec.Members, team.Teammate{Name: memberName(i), Role: "sink", Prompt: "Wait for mail."})
	}
	return team.DefineTeam("sinks", "Teammates that read their mail", spec)
}

// sinkModel answers each call of members 0..n-1 with text, for up to
// calls calls each.
func sinkModel(n, calls int) *scripted.Model {
	steps := make([]scripted.Step, calls)
	for i := range steps {
		steps[i] = scripted.Text("read")
	}
	script := scripted.Script{}
	for i := range n {
		script[memberName(i)] = steps
	}
	return scripted.New(script, scripted.WithoutBookkeeping())
}

// proc is a child process of a cross-process test.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan error
}

// startProc starts this test binary as role on store url with args and
// waits until it says "ready". It is killed if still running when tb ends.
func startProc(tb testing.TB, ctx context.Context, role, url string, args ...string) *proc {
	tb.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTeamProcChild$")
	cmd.Env = append(os.Environ(), procRoleEnv+"="+role, procStoreEnv+"="+url, procArgsEnv+"="+strings.Join(args, " "))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &proc{cmd: cmd, stdin: stdin, lines: make(chan string, 1024), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.done <- cmd.Wait()
	}()
	tb.Cleanup(func() { p.stop(tb) })
	p.expect(tb, ctx, "ready")
	return p
}

// expect waits for a line starting with prefix and returns it.
func (p *proc) expect(tb testing.TB, ctx context.Context, prefix string) string {
	tb.Helper()
	var seen []string
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				tb.Fatalf("a child ended before saying %q: %v\n%s", prefix, <-p.done, strings.Join(seen, "\n"))
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
			seen = append(seen, l)
		case <-ctx.Done():
			tb.Fatalf("timed out waiting for a child to say %q", prefix)
		}
	}
}

// say writes a line to the child.
func (p *proc) say(tb testing.TB, line string) {
	tb.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		tb.Fatalf("write to a child: %v", err)
	}
}

// stop closes the child's standard input, which ends it, and waits (up to
// a minute) for it to exit.
func (p *proc) stop(tb testing.TB) {
	if p.stdin != nil {
		p.stdin.Close()
		p.stdin = nil
	} else {
		return
	}
	go func() {
		for range p.lines { // drain what is left
		}
	}()
	select {
	case err := <-p.done:
		// A test that failed ends its context first, which kills its
		// children: that is not news.
		if err != nil && !tb.Failed() {
			tb.Errorf("child process: %v", err)
		}
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		tb.Errorf("child process did not exit; killed")
	}
}

// TestTeamProcChild is the child process of the cross-process team tests;
// it does nothing unless one of them started it.
func TestTeamProcChild(t *testing.T) {
	role := os.Getenv(procRoleEnv)
	if role == "" {
		t.Skip("the other process of the cross-process team tests")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	s, err := store.Open(ctx, os.Getenv(procStoreEnv))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	args := strings.Fields(os.Getenv(procArgsEnv))
	stdin := bufio.NewReader(os.Stdin)
	switch role {
	case "worker":
		childWorker(t, ctx, s, args, stdin)
	case "sender":
		childSender(t, ctx, s, args, stdin)
	default:
		t.Fatalf("unknown role %q", role)
	}
}

var stdoutMu sync.Mutex

func childSay(a ...any) {
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	fmt.Println(a...)
}

// childWorker drives a sink team of args[0] members with Work until its
// standard input ends. With args[1] == "stamp", it writes "lat <ns>" for
// each mail whose content is a post time "t=<unix ns>", when its model
// is given it.
func childWorker(t *testing.T, ctx context.Context, s store.Store, args []string, stdin *bufio.Reader) {
	n, _ := strconv.Atoi(args[0])
	var m model.Model = sinkModel(n, sinkCalls(n))
	if len(args) > 1 && args[1] == "stamp" {
		m = stampModel{m}
	}
	rt, err := swarm.New(swarm.Config{Store: s, Model: m, Lease: 5 * time.Second, PollInterval: 50 * time.Millisecond, MaxModelCalls: int64(sinkCalls(n) * n)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(sinkTeam(n)); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Work(wctx, swarm.WorkOptions{}) }()
	childSay("ready")
	_, _ = io.Copy(io.Discard, stdin) // until the parent closes it
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// sinkCalls is how many model calls each sink of a team of n may make:
// enough for the drain (one sink) to read every mail in a call of its own,
// else a few. The runtimes driving them raise the run tree's model call
// limit to match: how many calls a drain takes depends on how the posts
// and the wake-ups interleave (about 100 to over 900 on PostgreSQL for
// 10,000 mails, against a default limit of 1,000).
func sinkCalls(n int) int {
	if n == 1 {
		return 3*storetest.MailPerSender()*4 + 10
	}
	return 4
}

// childSender posts args[2] mails from sender args[1] to run args[0] once
// told "go", each in turn, then says "done".
func childSender(t *testing.T, ctx context.Context, s store.Store, args []string, stdin *bufio.Reader) {
	to, from := args[0], args[1]
	n, _ := strconv.Atoi(args[2])
	mb := s.(store.Mailboxes)
	childSay("ready")
	if _, err := stdin.ReadString('\n'); err != nil {
		t.Fatalf("waiting for go: %v", err)
	}
	for k := range n {
		m := store.Mail{ID: fmt.Sprintf("%s-%d", from, k), From: from, Type: team.MailMessage, Content: fmt.Sprintf("%s %d", from, k)}
		if _, err := mb.Post(ctx, []string{to}, m); err != nil {
			t.Fatalf("post %d: %v", k, err)
		}
	}
	childSay("done")
	_, _ = io.Copy(io.Discard, stdin)
}

// stampModel reports, for every mail of an <inbox> it is given whose
// content is "t=<unix ns>", how long ago that was: the delivery latency
// from post to model call, across processes (one machine, one clock).
type stampModel struct{ model.Model }

func (s stampModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	now := time.Now()
	if last := req.Messages[len(req.Messages)-1]; strings.HasPrefix(last.Content, "<inbox>") {
		for l := range strings.Lines(last.Content) {
			_, rest, ok := strings.Cut(l, `"content":"t=`)
			if !ok {
				continue
			}
			ns, err := strconv.ParseInt(rest[:strings.IndexByte(rest, '"')], 10, 64)
			if err == nil {
				childSay("lat", now.Sub(time.Unix(0, ns)).Nanoseconds())
			}
		}
	}
	return s.Model.Generate(ctx, req)
}

// startSinks starts a sink team of n members in a runtime of this process
// on url (which drives the declared members' first pieces of work) and
// waits until every member is idle.
func startSinks(tb testing.TB, ctx context.Context, url string, n int) (*swarm.Runtime, *team.TeamRun) {
	tb.Helper()
	s := openStore(tb, ctx, url)
	rt, err := swarm.New(swarm.Config{Store: s, Model: sinkModel(n, sinkCalls(n)), Lease: 5 * time.Second, PollInterval: 50 * time.Millisecond, MaxModelCalls: int64(sinkCalls(n) * n)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	tr, err := sinkTeam(n).Start(ctx, rt, "", swarm.WithID("sinks"))
	if err != nil {
		tb.Fatal(err)
	}
	waitIdle(tb, ctx, tr, n+1)
	return rt, tr
}

// waitIdle waits until tr has n members, all idle with no unread mail
// (but the lead's, which it reads only when the user speaks). A member
// that has ended fails the wait at once: it can never be idle again.
func waitIdle(tb testing.TB, ctx context.Context, tr *team.TeamRun, n int) []team.MemberStatus {
	tb.Helper()
	var ms []team.MemberStatus
	swarmtest.Until(tb, ctx, fmt.Sprintf("the team's %d members are idle with their mail read", n), func() error {
		var err error
		if ms, err = tr.Roster(ctx); err != nil {
			return err
		}
		idle := len(ms) == n
		for _, m := range ms {
			if m.Ended() {
				return fmt.Errorf("%s has ended (%s: %s)", m.Name, m.State, m.Reason)
			}
			idle = idle && m.State == team.MemberIdle && (m.Lead || m.Unread == 0)
		}
		if !idle {
			return swarmtest.Pending("%s", rosterText(ms))
		}
		return nil
	})
	return ms
}

// consumed returns the mails run id consumed, in order, from its journal.
func consumed(tb testing.TB, ctx context.Context, rt *swarm.Runtime, id string) (mails []store.Mail, calls int) {
	tb.Helper()
	evs, err := rt.History(ctx, id, 0)
	if err != nil {
		tb.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == team.EventInbox {
			mails = append(mails, ev.Mails...)
			calls++
		}
	}
	return mails, calls
}

// drainFigures are what one drain measured.
type drainFigures struct {
	mails      int
	post, all  time.Duration // until every sender was done; until the inbox was drained
	modelCalls int
}

// drainAcross starts a sink teammate driven by a worker process and
// senders processes that post perSender mails each into its mailbox
// concurrently, and checks, from the teammate's journal, that it consumed
// every mail exactly once and each sender's mails in order.
func drainAcross(tb testing.TB, url string, senders, perSender int) drainFigures {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rt, tr := startSinks(tb, ctx, url, 1)
	sink := tr.ID() + "~" + memberName(0)
	worker := startProc(tb, ctx, "worker", url, "1")
	ps := make([]*proc, senders)
	for i := range ps {
		ps[i] = startProc(tb, ctx, "sender", url, sink, fmt.Sprint("s", i), fmt.Sprint(perSender))
	}
	start := time.Now()
	for _, p := range ps {
		p.say(tb, "go")
	}
	for _, p := range ps {
		p.expect(tb, ctx, "done")
	}
	var f drainFigures
	f.post = time.Since(start)
	mb := rt.Store().(store.Mailboxes)
	swarmtest.Until(tb, ctx, "the teammate drains its inbox", func() error {
		left, cursor, err := mb.Mailbox(ctx, sink, 1)
		if err != nil || len(left) == 0 {
			return err
		}
		run, err := rt.Store().Get(ctx, sink)
		if err != nil {
			return err
		}
		if run.State.Terminal() {
			return fmt.Errorf("the teammate has ended with mail left (%s: %s)", run.State, run.Reason)
		}
		return swarmtest.Pending("%d of %d mails acknowledged", cursor, senders*perSender)
	})
	f.all = time.Since(start)
	waitIdle(tb, ctx, tr, 2)
	worker.stop(tb)
	for _, p := range ps {
		p.stop(tb)
	}
	mails, calls := consumed(tb, ctx, rt, sink)
	f.mails, f.modelCalls = len(mails), calls
	next := make([]int, senders)
	seen := map[string]bool{}
	for _, m := range mails {
		if seen[m.ID] {
			tb.Fatalf("mail %s consumed twice", m.ID)
		}
		seen[m.ID] = true
		from, k, ok := strings.Cut(m.Content, " ")
		i, err1 := strconv.Atoi(strings.TrimPrefix(from, "s"))
		n, err2 := strconv.Atoi(k)
		if !ok || err1 != nil || err2 != nil || i < 0 || i >= senders || m.From != from {
			tb.Fatalf("unexpected mail %+v", m)
		}
		if n != next[i] {
			tb.Fatalf("sender %s: mail %d consumed when %d was next", from, n, next[i])
		}
		next[i]++
	}
	if len(mails) != senders*perSender {
		tb.Fatalf("%d mails consumed, want %d (per sender: %v)", len(mails), senders*perSender, next)
	}
	if _, cursor, err := mb.Mailbox(ctx, sink, 1); err != nil || cursor != int64(senders*perSender) {
		tb.Fatalf("ack cursor = %d, %v; want %d", cursor, err, senders*perSender)
	}
	return f
}

// TestTeamDrainAcrossProcesses: 4 processes post 10,000 mails (1,000
// under the race detector or -short) concurrently to one teammate, which a
// worker in a fifth process drains: each mail is consumed exactly once,
// and each sender's in order.
func TestTeamDrainAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	sqlStores(t, func(t *testing.T, url string) {
		per := storetest.MailPerSender()
		f := drainAcross(t, url, 4, per)
		t.Logf("%d mails from 4 processes: posted in %v (%.0f/s), drained in %v in %d model calls",
			f.mails, f.post.Round(time.Millisecond), float64(f.mails)/f.post.Seconds(), f.all.Round(time.Millisecond), f.modelCalls)
	})
}

// TestTeamBroadcastAcrossProcesses: one broadcast to a team of 20
// teammates, driven by workers in three processes: each teammate consumes
// it exactly once (and the lead has it unread once).
func TestTeamBroadcastAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	sqlStores(t, func(t *testing.T, url string) {
		const n = 20
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		rt, tr := startSinks(t, ctx, url, n)
		var workers []*proc
		for range 2 {
			workers = append(workers, startProc(t, ctx, "worker", url, fmt.Sprint(n)))
		}
		defer func() {
			for _, w := range workers {
				w.stop(t)
			}
		}()
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- rt.Work(wctx, swarm.WorkOptions{}) }()
		defer func() {
			stop()
			<-done
		}()
		lead, err := rt.Store().Get(ctx, tr.ID())
		if err != nil {
			t.Fatal(err)
		}
		to, err := tr.Broadcast(ctx, "status update: phase 1 complete")
		if err != nil {
			t.Fatal(err)
		}
		if len(to) != n+1 {
			t.Fatalf("broadcast reached %v, want the lead and %d teammates", to, n)
		}
		ms := waitIdle(t, ctx, tr, n+1)
		// The lead, waiting for the user, was neither woken nor claimed
		// by any of the processes.
		if after, err := rt.Store().Get(ctx, tr.ID()); err != nil || after.State != store.Paused || after.Reason != swarm.AwaitingMessage ||
			after.Epoch != lead.Epoch || after.LastSeq != lead.LastSeq {
			t.Errorf("the lead after the broadcast: %+v, %v; want paused for the user at epoch %d, last record %d", after, err, lead.Epoch, lead.LastSeq)
		}
		for _, m := range ms {
			got, _ := consumed(t, ctx, rt, m.RunID)
			unread, err := tr.Inbox(ctx, m.Name)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case m.Lead && (len(got) != 0 || len(unread) != 1):
				t.Errorf("lead consumed %d, has %d unread; want the broadcast unread once", len(got), len(unread))
			case !m.Lead && (len(got) != 1 || got[0].Content != "status update: phase 1 complete" || got[0].Type != team.MailBroadcast || len(unread) != 0):
				t.Errorf("%s consumed %+v, has %d unread; want the broadcast once", m.Name, got, len(unread))
			}
		}
		ids := map[string]bool{}
		for _, m := range ms[1:] {
			got, _ := consumed(t, ctx, rt, m.RunID)
			for _, ml := range got {
				ids[ml.ID] = true
			}
		}
		if len(ids) != 1 || !slices.Contains(to, memberName(n-1)) {
			t.Errorf("the teammates consumed mails %v, want one broadcast", ids)
		}
	})
}
