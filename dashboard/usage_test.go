package dashboard_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/dashboard"
	"github.com/swarmrt/swarm/fork"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
	"github.com/swarmrt/swarm/team"
)

// spend is a scripted step that reports in input and out output tokens.
func spend(s scripted.Step, in, out int64) scripted.Step {
	s.Usage = model.Usage{InputTokens: in, OutputTokens: out}
	return s
}

var treeRowRE = regexp.MustCompile(`<th scope="row">Tree</th><td class="num">(\d+)</td><td class="num">([^<]+)</td><td class="num">([^<]+)</td>`)

// treeRow returns the calls, input and output tokens of the Tree row of a
// run page's usage table.
func treeRow(t *testing.T, body string) string {
	t.Helper()
	m := treeRowRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no Tree row in the usage table")
	}
	return m[1] + " calls, " + m[2] + " in, " + m[3] + " out"
}

// numCell reports whether body has a number cell holding text.
func numCell(body, text string) bool { return strings.Contains(body, `<td class="num">`+text+`</td>`) }

// TestTeamUsageIsTheSameEverywhere: a team's usage is its lead's and its
// teammates', in the runs list, on the teams page and in the run page's
// Tree row alike.
func TestTeamUsageIsTheSameEverywhere(t *testing.T) {
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{
		"lead":  {spend(scripted.Text("hello"), 100, 10)},
		"alice": {spend(scripted.Text("parser written"), 200, 20)},
	})
	ts := serveDashboard(t, rt, dashboard.Options{})
	crew := team.DefineTeam("crew", "A lead and a coder", team.TeamSpec{
		Lead:    &swarm.Agent{Name: "lead"},
		Members: []team.Teammate{{Name: "alice", Role: "coder", Prompt: "Write the parser."}},
	})
	ctx := swarmtest.Context(t)
	tr, err := crew.Start(ctx, rt, "", swarm.WithID("crew-1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Say(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	waitIdle(ctx, t, tr, "alice")
	b := newBrowser(t, ts.URL)
	if p := b.get("/ui/"); !numCell(p.body, "330") {
		t.Errorf("the runs list does not show the team's 330 tokens")
	}
	if p := b.get("/ui/teams"); !numCell(p.body, "330") {
		t.Errorf("the teams page does not show the team's 330 tokens")
	}
	if got := treeRow(t, b.get("/ui/runs/crew-1").body); got != "2 calls, 300 in, 30 out" {
		t.Errorf("run page Tree row: %s, want 2 calls, 300 in, 30 out", got)
	}
	if got := treeRow(t, b.get("/ui/runs/crew-1/side").body); got != "2 calls, 300 in, 30 out" {
		t.Errorf("side fragment Tree row: %s, want 2 calls, 300 in, 30 out", got)
	}
}

// waitIdle waits until member is idle, for a while.
func waitIdle(ctx context.Context, t *testing.T, tr *team.TeamRun, member string) {
	t.Helper()
	deadline := time.Now().Add(swarmtest.Timeout)
	for {
		ms, err := tr.Roster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.Name == member && m.State == team.MemberIdle {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not idle after %v: %+v", member, swarmtest.Timeout, ms)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestForkUsageIsOnlyItsOwn: a fork is charged the calls it made, not the
// steps it reused from its origin, in the runs list, the run tree and the
// Tree row.
func TestForkUsageIsOnlyItsOwn(t *testing.T) {
	charge := swarm.NewTool("charge", "charges", func(context.Context, struct{}) (string, error) { return "charged", nil })
	shop := swarm.Define[string, string]("shop", "", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Sell {{.Input}}.", Tools: []swarm.Tool{charge}}
	})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"shop": {
		spend(scripted.Tools(scripted.CallTool("charge", map[string]any{})), 1000, 100),
		spend(scripted.Text("sold"), 40, 4),
	}}, shop)
	ts := serveDashboard(t, rt, dashboard.Options{})
	start(t, rt, "shop", "sale-1")
	ctx := swarmtest.Context(t)
	id, err := rt.Fork(ctx, "sale-1", "t2/model", fork.ID("sale-2"))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, id); err != nil || st.State != swarm.StateCompleted {
		t.Fatalf("fork: %+v %v", st, err)
	}
	b := newBrowser(t, ts.URL)
	rows := b.get("/ui/?fragment=rows").body
	i := strings.Index(rows, `title="sale-2"`)
	if i < 0 {
		t.Fatalf("the fork is not listed:\n%s", rows)
	}
	if row := rows[i:]; !numCell(row[:strings.Index(row, "</tr>")], "44") {
		t.Errorf("the fork's row does not show its own 44 tokens: %s", row[:strings.Index(row, "</tr>")])
	}
	p := b.get("/ui/runs/sale-2")
	if got := treeRow(t, p.body); got != "1 calls, 40 in, 4 out" {
		t.Errorf("fork's Tree row: %s, want 1 calls, 40 in, 4 out", got)
	}
	if !strings.Contains(p.body, "44 tok") {
		t.Errorf("the fork's node in the run tree does not show its own 44 tokens")
	}
	// The origin keeps what it spent.
	if got := treeRow(t, b.get("/ui/runs/sale-1").body); got != "2 calls, 1.0k in, 104 out" {
		t.Errorf("origin's Tree row: %s, want 2 calls, 1.0k in, 104 out", got)
	}
}
