package network_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/internal/servetest"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/network"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
)

// toolScript is a command tool with a side effect: it appends its
// idempotency key to $CALL_LOG, sleeps as long as $SLEEP_FILE says (if it
// exists) and answers with the node's name.
const toolScript = `#!/bin/sh
echo "$SWARM_IDEMPOTENCY_KEY" >> "$CALL_LOG"
sleep "$(cat "$SLEEP_FILE" 2>/dev/null || echo 0)"
echo "$NODE_NAME: in stock"
`

// providerNode starts `swarm serve` sharing one command tool, name, with
// tags, as node id, following peers.
func providerNode(t testing.TB, id, name string, tags []string, peers []string, extraEnv ...string) (*servetest.Process, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool.sh"), []byte(toolScript), 0o755); err != nil {
		t.Fatal(err)
	}
	ps, _ := json.Marshal(peers)
	ts, _ := json.Marshal(tags)
	y := fmt.Sprintf(`version: 1
tools:
  %s:
    description: The %s of node %s
    command: ["./tool.sh"]
    input_schema: {type: object, properties: {item: {type: string}}, required: [item]}
network:
  id: %s
  peers: %s
  fail_after: 1s
share:
  - tool: %s
    tags: %s
`, name, name, id, id, ps, name, ts)
	if err := os.WriteFile(filepath.Join(dir, "swarm.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "calls.log")
	env := append([]string{"CALL_LOG=" + log, "SLEEP_FILE=" + filepath.Join(dir, "sleep"), "NODE_NAME=" + id}, extraEnv...)
	return servetest.Serve(t, dir, env), dir
}

func lines(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Fields(string(b))
}

// recorder is a model whose answers the test gives, one per call, and
// which records the tools offered at each call.
type recorder struct {
	offered chan []string
	answers chan *model.Response
}

func (r *recorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	var names []string
	for _, d := range req.Tools {
		names = append(names, d.Name)
	}
	select {
	case r.offered <- names:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-r.answers:
		return a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (r *recorder) next(t *testing.T) []string {
	t.Helper()
	select {
	case o := <-r.offered:
		return o
	case <-time.After(30 * time.Second):
		t.Fatal("no model call within 30s")
		return nil
	}
}

func toolCall(id, name, args string) *model.Response {
	return &model.Response{Message: model.Message{Role: model.RoleAssistant,
		ToolCalls: []model.ToolCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}}}
}

// TestProcesses: three swarm serve nodes share tools; a consumer finds
// them by name and by tag through one configured peer, a fourth node's
// tool appears at the consumer's next model call, a SIGKILLed provider's
// capability disappears and a call in flight to it fails over to the
// other provider, and with no provider left the call errors clearly.
func TestProcesses(t *testing.T) {
	p1, dir1 := providerNode(t, "kitchen-1", "check-inventory", []string{"food", "stock"}, nil)
	p2, dir2 := providerNode(t, "kitchen-2", "check-inventory", []string{"food", "stock"}, []string{p1.URL})
	_, _ = providerNode(t, "pantry", "dietary-check", []string{"food", "safety"}, []string{p1.URL})

	consumer, err := network.New(network.Options{ID: "room-service", Peers: []string{p1.URL}, FailAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	rec := &recorder{offered: make(chan []string), answers: make(chan *model.Response)}
	rt, err := swarm.New(swarm.Config{Model: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sw := swarm.Define[string, string]("room-service", "Handles room service orders", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Serve the guest.", Tools: []swarm.Tool{consumer.Catalog(network.Filter{Tags: []string{"food"}})}, MaxTurns: 8}
	})
	if err := rt.Register(sw); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := consumer.Start(ctx, network.StartOptions{Runtime: rt}); err != nil {
		t.Fatal(err)
	}
	reg := consumer.Registry()
	eventually(t, "three offers", func() bool { return reg.Len() == 3 })
	if ps := reg.Providers("check-inventory"); len(ps) != 2 || ps[0].Node != "kitchen-1" || ps[1].Node != "kitchen-2" {
		t.Fatalf("providers of check-inventory: %+v", ps)
	}
	if bt := reg.ByTag("safety"); len(bt) != 1 || bt[0].Name != "dietary-check" || bt[0].Node != "pantry" {
		t.Fatalf("ByTag(safety): %+v", bt)
	}
	qr, err := consumer.Query(ctx, p2.URL, "", "stock")
	if err != nil || len(qr.Capabilities) != 1 || qr.Node.ID != "kitchen-2" {
		t.Fatalf("capability_query: %+v %v", qr, err)
	}

	id, err := rt.Start(ctx, "room-service", json.RawMessage(`"eggs for two"`))
	if err != nil {
		t.Fatal(err)
	}
	// Call 1: the food tools of the three nodes.
	if o := rec.next(t); !slices.Contains(o, "check-inventory") || !slices.Contains(o, "dietary-check") || slices.Contains(o, "warm-bread") {
		t.Fatalf("call 1 offered %v", o)
	}
	// A fourth node joins mid-run, named by no configuration of the
	// consumer: its tool is offered at the next call.
	_, _ = providerNode(t, "bakery", "warm-bread", []string{"food"}, []string{p1.URL})
	eventually(t, "the bakery", func() bool { return len(reg.Providers("warm-bread")) == 1 })
	// The call in flight to kitchen-1 (it sleeps) fails over to kitchen-2
	// when kitchen-1 is killed.
	if err := os.WriteFile(filepath.Join(dir1, "sleep"), []byte("30"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec.answers <- toolCall("c1", "check-inventory", `{"item":"eggs"}`)
	eventually(t, "kitchen-1 to start the call", func() bool { return len(lines(filepath.Join(dir1, "calls.log"))) == 1 })
	if err := p1.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	o := rec.next(t)
	if !slices.Contains(o, "warm-bread") || !slices.Contains(o, "check-inventory") {
		t.Fatalf("call 2 offered %v", o)
	}
	eventually(t, "kitchen-1 removed", func() bool { return len(reg.Providers("check-inventory")) == 1 })
	if got := lines(filepath.Join(dir2, "calls.log")); len(got) != 1 || got[0] != id+"/t1/tool/c1" && !strings.HasSuffix(got[0], "/c1") {
		t.Fatalf("kitchen-2 calls: %v", got)
	}
	// kitchen-2 goes too: check-inventory is offered no more.
	if err := p2.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "kitchen-2 removed", func() bool { return len(reg.Providers("check-inventory")) == 0 })
	rec.answers <- toolCall("c2", "warm-bread", `{"item":"rolls"}`)
	if o := rec.next(t); slices.Contains(o, "check-inventory") || !slices.Contains(o, "warm-bread") {
		t.Fatalf("call 3 offered %v", o)
	}
	rec.answers <- &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "served"}}
	var results []string
	for _, ev := range completedToolResults(t, ctx, rt, id) {
		results = append(results, ev.Output)
	}
	if len(results) != 2 || results[0] != "kitchen-2: in stock" || results[1] != "bakery: in stock" {
		t.Fatalf("tool results %q", results)
	}
	_, err = consumer.Discover("check-inventory").Call(ctx, json.RawMessage(`{"item":"eggs"}`))
	if !errors.Is(err, network.ErrNoProvider) {
		t.Fatalf("a call with no provider: %v", err)
	}
}

// TestConsumerCrash: the consumer (swarm serve on SQLite) is SIGKILLed
// while its run's network call is in flight; restarted on the same store,
// it recovers the run, which re-attaches to the provider's call by its
// idempotency key: the provider's side effect happened once.
func TestConsumerCrash(t *testing.T) {
	p, pdir := providerNode(t, "kitchen", "check-inventory", []string{"food", "stock"}, nil)
	if err := os.WriteFile(filepath.Join(pdir, "sleep"), []byte("3"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	y := fmt.Sprintf(`version: 1
model: scripted:script.yaml
network:
  id: room-service
  peers: [%s]
  fail_after: 1s
swarms:
  room-service:
    instructions: Serve the guest.
    network_tools: [check-inventory]
`, p.URL)
	script := `room-service:
  - tool_calls:
      - {id: c1, name: check-inventory, arguments: {item: eggs}}
  - text: served
`
	for name, body := range map[string]string{"swarm.yaml": y, "script.yaml": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"SWARM_STORE=sqlite:" + filepath.Join(dir, "runs.db")}
	c := servetest.Serve(t, dir, env, "--lease", "1s")
	resp, err := http.Post(c.URL+"/v1/swarms/room-service/runs", "application/json", strings.NewReader(`{"id":"order-1","input":"eggs"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("start: %s", resp.Status)
	}
	log := filepath.Join(pdir, "calls.log")
	eventually(t, "the provider to start the call", func() bool { return len(lines(log)) == 1 })
	if err := c.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.Exited
	c2 := servetest.Serve(t, dir, env, "--lease", "1s")
	var st swarm.Status
	eventually(t, "the recovered run to complete", func() bool {
		resp, err := http.Get(c2.URL + "/v1/runs/order-1?wait=5s")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &st)
		return st.State == swarm.StateCompleted || st.State == swarm.StateFailed
	})
	if st.State != swarm.StateCompleted {
		t.Fatalf("run: %+v\n%s", st, c2.Log())
	}
	if got := lines(log); len(got) != 1 || got[0] != "order-1/t1/tool/c1" {
		t.Fatalf("provider side effects: %v, want one with key order-1/t1/tool/c1", got)
	}
}

// TestPostgresPeers: two swarm serve nodes on one PostgreSQL store, with
// no peer URLs, find each other through the store's node table; when one
// is killed its capability goes.
func TestPostgresPeers(t *testing.T) {
	url := pgtest.URL(t, "pool_max_conns=4")
	env := []string{"SWARM_STORE=" + url}
	a, _ := providerNode(t, "kitchen", "check-inventory", []string{"food"}, nil, env...)
	b, _ := providerNode(t, "pantry", "dietary-check", []string{"food"}, nil, env...)
	status := func(p *servetest.Process) network.Status {
		var st network.Status
		resp, err := http.Get(p.URL + network.PathPeers)
		if err != nil {
			return st
		}
		defer resp.Body.Close()
		_ = json.NewDecoder(resp.Body).Decode(&st)
		return st
	}
	has := func(st network.Status, name string) bool {
		return slices.ContainsFunc(st.Capabilities, func(o network.Offer) bool { return o.Name == name })
	}
	eventually(t, "each node to see the other's capability", func() bool {
		return has(status(a), "dietary-check") && has(status(b), "check-inventory")
	})
	for _, p := range status(b).Peers {
		if p.Source == "config" {
			t.Fatalf("peer %+v is configured; the nodes have no peer URLs", p)
		}
	}
	if err := a.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the killed node's capability to go", func() bool { return !has(status(b), "check-inventory") })
}

// servetestServe starts `swarm serve` in dir and returns its URL.
func servetestServe(t testing.TB, dir string) string { return servetest.Serve(t, dir, nil).URL }

// TestNetworkCommand: swarm network prints a node's shared capabilities,
// peers and the capabilities its peers offer.
func TestNetworkCommand(t *testing.T) {
	p1, _ := providerNode(t, "kitchen", "check-inventory", []string{"food", "stock"}, nil)
	p2, _ := providerNode(t, "pantry", "dietary-check", []string{"food", "safety"}, []string{p1.URL})
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, servetest.Binary(t), append([]string{"network", "--url", p2.URL}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("swarm network: %v\n%s", err, out)
		}
		return string(out)
	}
	var out string
	eventually(t, "the kitchen's capability", func() bool {
		out = run()
		return strings.Contains(out, "check-inventory")
	})
	for _, want := range []string{"node pantry " + p2.URL, "dietary-check tool food,safety -",
		p1.URL + " kitchen up", "check-inventory tool food,stock - kitchen up"} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			found = found || strings.Contains(strings.Join(strings.Fields(l), " "), want)
		}
		if !found {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	var st network.Status
	if err := json.Unmarshal([]byte(run("--json")), &st); err != nil || len(st.Capabilities) != 1 || st.Node.ID != "pantry" {
		t.Fatalf("--json: %+v %v", st, err)
	}
	cmd := exec.Command(servetest.Binary(t), "network", "--url", "http://127.0.0.1:1")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "connection refused") {
		t.Fatalf("unreachable node: %v\n%s", err, out)
	}
}

// TestProviderRestartMidCall: the provider of a shared swarm (swarm serve
// on SQLite) is SIGKILLed during a call and restarted at its address; the
// caller re-attaches by the call's key to the run the provider recovered,
// which is the only run it has.
func TestProviderRestartMidCall(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"swarm.yaml": `version: 1
model: scripted:script.yaml
tools:
  cook:
    description: Cooks until the order is released
    command: ["./cook.sh"]
swarms:
  prepare-meal:
    instructions: Cook {{.Input}}.
    tools: [cook]
share:
  - {swarm: prepare-meal, tags: [food, cooking]}
`,
		"script.yaml": "prepare-meal:\n  - tool_calls: [{name: cook}]\n  - text: salmon, ready\n",
		"cook.sh":     "#!/bin/sh\necho started >> \"$COOK_LOG\"\nwhile [ ! -f \"$COOK_GO\" ]; do sleep 0.05; done\necho cooked\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cookLog, cookGo := filepath.Join(dir, "cook.log"), filepath.Join(dir, "go")
	env := []string{"SWARM_STORE=sqlite:" + filepath.Join(dir, "runs.db"), "COOK_LOG=" + cookLog, "COOK_GO=" + cookGo}
	p := servetest.Serve(t, dir, env, "--addr", addr, "--lease", "1s")

	consumer, err := network.New(network.Options{ID: "room", Peers: []string{p.URL}, FailAfter: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := consumer.Start(ctx, network.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := consumer.Discover("prepare-meal").Call(swarm.WithCallKey(ctx, "order-7", "t1/tool/c1"), json.RawMessage(`{"request":"salmon"}`))
		done <- result{out, err}
	}()
	eventually(t, "the provider's run to be cooking", func() bool { return len(lines(cookLog)) == 1 })
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Exited

	// The provider is removed, and stays away longer than the caller's
	// retry interval (FailAfter/3), before it comes back: the caller,
	// with no provider left, waits for it (up to FailAfter) rather than
	// failing at once.
	eventually(t, "the provider removed", func() bool { return consumer.Registry().Len() == 0 })
	time.Sleep(3 * time.Second)
	if err := os.WriteFile(cookGo, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p2 := servetest.Serve(t, dir, env, "--addr", addr, "--lease", "1s")
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("the call did not return")
	}
	if r.err != nil || r.out != "salmon, ready" {
		t.Fatalf("call: %q %v\n%s", r.out, r.err, p2.Log())
	}
	resp, err := http.Get(p2.URL + "/v1/runs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Runs []swarm.Status `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Runs) != 1 || list.Runs[0].ID != network.RunID("prepare-meal", "order-7/t1/tool/c1") {
		t.Fatalf("provider runs: %+v %v", list, err)
	}
}
