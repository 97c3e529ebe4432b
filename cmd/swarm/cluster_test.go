package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/postgres"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
)

// The cluster tests run `swarm serve` processes on loopback against one
// PostgreSQL schema. Two swarms of the same shape, two turns each (a
// command tool with a side effect, then the answer): pair answers at once,
// for throughput; slow takes 300ms per model call and 200ms per tool call,
// so that runs are in flight at every step when a node is killed or
// paused.
const clusterDefs = `version: 1
model: scripted:cluster.yaml
tools:
  book:
    description: Books an item
    command: ["./tool.sh"]
    input_schema:
      type: object
      properties: {item: {type: string}}
      required: [item]
    timeout: 2m
swarms:
  pair:
    description: two turns, at once
    instructions: Book a seat.
    tools: [book]
  slow:
    description: two turns, 300ms per model call
    instructions: Book a seat.
    tools: [book]
`

const clusterScript = `pair:
  - tool_calls: [{name: book, arguments: {item: "seat"}}]
  - text: "booked"
slow:
  - tool_calls: [{name: book, arguments: {item: "seat, slowly"}}]
    delay: 300ms
  - text: "booked"
    delay: 300ms
`

// clusterLease is the lease of the nodes: a dead node's runs continue
// elsewhere about this long after it died.
const clusterLease = 2 * time.Second

// cluster is a set of `swarm serve` nodes sharing one PostgreSQL schema,
// and a store of the test's own to watch them through.
type cluster struct {
	t   *testing.T
	ctx context.Context
	dir string
	url string
	db  *postgres.Store

	client  *http.Client
	nodes   []*node // the live ones
	started []*node
}

type node struct {
	*served
	pid  int
	name string
}

func newCluster(t *testing.T, ctx context.Context) *cluster {
	t.Helper()
	return newClusterAt(t, ctx, pgtest.URL(t, "pool_max_conns=8"))
}

// newClusterAt is newCluster on the database of url.
func newClusterAt(t *testing.T, ctx context.Context, url string) *cluster {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"swarm.yaml": clusterDefs, "cluster.yaml": clusterScript}
	tool, err := os.ReadFile(filepath.Join("testdata", "tool.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// The tool of testdata, its pause set by the call: 200ms for slow.
	slowTool := strings.Replace(string(tool), `sleep "${TOOL_SLEEP:-0.05}"`, `case "$args" in *slowly*) sleep 0.2 ;; esac`, 1)
	if slowTool == string(tool) {
		t.Fatal("testdata/tool.sh no longer sleeps where the cluster test expects")
	}
	files["tool.sh"] = slowTool
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The schema exists before the nodes start, so that their concurrent
	// start is about serving, not migrating (TestConcurrentMigrations in
	// the store covers that).
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &cluster{t: t, ctx: ctx, dir: dir, url: url, db: db,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: 30 * time.Second}}
}

// start starts a node and adds it to the live ones.
func (c *cluster) start(name string) *node {
	c.t.Helper()
	return c.startWatched(name, nil)
}

// startWatched is start with onLine as in serveWatched.
func (c *cluster) startWatched(name string, onLine func(string)) *node {
	c.t.Helper()
	s := serveWatched(c.t, c.ctx, c.dir, []string{"SWARM_STORE=" + c.url}, onLine, "--lease", clusterLease.String())
	n := &node{served: s, pid: s.Cmd.Process.Pid, name: name}
	c.nodes = append(c.nodes, n)
	c.started = append(c.started, n)
	return n
}

// remove takes n out of the live nodes.
func (c *cluster) remove(n *node) {
	c.nodes = slices.DeleteFunc(c.nodes, func(m *node) bool { return m == n })
}

// owns reports whether a lease owner names n (owners are host:pid:random).
func (n *node) owns(owner string) bool {
	return strings.Contains(owner, ":"+strconv.Itoa(n.pid)+":")
}

