package swarm_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store/memory"
)

// Fork re-runs a finished run from its second round: the first round (a
// tool call and its result) is reused from the journal, the rest runs
// again.
func ExampleRuntime_Fork() {
	calls := 0
	lookup := swarm.NewTool("lookup", "Looks a word up", func(context.Context, struct{}) (string, error) {
		calls++
		return "a small bird", nil
	})
	s := swarm.Define[string, string]("define", "Defines words", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Define {{.Input}}.", Tools: []swarm.Tool{lookup}}
	})
	m := scripted.New(scripted.Script{"define": {
		scripted.Tools(scripted.CallTool("lookup", map[string]any{})),
		scripted.Text("a wren is a small bird"),
	}})
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	_, run, err := s.Run(ctx, rt, "wren")
	if err != nil {
		fmt.Println(err)
		return
	}
	id, err := rt.Fork(ctx, run.ID(), "t2/model") // the second round's model call
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := rt.Wait(ctx, id)
	fmt.Println(st.State, string(st.Result))
	fmt.Println("lookup ran", calls, "time")
	// Output:
	// completed "a wren is a small bird"
	// lookup ran 1 time
}
