package scripted_test

import (
	"context"
	"fmt"

	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
)

func Example() {
	m := scripted.New(scripted.Script{
		"planner": {
			scripted.Tools(scripted.CallTool("handoff_to_weather", map[string]string{"request": "weekend forecast"})),
			scripted.Text(`{"activity": "hiking"}`),
		},
		"weather": {
			scripted.Fail(model.KindRateLimited),
			scripted.Text("Sunny, 22C"),
		},
	})
	ctx := context.Background()

	resp, _ := m.Generate(ctx, &model.Request{RunID: "run-1", Agent: "planner", Call: 0})
	tc := resp.Message.ToolCalls[0]
	fmt.Println(tc.ID, tc.Name, string(tc.Arguments))

	_, err := m.Generate(ctx, &model.Request{RunID: "run-1", Agent: "weather", Call: 0})
	fmt.Println(err, model.KindOf(err).Retryable())

	resp, _ = m.Generate(ctx, &model.Request{RunID: "run-1", Agent: "weather", Call: 1})
	fmt.Println(resp.Message.Content)

	fmt.Println(m.Unconsumed("run-1"))
	// Output:
	// call_planner_0_0 handoff_to_weather {"request":"weekend forecast"}
	// model scripted:weather: rate_limited: scripted failure at call 1 true
	// Sunny, 22C
	// map[planner:1]
}

func ExampleParse() {
	script, err := scripted.Parse([]byte(`
weather:
  - text: "Sunny, 22C"
    delay: 150ms
  - error: teapot
`))
	fmt.Println(script, err)
	// Output:
	// map[] line 5: agent "weather" step 1: unknown error kind "teapot" (want one of rate_limited, server_error, timeout, connection, auth, bad_request, context_too_long, invalid_output, refused, other)
}
