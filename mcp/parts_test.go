package mcp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/swarmtest"
)

// An MCP tool's image, audio and embedded PDF reach the model's next call
// as parts of the tool result.
func TestToolsetMediaReachTheModel(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1, 2}, 5000)...)
	wav := []byte("RIFF\x24\x00\x00\x00WAVEfmt ")
	pdf := []byte("%PDF-1.7 a report")
	s := sdk.NewServer(&sdk.Implementation{Name: "charts", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "chart", Description: "Draws a chart"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "sales by month"},
			&sdk.ImageContent{MIMEType: "image/png", Data: png},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: wav},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///reports/q3.pdf", MIMEType: "application/pdf", Blob: pdf}},
		}}, nil, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	defer srv.Close()
	ctx := swarmtest.Context(t)
	ts := &mcp.Toolset{Name: "charts", URL: srv.URL}
	defer ts.Close()
	tools, err := ts.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	def := swarm.Define[string, string]("analyst", "Reads charts", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Analyse.", Tools: tools}
	})
	script := scripted.Script{"analyst": {
		scripted.Tools(scripted.CallTool("charts__chart", nil)),
		{ExpectParts: []scripted.ExpectPart{
			{Type: model.PartImage, MediaType: "image/png", MinBytes: len(png)},
			{Type: model.PartAudio, MediaType: "audio/wav"},
			{Type: model.PartFile, MediaType: "application/pdf", Name: "q3.pdf"},
		}, Text: "sales rise"},
	}}
	rt, _ := swarmtest.NewRuntime(t, script, def)
	res, _, err := def.Run(ctx, rt, "how are sales?")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := res.(swarm.Completed[string]); !ok || c.Output != "sales rise" {
		t.Fatalf("result %#v", res)
	}
}

// A swarm's result parts come back from tools/call as MCP content after
// the result text: an image as image content, audio as audio content, a
// PDF as an embedded resource, a URL as a resource link.
func TestResultPartsAsContent(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{3}, 30<<10)...)
	wav := []byte("RIFF\x24\x00\x00\x00WAVEfmt ")
	pdf := []byte("%PDF-1.7 a report")
	render := swarm.NewTool("render", "renders", func(ctx context.Context, _ struct{}) (string, error) {
		return "ok", swarm.AttachOutput(ctx, model.Image("image/png", png), model.Audio("audio/wav", wav),
			model.File("q3.pdf", "application/pdf", pdf), model.ImageURL("https://example.com/c.png"))
	})
	def := swarm.Define[string, string]("charts", "Draws charts", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{render}}
	})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"charts": {
		scripted.Tools(scripted.CallTool("render", nil)), scripted.Text("drawn"),
	}}, def)
	cs := connect(t, rt, nil)
	res, out := call(t, cs, "charts", map[string]any{"input": "sales"})
	if out.State != swarm.StateCompleted || len(res.Content) != 5 {
		t.Fatalf("result: %s, %d contents", out.State, len(res.Content))
	}
	if c, ok := res.Content[0].(*sdk.TextContent); !ok || c.Text != "drawn" {
		t.Errorf("content 0: %#v", res.Content[0])
	}
	if c, ok := res.Content[1].(*sdk.ImageContent); !ok || c.MIMEType != "image/png" || !bytes.Equal(c.Data, png) {
		t.Errorf("content 1: %T, want the image", res.Content[1])
	}
	if c, ok := res.Content[2].(*sdk.AudioContent); !ok || c.MIMEType != "audio/wav" || !bytes.Equal(c.Data, wav) {
		t.Errorf("content 2: %T, want the audio", res.Content[2])
	}
	if c, ok := res.Content[3].(*sdk.EmbeddedResource); !ok || c.Resource.MIMEType != "application/pdf" || !bytes.Equal(c.Resource.Blob, pdf) || c.Resource.URI != "swarm://runs/"+out.RunID+"/parts/3" {
		t.Errorf("content 3: %#v, want the PDF embedded", res.Content[3])
	}
	if c, ok := res.Content[4].(*sdk.ResourceLink); !ok || c.URI != "https://example.com/c.png" {
		t.Errorf("content 4: %#v, want a link", res.Content[4])
	}
}

// A task's result (tasks/get) holds the run's result parts as content too.
func TestTaskResultParts(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{3}, 10<<10)...)
	render := swarm.NewTool("render", "renders", func(ctx context.Context, _ struct{}) (string, error) {
		return "ok", swarm.AttachOutput(ctx, model.Image("image/png", png))
	})
	def := swarm.Define[string, string]("charts", "Draws charts", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{render}}
	})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"charts": {
		scripted.Tools(scripted.CallTool("render", nil)), {Text: "drawn", Delay: 300 * time.Millisecond},
	}}, def)
	srv := httptest.NewServer(mcp.NewHTTPHandler(rt, mcp.Options{TaskWait: 20 * time.Millisecond}))
	defer srv.Close()
	c := &modern{t: t, url: srv.URL, tasks: true}
	tk := c.task(c.call("tools/call", "charts", map[string]any{"name": "charts", "arguments": map[string]any{"input": "sales"}}))
	if tk.ResultType != "task" {
		t.Fatalf("tools/call: %+v, want a task", tk)
	}
	c.get(tk.TaskID, "completed")
	var got struct {
		Result struct {
			Content []struct {
				Type, MimeType, Data string
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(c.call("tasks/get", tk.TaskID, map[string]any{"taskId": tk.TaskID}).Result, &got); err != nil {
		t.Fatal(err)
	}
	cs := got.Result.Content
	if len(cs) != 2 || cs[1].Type != "image" || cs[1].MimeType != "image/png" || cs[1].Data != base64.StdEncoding.EncodeToString(png) {
		t.Fatalf("task result content: %d contents %+v", len(cs), cs)
	}
}