// submit starts count runs of swarm with ids prefix-0… over HTTP, spread
// over the live nodes in turn, 16 requests at a time.
func (c *cluster) submit(swarm, prefix string, count int) []string {
	c.t.Helper()
	ids := make([]string, count)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
	)
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				n := c.nodes[i%len(c.nodes)]
				body := fmt.Sprintf(`{"id": %q, "input": "seat %d"}`, ids[i], i)
				req, _ := http.NewRequestWithContext(c.ctx, "POST", n.URL+"/v1/swarms/"+swarm+"/runs", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				res, err := c.client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusCreated {
						err = fmt.Errorf("status %d", res.StatusCode)
					}
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Sprintf("start %s on %s: %v", ids[i], n.name, err))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%03d", prefix, i)
		next <- i
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		c.t.Fatalf("%d starts failed, first: %s", len(errs), errs[0])
	}
	return ids
}

// waitDone waits until every run of ids has finished and returns the time
// the last one finished. A run still unfinished after bound fails the test
// with the state of each one.
func (c *cluster) waitDone(swarm string, ids []string, bound time.Duration) time.Time {
	c.t.Helper()
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	deadline := time.Now().Add(bound)
	for {
		runs, err := c.db.List(c.ctx, store.Filter{Swarm: swarm})
		if err != nil {
			c.t.Fatal(err)
		}
		var last time.Time
		var open []string
		for _, r := range runs {
			if !want[r.ID] {
				continue
			}
			if !r.State.Terminal() {
				open = append(open, fmt.Sprintf("%s %s owner %q epoch %d seq %d", r.ID, r.State, r.Owner, r.Epoch, r.LastSeq))
				continue
			}
			if r.UpdatedAt.After(last) {
				last = r.UpdatedAt
			}
		}
		if len(open) == 0 {
			return last
		}
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, n := range c.nodes {
				fmt.Fprintf(&logs, "--- %s\n%s", n.name, tail(n.Log(), 2000))
			}
			c.t.Fatalf("%d run(s) stuck after %s, first: %s\n%s", len(open), bound, strings.Join(open[:min(5, len(open))], "; "), logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// heldBy lists the unfinished runs of ids leased to n, with the last
// sequence number of each.
func (c *cluster) heldBy(n *node, ids []string) map[string]int64 {
	c.t.Helper()
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	running, err := c.db.List(c.ctx, store.Filter{State: store.Running})
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range running {
		if want[r.ID] && n.owns(r.Owner) {
			out[r.ID] = r.LastSeq
		}
	}
	return out
}

// continued returns, for each run of held, how long after t0 the run's new
// owner first wrote to it: the first record after its held sequence number
// that was stamped after dead, when the killed node was known to be dead.
// A run the killed node itself finished is left out: its last commit was
// on the wire when it died and reached the database after held was read,
// so no other node had anything to continue. It must really be finished.
func (c *cluster) continued(held map[string]int64, t0, dead time.Time) []time.Duration {
	c.t.Helper()
	var out []time.Duration
	for id, seq := range held {
		recs, err := c.db.Read(c.ctx, id, seq, 0)
		if err != nil {
			c.t.Fatal(err)
		}
		first, ok := firstAfter(recs, dead)
		if !ok {
			run, err := c.db.Get(c.ctx, id)
			if err != nil {
				c.t.Fatal(err)
			}
			if run.State == store.Running || len(recs) == 0 {
				c.t.Fatalf("run %s: nothing written by another node after seq %d", id, seq)
			}
			c.t.Logf("run %s: finished by the killed node's last commit, which landed after the kill", id)
			continue
		}
		out = append(out, first.Sub(t0))
	}
	slices.Sort(out)
	return out
}

// firstAfter returns the time of the first of recs stamped after dead. The
// killed node's own last commit can follow the sequence number read after
// the kill (it was in flight and reached the database later), but the node
// stamped it before it died; counting it made failover times negative.
func firstAfter(recs []store.Record, dead time.Time) (time.Time, bool) {
	for _, r := range recs {
		if r.Time.After(dead) {
			return r.Time, true
		}
	}
	return time.Time{}, false
}

// metric reads one counter of a node's /metrics.
func (c *cluster) metric(n *node, name string) int64 {
	c.t.Helper()
	res, err := c.client.Get(n.URL + "/metrics")
	if err != nil {
		c.t.Fatalf("%s metrics: %v", n.name, err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				c.t.Fatalf("%s %s: %q", n.name, name, v)
			}
			return x
		}
	}
	c.t.Fatalf("%s: no metric %s", n.name, name)
	return 0
}

// types lists the record types of a run's journal, in order: the
// reference journal of a run of its shape.
func (c *cluster) types(id string) []string {
	c.t.Helper()
	recs, err := c.db.Read(c.ctx, id, 0, 0)
	if err != nil {
		c.t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Type
	}
	return out
}

// checkJournals asserts that every run of ids completed with its answer
// and that its journal is exactly the reference one: the same record
// types in the same order, contiguous sequence numbers, each key once.
func (c *cluster) checkJournals(ids []string, ref []string) {
	c.t.Helper()
	bad := 0
	for _, id := range ids {
		r, err := c.db.Get(c.ctx, id)
		if err != nil {
			c.t.Fatal(err)
		}
		recs, err := c.db.Read(c.ctx, id, 0, 0)
		if err != nil {
			c.t.Fatal(err)
		}
		types := make([]string, len(recs))
		keys := map[string]bool{}
		ok := r.State == store.Completed && string(r.Result) == `"booked"`
		var toolErr string
		for i, rec := range recs {
			types[i] = rec.Type
			ok = ok && rec.Seq == int64(i+1) && !keys[rec.Key]
			keys[rec.Key] = true
			if rec.Type == "tool_result" {
				// A tool that failed (a timeout, a non-zero exit) is an
				// error result the model reasons about: a journal of the
				// right shape, but the call's effect may be missing.
				var res struct {
					Output  string `json:"output"`
					IsError bool   `json:"is_error"`
				}
				_ = json.Unmarshal(rec.Data, &res)
				if res.IsError {
					ok, toolErr = false, res.Output
				}
			}
		}
		if ok && slices.Equal(types, ref) {
			continue
		}
		if bad++; bad <= 3 {
			if toolErr != "" {
				toolErr = "; its tool failed: " + toolErr
			}
			c.t.Errorf("run %s: %s %s, journal %v, want %v%s", id, r.State, r.Result, types, ref, toolErr)
		}
	}
	if bad > 3 {
		c.t.Errorf("… %d runs in all with a wrong journal", bad)
	}
}

// checkEffects asserts that each tool call had its side effect exactly
// once, and returns how many invocations were repeats (a call re-run on
// another node because its result was not journaled before the crash).
func (c *cluster) checkEffects(runs int) (repeats int) {
	c.t.Helper()
	effects := lines(c.t, filepath.Join(c.dir, "effects.log"))
	seen := map[string]int{}
	for _, e := range effects {
		seen[e]++
	}
	for e, k := range seen {
		if k > 1 {
			c.t.Errorf("side effect %d times: %s", k, e)
		}
	}
	if len(seen) != runs {
		c.t.Errorf("%d distinct side effects, want one per run: %d", len(seen), runs)
	}
	return len(lines(c.t, filepath.Join(c.dir, "invocations.log"))) - len(effects)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestClusterChaosPostgres runs swarms on three `swarm serve` nodes against
// one PostgreSQL and measures, in one run:
//
//   - throughput of 200 two-turn swarms on one node, then on three;
//   - chaos: three rounds of 200 runs in flight, in each one node SIGKILLed
//     at a random point and replaced: every run completes exactly once,
//     with the journal of a clean run and each side effect once, and the
//     time from the kill to the dead node's runs continuing elsewhere;
//   - fencing: a node SIGSTOPped with 200 runs in flight until its runs
//     have moved, then SIGCONTed: its late appends are rejected, it lets
//     its runs go, and it goes on serving.
//
// The seed of the random points is logged; SWARM_CHAOS_SEED replays one.
func TestClusterChaosPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster chaos test: skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := newCluster(t, ctx)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SWARM_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SWARM_CHAOS_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (SWARM_CHAOS_SEED replays it)", seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	const perRound = 200
	var all []string

	// Throughput: one node, then three.
	c.start("node-1")
	t0 := time.Now()
	ids := c.submit("pair", "one", perRound)
	oneNode := c.waitDone("pair", ids, 2*time.Minute).Sub(t0)
	all = append(all, ids...)
	ref := c.types(ids[0])
	c.start("node-2")
	c.start("node-3")
	t0 = time.Now()
	ids = c.submit("pair", "three", perRound)
	threeNodes := c.waitDone("pair", ids, 2*time.Minute).Sub(t0)
	all = append(all, ids...)

	// Chaos: SIGKILL one node at a random point of each round.
	var firsts, alls []time.Duration
	taken := 0
	for round := range 3 {
		ids := c.submit("slow", fmt.Sprintf("kill%d", round), perRound)
		all = append(all, ids...)
		time.Sleep(time.Duration(rng.Int64N(int64(700 * time.Millisecond))))
		victim := c.nodes[rng.IntN(len(c.nodes))]
		if err := victim.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		<-victim.Exited
		dead := time.Now()
		c.remove(victim)
		held := c.heldBy(victim, ids)
		c.start(fmt.Sprintf("node-%d", 4+round))
		c.waitDone("slow", ids, 90*time.Second)
		if len(held) == 0 {
			t.Logf("round %d: %s held no unfinished run when killed", round, victim.name)
			continue
		}
		d := c.continued(held, killed, dead)
		if len(d) == 0 {
			t.Logf("round %d: %s finished the runs it held as it died", round, victim.name)
			continue
		}
		taken += len(d)
		firsts = append(firsts, d[0])
		alls = append(alls, d[len(d)-1])
		t.Logf("round %d: SIGKILL %s holding %d unfinished runs; first continued elsewhere after %s, all after %s",
			round, victim.name, len(held), d[0].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
	if taken == 0 {
		t.Fatal("no killed node held an unfinished run: the chaos rounds proved nothing")
	}

	// Fencing: SIGSTOP a node past its lease, then SIGCONT it. Its drivers
	// wake with appends to make, which the store rejects, unless the node
	// notices first that its lease renewal is overdue and lets go without
	// writing (a renewal in flight at the SIGSTOP times out on SIGCONT).
	// That is safe too but proves nothing of the store, so the round is
	// tried up to three times for late appends to be rejected.
	var victim *node
	for attempt := range 3 {
		ids := c.submit("slow", fmt.Sprintf("stop%d", attempt), perRound)
		all = append(all, ids...)
		time.Sleep(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))
		victim = c.nodes[rng.IntN(len(c.nodes))]
		fenced0, lost0 := c.metric(victim, "swarm_appends_fenced_total"), c.metric(victim, "swarm_leases_lost_total")
		if err := victim.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		held := c.heldBy(victim, ids)
		// Its runs move to the other nodes once its lease expires.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if len(c.heldBy(victim, ids)) == 0 {
				break
			}
			if time.Now().After(deadline) {
				_ = victim.Cmd.Process.Signal(syscall.SIGCONT)
				t.Fatalf("the runs of a stopped node did not move in 30s")
			}
		}
		moved := time.Since(stopped)
		if err := victim.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		c.waitDone("slow", ids, 90*time.Second)
		// It lets go: it drives nothing once the others have finished its
		// runs.
		for deadline := time.Now().Add(20 * time.Second); c.metric(victim, "swarm_runs_driven") != 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s still drives runs after SIGCONT", victim.name)
			}
		}
		fenced := c.metric(victim, "swarm_appends_fenced_total") - fenced0
		lost := c.metric(victim, "swarm_leases_lost_total") - lost0
		t.Logf("fencing: SIGSTOP %s holding %d runs; they moved after %s; after SIGCONT %d late appends rejected, %d leases let go",
			victim.name, len(held), moved.Round(time.Millisecond), fenced, lost)
		if len(held) > 0 && lost == 0 {
			t.Fatalf("%s held %d runs when stopped and let none go", victim.name, len(held))
		}
		if fenced > 0 {
			break
		}
		var other []string
		for _, l := range strings.Split(victim.Log(), "\n") {
			if !strings.Contains(l, `msg="run interrupted"`) {
				other = append(other, l)
			}
		}
		t.Logf("%s let go without a late append; its log, but for interrupted runs:\n%s", victim.name, tail(strings.Join(other, "\n"), 1500))
		if attempt == 2 {
			t.Fatalf("in three rounds no late append of a stopped node reached the store to be rejected")
		}
	}
	// And it goes on serving.
	c.nodes = []*node{victim}
	ids = c.submit("pair", "after", 5)
	c.waitDone("pair", ids, 30*time.Second)
	all = append(all, ids...)

	c.checkJournals(all, ref)
	repeats := c.checkEffects(len(all))
	for _, n := range c.started {
		if strings.Contains(n.Log(), "panic") {
			t.Errorf("%s panicked: %s", n.name, tail(n.Log(), 4000))
		}
	}

	if t.Failed() {
		return
	}
	t.Logf("throughput, two-turn swarms, %d runs: 1 node %.0f runs/s (%s), 3 nodes %.0f runs/s (%s), ratio %.2f",
		perRound, perRound/oneNode.Seconds(), oneNode.Round(time.Millisecond),
		perRound/threeNodes.Seconds(), threeNodes.Round(time.Millisecond), oneNode.Seconds()/threeNodes.Seconds())
	t.Logf("SIGKILL to runs continuing elsewhere (lease %s): first median %s, all median %s", clusterLease,
		median(firsts).Round(time.Millisecond), median(alls).Round(time.Millisecond))
	t.Logf("%d runs checked: 0 lost, 0 duplicated journal steps, %d side effects once each (%d tool invocations repeated after crashes, answered from the idempotency key)",
		len(all), len(all), repeats)
}

