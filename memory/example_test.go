package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/memory"
	"github.com/swarmrt/swarm/model/scripted"
	storemem "github.com/swarmrt/swarm/store/memory"
)

// A support agent remembers each customer's preferences across runs: its
// bank is named per customer, from the value "user" each run is started
// with. The first run finds nothing and writes; the second finds it. (On a
// SQLite or PostgreSQL store, the second run may be in another process.)
func ExampleMemory() {
	st := storemem.New()
	mem := &memory.Memory{Store: st, Bank: "user:{user}"}
	support := swarm.Define[string, string]("support", "Customer support", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Look up what you know of the customer; remember their preferences.", Tools: mem.Tools()}
	})
	// A scripted model stands in for a real one: every run searches, then
	// writes, then answers.
	m := scripted.New(scripted.Script{"support": {
		scripted.Tools(scripted.CallTool("memory_search", map[string]any{"query": "seat"})),
		scripted.Tools(scripted.CallTool("memory_write", map[string]any{"key": "preferences/seat", "text": "aisle seat"})),
		scripted.Text("done"),
	}})
	rt, _ := swarm.New(swarm.Config{Store: st, Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 2 {
		_, run, err := support.Run(ctx, rt, "book a flight", swarm.WithValues(map[string]any{"user": "alice"}))
		if err != nil {
			fmt.Println(err)
			return
		}
		for ev := range run.Events(ctx, 0) {
			if ev.Type == swarm.EventToolResult && ev.Tool == "memory_search" {
				fmt.Printf("run %d found: %s\n", i+1, ev.Output)
			}
		}
	}
	hits, _ := mem.Search(ctx, "user:alice", "which seat", 1)
	fmt.Println(hits[0].Key, "=", hits[0].Text)
	// Output:
	// run 1 found: {"bank":"user:alice","hits":[]}
	// run 2 found: {"bank":"user:alice","hits":[{"key":"preferences/seat","text":"aisle seat","score":0.4521}]}
	// preferences/seat = aisle seat
}
