package team_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/team"
)

// A lead spawns a teammate (without a prompt, it waits for mail); the user
// mails the teammate, which mails the lead; the user reads the lead's inbox
// and the roster. Everything is kept in the store.
func ExampleTeam() {
	ctx := context.Background()
	script := scripted.Script{
		"lead": {
			scripted.Tools(scripted.CallTool("spawn_teammate", map[string]string{"name": "alice", "role": "coder"})),
			scripted.Text("alice is on it."),
		},
		"alice": {
			scripted.Tools(scripted.CallTool("send_message", map[string]string{"to": "lead", "content": "The parser is done."})),
			scripted.Text("Reported to the lead."),
		},
	}
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: scripted.New(script)})
	defer rt.Close()
	crew := team.DefineTeam("crew", "A lead and its teammates", team.TeamSpec{
		Lead: &swarm.Agent{Name: "lead", Instructions: "Lead the team."},
	})
	tr, err := crew.Start(ctx, rt, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	reply, _ := tr.Say(ctx, "Have a coder write the parser.")
	fmt.Println("lead:", reply)
	// The user mails a teammate directly; alice wakes and mails the lead.
	if _, err := tr.Send(ctx, "alice", "Report to the lead when the parser is done."); err != nil {
		fmt.Println(err)
		return
	}
	// Wait until alice has reported (a bounded wait: the example's output
	// depends on it).
	for i := 0; i < 500; i++ {
		if mails, _ := tr.Inbox(ctx, "lead"); len(mails) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mails, _ := tr.Inbox(ctx, "lead")
	for _, m := range mails {
		fmt.Printf("inbox: [%s] %s: %s\n", m.Type, m.From, m.Content)
	}
	members, _ := tr.Roster(ctx)
	for _, m := range members {
		fmt.Printf("%s (%s)\n", m.Name, m.Role)
	}
	// Output:
	// lead: alice is on it.
	// inbox: [message] alice: The parser is done.
	// lead (lead)
	// alice (coder)
}