// TestFailoverTimeCountsNewOwnerOnly: the failover time of a run is that
// of the new owner's first record, not of the killed node's last commit
// that reached the database after the kill.
func TestFailoverTimeCountsNewOwnerOnly(t *testing.T) {
	killed := time.Now()
	dead := killed.Add(5 * time.Millisecond)
	recs := []store.Record{
		{Seq: 7, Key: "t1/tool/a", Time: killed.Add(-3 * time.Millisecond)}, // the victim's, committed late
		{Seq: 8, Key: "t1/tool/b", Time: killed.Add(2100 * time.Millisecond)},
		{Seq: 9, Key: "t1/done", Time: killed.Add(2200 * time.Millisecond)},
	}
	first, ok := firstAfter(recs, dead)
	if !ok || first.Sub(killed) != 2100*time.Millisecond {
		t.Fatalf("failover after %s (found %v), want 2.1s: the new owner's first record", first.Sub(killed), ok)
	}
	if _, ok := firstAfter(recs[:1], dead); ok {
		t.Fatal("a journal with only the victim's late commit counted as continued")
	}
}

// sseEvent is one journal event of a stream: its id and type.
type sseEvent struct {
	seq int64
	typ string
}

// stream follows a run's events on a node from after, until the run ends
// or stop events have arrived (stop 0: no limit).
func (c *cluster) stream(n *node, id string, after int64, stop int) []sseEvent {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", n.URL+"/v1/runs/"+id+"/events", nil)
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("events of %s on %s: %v", id, n.name, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		c.t.Fatalf("events of %s on %s: status %d", id, n.name, res.StatusCode)
	}
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.seq, err = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			if err != nil {
				c.t.Fatalf("event id %q", line)
			}
		case strings.HasPrefix(line, "event: "):
			cur.typ = strings.TrimPrefix(line, "event: ")
		case line == "":
			if cur.seq == 0 { // a live-only event (delta) or a comment
				cur = sseEvent{}
				continue
			}
			out = append(out, cur)
			if cur.typ == "completed" || cur.typ == "failed" || cur.typ == "stopped" || len(out) == stop {
				return out
			}
			cur = sseEvent{}
		}
	}
	c.t.Fatalf("events of %s on %s ended after %v: %v", id, n.name, out, sc.Err())
	return nil
}

