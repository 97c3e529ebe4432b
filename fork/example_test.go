package fork_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/fork"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store/memory"
)

// Edits forks a run with a tool's result replaced: the tool does not
// run again, and the model answers from the edited result.
func ExampleEdits() {
	calls := 0
	lookup := swarm.NewTool("lookup", "Looks a word up", func(context.Context, struct{}) (string, error) {
		calls++
		return "a small bird", nil
	})
	s := swarm.Define[string, string]("define", "Defines words", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Define {{.Input}}.", Tools: []swarm.Tool{lookup}}
	})
	// The model looks the word up, then answers from what the lookup said.
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role != model.RoleTool {
			return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{}`)}}}}, nil
		}
		return &model.Response{Message: model.Message{Content: "a wren is " + last.Content}}, nil
	})
	rt, _ := swarm.New(swarm.Config{Store: memory.New(), Model: m})
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	out, run, err := s.Run(ctx, rt, "wren")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.(swarm.Completed[string]).Output)
	id, err := rt.Fork(ctx, run.ID(), "t1/tool/c1", fork.Edits(fork.Edit{Key: "t1/tool/c1", Output: "a songbird"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := rt.Wait(ctx, id)
	fmt.Println(st.State, string(st.Result))
	fmt.Println("lookup ran", calls, "time")
	// Output:
	// a wren is a small bird
	// completed "a wren is a songbird"
	// lookup ran 1 time
}
