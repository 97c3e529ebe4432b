package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/model/scripted"
)

// A swarm served over MCP: a client lists it as a tool and calls it.
func ExampleNewServer() {
	greeter := swarm.Define[string, string]("greeter", "Greets people", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Greet {{.Input}}."}
	})
	rt, _ := swarm.New(swarm.Config{Model: scripted.New(scripted.Script{"greeter": {scripted.Text("Hello, Ada!")}})})
	defer rt.Close()
	_ = rt.Register(greeter)

	srv, err := mcp.NewServer(rt, mcp.Options{})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	clientT, serverT := sdk.NewInMemoryTransports()
	ss, _ := srv.Connect(ctx, serverT, nil)
	defer ss.Close()
	cs, _ := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, clientT, nil)
	defer cs.Close()

	tools, _ := cs.ListTools(ctx, nil)
	for _, t := range tools.Tools {
		fmt.Println("tool:", t.Name)
	}
	res, _ := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greeter", Arguments: map[string]any{"input": "Ada"}})
	fmt.Println(res.Content[0].(*sdk.TextContent).Text)
	// Output:
	// tool: greeter
	// tool: resume
	// Hello, Ada!
}

// An MCP server's tools offered to an agent.
func ExampleToolset() {
	server := sdk.NewServer(&sdk.Implementation{Name: "clock", Version: "1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "now", Description: "Tells the time"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "12:00"}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	defer hs.Close()

	ts := &mcp.Toolset{Name: "clock", URL: hs.URL}
	defer ts.Close()
	tools, err := ts.Tools(context.Background())
	if err != nil {
		panic(err)
	}
	agent := &swarm.Agent{Name: "timekeeper", Instructions: "Tell the time.", Tools: tools}
	out, _ := agent.Tools[0].Call(context.Background(), nil)
	fmt.Println(agent.Tools[0].Name(), out)
	// Output: clock__now 12:00
}