// TestClusterEventsAcrossNodesPostgres: a run driven by one node is
// followed over SSE on a second node, and the stream, cut, resumes with
// Last-Event-ID on a third: the two parts are the run's journal, each
// event once, in order.
func TestClusterEventsAcrossNodesPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newCluster(t, ctx)
	a := c.start("a")
	b := c.start("b")
	d := c.start("c")
	c.nodes = []*node{a} // the run starts on a, which drives it throughout
	id := c.submit("slow", "followed", 1)[0]
	first := c.stream(b, id, 0, 2)
	if r, err := c.db.Get(ctx, id); err != nil || !a.owns(r.Owner) {
		t.Fatalf("run %s after two events: owner %q (%v), want node a", id, r.Owner, err)
	}
	rest := c.stream(d, id, first[len(first)-1].seq, 0)
	c.waitDone("slow", []string{id}, 30*time.Second)

	recs, err := c.db.Read(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := append(first, rest...)
	if len(got) != len(recs) {
		t.Fatalf("streamed %v, journal has %d records", got, len(recs))
	}
	for i, r := range recs {
		if got[i].seq != r.Seq || got[i].typ != r.Type {
			t.Fatalf("event %d streamed %+v, journal %d %s", i, got[i], r.Seq, r.Type)
		}
	}
	// Nodes b and c served the stream from the store's notifications.
	for _, n := range []*node{b, d} {
		if c.metric(n, "swarm_store_notifications_total") == 0 {
			t.Errorf("node %s received no store notification", n.name)
		}
	}
}

