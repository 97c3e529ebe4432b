// Command team plays the "agent teams" scenario end to end: a lead
// spawns alice (coder) and bob (tester), alice mails bob, bob reports to
// the lead, the lead checks its inbox and broadcasts a status update, and
// finally shuts its teammates down through the shutdown protocol. Every
// message, lifecycle change and protocol request is kept in the store.
//
//	go run ./examples/team
//
// Offline it plays a script; with SWARM_MODEL, OPENAI_API_KEY or
// ANTHROPIC_API_KEY set, a real model leads the same team.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/examples/internal/demo"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/team"
)

var crew = team.DefineTeam("crew", "A lead that spawns and coordinates persistent teammates", team.TeamSpec{
	Lead: &swarm.Agent{Name: "lead", Instructions: "You lead a software team. Spawn teammates with spawn_teammate, " +
		"talk to them with send_message and broadcast, and answer the user with what your team did. " +
		"Mail from your teammates arrives as <inbox> messages."},
	Template: team.Teammate{Instructions: "You are {{.Name}}, the {{.Role}} of a team led by {{.Lead}}. " +
		"Mail arrives as <inbox> messages; answer teammates with send_message. When a shutdown_request arrives, " +
		"approve it with shutdown_response. Finish each piece of work with a one-line summary."},
})

// The user's prompts: seed 002's "Try it", then a shutdown.
var prompts = []string{
	"Spawn alice (coder) and bob (tester). Have alice send bob a message.",
	"Check the lead inbox for any messages",
	`Broadcast "status update: phase 1 complete" to all teammates`,
	"Shut alice and bob down.",
}

var script = scripted.Script{
	"lead": {
		scripted.Tools(scripted.CallTool("spawn_teammate", map[string]string{"name": "bob", "role": "tester"})), // idle until mail comes
		scripted.Tools(scripted.CallTool("spawn_teammate", map[string]string{"name": "alice", "role": "coder", "prompt": "Tell bob the parser is ready for testing."})),
		scripted.Text("alice (coder) and bob (tester) are on the team; alice is telling bob the parser is ready."),
		scripted.Text("bob says: the parser passes all 12 tests."),
		scripted.Tools(scripted.CallTool("broadcast", map[string]string{"content": "status update: phase 1 complete"})),
		scripted.Text("Sent the status update to alice and bob."),
		scripted.Tools(
			scripted.CallTool("shutdown_request", map[string]string{"teammate": "alice", "reason": "phase 1 is done"}),
			scripted.CallTool("shutdown_request", map[string]string{"teammate": "bob", "reason": "phase 1 is done"}),
		),
		scripted.Text("Asked alice and bob to shut down."),
	},
	"alice": {
		scripted.Tools(scripted.CallTool("send_message", map[string]string{"to": "bob", "content": "The parser is ready for testing."})),
		scripted.Text("Told bob the parser is ready."),
		scripted.Text("Noted: phase 1 complete."),
		scripted.Tools(scripted.CallTool("shutdown_response", map[string]any{"request_id": "crew-demo/m4/t1/tool/call_lead_6_0", "approve": true})),
	},
	"bob": {
		scripted.Tools(scripted.CallTool("send_message", map[string]string{"to": "lead", "content": "The parser passes all 12 tests."})),
		scripted.Text("Tested the parser: 12/12 pass."),
		scripted.Text("Noted: phase 1 complete."),
		scripted.Tools(scripted.CallTool("shutdown_response", map[string]any{"request_id": "crew-demo/m4/t1/tool/call_lead_6_1", "approve": true})),
	},
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt, err := demo.Runtime(ctx, script)
	demo.Exit(err)
	defer rt.Close()
	tr, err := crew.Start(ctx, rt, "", swarm.WithID("crew-demo"))
	demo.Exit(err)
	fmt.Fprintln(os.Stderr, "each member is a run of its own; below, each one's journal as it grows:")
	seen := map[string]int64{} // per member run, the last event shown
	for _, p := range prompts {
		fmt.Printf("you> %s\n", p)
		reply, err := tr.Say(ctx, p)
		demo.Exit(err)
		fmt.Printf("lead: %s\n", reply)
		demo.Exit(settle(ctx, tr))
		ms, err := tr.Roster(ctx)
		demo.Exit(err)
		for _, m := range ms {
			seen[m.RunID] = demo.Journal(ctx, os.Stderr, rt, m.RunID, seen[m.RunID])
		}
		roster(ctx, tr)
	}
	reqs, err := tr.Requests(ctx)
	demo.Exit(err)
	for _, q := range reqs {
		fmt.Printf("request %s from %s to %s: %s\n", q.Kind, q.From, q.To, q.State)
	}
}

// settle waits until no teammate is working and none has unread mail.
func settle(ctx context.Context, tr *team.TeamRun) error {
	for {
		ms, err := tr.Roster(ctx)
		if err != nil {
			return err
		}
		busy := false
		for _, m := range ms[1:] {
			if m.State == team.MemberSpawning || m.State == team.MemberWorking || m.State == team.MemberShuttingDown || m.Unread > 0 {
				busy = true
			}
		}
		if !busy {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the team did not settle: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func roster(ctx context.Context, tr *team.TeamRun) {
	ms, err := tr.Roster(ctx)
	demo.Exit(err)
	fmt.Print("   team:")
	for _, m := range ms {
		fmt.Printf(" %s (%s) %s", m.Name, m.Role, m.State)
		if m.Unread > 0 {
			fmt.Printf(" [%d unread]", m.Unread)
		}
		fmt.Print(";")
	}
	fmt.Println()
}
