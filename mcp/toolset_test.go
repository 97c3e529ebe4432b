package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// TestMain doubles as an MCP server over stdio when asked, so that toolsets
// can be tested against a real process.
func TestMain(m *testing.M) {
	if os.Getenv("SWARM_TEST_MCP_SERVER") == "1" {
		if err := calcServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "calc server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// calcServer is an MCP server with well-behaved and badly-behaved tools.
func calcServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "calc", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds a and b"}, func(ctx context.Context, _ *sdk.CallToolRequest, in addArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "boom", Description: "Always fails"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return nil, nil, errors.New("boom went the tool")
	})
	sdk.AddTool(s, &sdk.Tool{Name: "die", Description: "Kills the server mid-call"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "calc server: dying on purpose")
		os.Exit(3)
		return nil, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "Answers when cancelled"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(s, &sdk.Tool{Name: "odd.name/x", Description: "A name models cannot use as is"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "odd"}}}, nil, nil
	})
	return s
}

func stdioCalc(name string) *mcp.Toolset {
	return &mcp.Toolset{Name: name, Command: []string{os.Args[0]}, Env: map[string]string{"SWARM_TEST_MCP_SERVER": "1"}}
}

func toolNames(tools []swarm.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name())
	}
	slices.Sort(out)
	return out
}

func byName(t *testing.T, tools []swarm.Tool, name string) swarm.Tool {
	t.Helper()
	for _, tool := range tools {
		if tool.Name() == name {
			return tool
		}
	}
	t.Fatalf("no tool %s in %v", name, toolNames(tools))
	return nil
}

func TestToolsetHTTP(t *testing.T) {
	before := runtime.NumGoroutine()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return calcServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "k1" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	ctx := swarmtest.Context(t)

	ts := &mcp.Toolset{Name: "calc", URL: srv.URL, Headers: map[string]string{"X-Key": "k1"}, Deny: []string{"die", "slow"}}
	tools, err := ts.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := toolNames(tools), []string{"calc__add", "calc__boom", "calc__odd_name_x"}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	add := byName(t, tools, "calc__add")
	if !strings.Contains(string(add.Schema()), `"a"`) || add.Description() != "Adds a and b" {
		t.Errorf("add: schema %s, description %q", add.Schema(), add.Description())
	}
	if out, err := add.Call(ctx, json.RawMessage(`{"a":2,"b":3}`)); err != nil || out != "5" {
		t.Errorf("add: %q %v", out, err)
	}
	if out, err := byName(t, tools, "calc__odd_name_x").Call(ctx, nil); err != nil || out != "odd" {
		t.Errorf("odd: %q %v", out, err)
	}
	if _, err := byName(t, tools, "calc__boom").Call(ctx, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "boom went the tool") {
		t.Errorf("boom: %v", err)
	}
	// Invalid arguments are the server's to refuse, as an error.
	if _, err := add.Call(ctx, json.RawMessage(`{"a":"x"}`)); err == nil {
		t.Error("add with bad arguments: no error")
	}
	if err := ts.Close(); err != nil {
		t.Error(err)
	}

	allow := &mcp.Toolset{Name: "calc", URL: srv.URL, Headers: map[string]string{"X-Key": "k1"}, Allow: []string{"a*", "boom"}, Deny: []string{"boom"}}
	tools, err = allow.Tools(ctx)
	if err != nil || !slices.Equal(toolNames(tools), []string{"calc__add"}) {
		t.Errorf("allow/deny: %v %v", toolNames(tools), err)
	}
	allow.Close()

	noKey := &mcp.Toolset{Name: "calc", URL: srv.URL}
	if _, err := noKey.Tools(ctx); err == nil {
		t.Error("connecting without the header: no error")
	}
	noKey.Close()
	srv.Close()
	checkGoroutines(t, before)
}

func TestToolsetValidate(t *testing.T) {
	for _, ts := range []*mcp.Toolset{
		{},
		{Name: "a b", URL: "http://x"},
		{Name: "x"},
		{Name: "x", URL: "http://x", Command: []string{"y"}},
		{Name: "x", Command: []string{""}},
		{Name: "x", URL: "http://x", Allow: []string{"["}},
		{Name: strings.Repeat("x", 60), URL: "http://x"},
	} {
		if err := ts.Validate(); err == nil {
			t.Errorf("%+v: no error", ts)
		}
		if _, err := ts.Tools(context.Background()); err == nil {
			t.Errorf("%+v: Tools without error", ts)
		}
	}
}

func TestToolsetServerDiesMidCall(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx := swarmtest.Context(t)
	ts := stdioCalc("calc")
	tools, err := ts.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = byName(t, tools, "calc__die").Call(ctx, json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "server is gone") || !strings.Contains(err.Error(), "dying on purpose") {
		t.Fatalf("die: %v", err)
	}
	// The next call starts the server again.
	if out, err := byName(t, tools, "calc__add").Call(ctx, json.RawMessage(`{"a":1,"b":1}`)); err != nil || out != "2" {
		t.Fatalf("add after the server died: %q %v", out, err)
	}
	if err := ts.Close(); err != nil {
		t.Error(err)
	}
	checkGoroutines(t, before)
}

func TestToolsetTimeout(t *testing.T) {
	ctx := swarmtest.Context(t)
	ts := stdioCalc("calc")
	ts.Timeout = 200 * time.Millisecond
	defer ts.Close()
	tools, err := ts.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := byName(t, tools, "calc__slow").Call(ctx, json.RawMessage(`{}`)); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow: %v", err)
	}
	// A slow tool does not cost the session.
	if out, err := byName(t, tools, "calc__add").Call(ctx, json.RawMessage(`{"a":1,"b":2}`)); err != nil || out != "3" {
		t.Fatalf("add after a timeout: %q %v", out, err)
	}
}

// A swarm whose tools come from an MCP server that dies mid-call: the model
// sees an error tool result, the run goes on and completes, and the
// journal keeps every step.
func TestSwarmUsesToolset(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx := swarmtest.Context(t)
	ts := stdioCalc("calc")
	tools, err := ts.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	def := swarm.Define[string, string]("sum", "Adds with a calculator", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Add.", Tools: tools}
	})
	script := scripted.Script{"sum": {
		scripted.Tools(scripted.CallTool("calc__die", map[string]any{})),
		scripted.Tools(scripted.CallTool("calc__add", map[string]any{"a": 20, "b": 22})),
		scripted.Text("the sum is 42"),
	}}
	rt, _ := swarmtest.NewRuntime(t, script, def)
	res, run, err := def.Run(ctx, rt, "20+22")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "the sum is 42" {
		t.Fatalf("result %#v", res)
	}
	var results []swarm.Event
	for _, ev := range swarmtest.Events(t, rt, run.ID()) {
		if ev.Type == swarm.EventToolResult {
			results = append(results, ev)
		}
	}
	if len(results) != 2 || !results[0].IsError || !strings.Contains(results[0].Output, "server is gone") || results[1].IsError || results[1].Output != "42" {
		t.Fatalf("tool results %+v", results)
	}
	swarmtest.AssertJournal(t, rt, run.ID())
	rt.Close()
	if err := ts.Close(); err != nil {
		t.Error(err)
	}
	checkGoroutines(t, before)
}