// TestServeDatabaseRestartPostgres starts a node before its database is up:
// it waits for it. Then it restarts the database under the node with runs
// in flight: /readyz turns 503 while the database is down and 200 once it
// is back, the node reconnects, and every run completes once with the
// journal of a clean run. The database is a server of the test's own, so
// that the shared one stays up for the other tests.
func TestServeDatabaseRestartPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("database restart test: skipped with -short")
	}
	pg := pgtest.Private(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := newClusterAt(t, ctx, pg.URL()+"&pool_max_conns=8")
	pg.Stop()
	// The database starts once the node says it waits for it.
	waiting := make(chan struct{})
	var once sync.Once
	started := make(chan error, 1)
	go func() {
		select {
		case <-waiting:
			started <- pg.TryStart()
		case <-ctx.Done():
			started <- ctx.Err()
		}
	}()
	n := c.startWatched("node", func(line string) {
		if strings.Contains(line, "waiting up to 1m0s for the store") {
			once.Do(func() { close(waiting) })
		}
	})
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	refID := c.submit("slow", "ref", 1)
	c.waitDone("slow", refID, 30*time.Second)
	ref := c.types(refID[0])

	ids := c.submit("slow", "restart", 50)
	time.Sleep(400 * time.Millisecond)
	pg.Stop()
	down := time.Now()
	for deadline := time.Now().Add(20 * time.Second); c.ready(n) == http.StatusOK; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("/readyz still 200 with the database down")
		}
	}
	time.Sleep(time.Second)
	pg.Start()
	restarted := time.Now()
	for deadline := time.Now().Add(30 * time.Second); c.ready(n) != http.StatusOK; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 30s after the database came back: %s", tail(n.Log(), 2000))
		}
	}
	ready := time.Since(restarted)
	last := c.waitDone("slow", ids, 90*time.Second)
	c.checkJournals(append(refID, ids...), ref)
	c.checkEffects(len(ids) + 1)
	t.Logf("database down %s; /readyz 200 again %s after it came back; all %d runs done %s after it came back",
		restarted.Sub(down).Round(time.Millisecond), ready.Round(time.Millisecond), len(ids), last.Sub(restarted).Round(time.Millisecond))
}

// ready is the status of a node's /readyz.
func (c *cluster) ready(n *node) int {
	res, err := c.client.Get(n.URL + "/readyz")
	if err != nil {
		c.t.Fatalf("%s readyz: %v", n.name, err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}
