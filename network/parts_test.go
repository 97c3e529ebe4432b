package network_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/network"
	"github.com/swarmrt/swarm/strategy"
)

// TestCallParts: between two nodes on loopback, a call of a shared swarm
// carries the caller's parts (the swarm's model receives the image), and
// a shared tool's attached image comes back as a part of the result;
// garbage parts from a peer are the call's clear error.
func TestCallParts(t *testing.T) {
	ctx := context.Background()
	img, chart := make([]byte, 300<<10), make([]byte, 20<<10)
	_, _ = rand.Read(img)
	_, _ = rand.Read(chart)
	see := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/jpeg", MinBytes: len(img)}}
	rt, err := swarm.New(swarm.Config{Model: scripted.New(scripted.Script{
		"viewer": {{ExpectParts: see, Text: "a cat"}},
	})})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Register(swarm.Define[string, string]("viewer", "Describes images", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Describe."}
	})); err != nil {
		t.Fatal(err)
	}
	chartTool := swarm.NewTool("chart", "draws a chart", func(ctx context.Context, _ struct{}) (string, error) {
		return "attached", swarm.AttachParts(ctx, model.Image("image/png", chart))
	})
	p, err := network.New(network.Options{ID: "studio"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Share(network.ShareSwarm("viewer"), network.ShareTool(chartTool)); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	if err := p.Start(ctx, network.StartOptions{Runtime: rt, URL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	c, _ := startNode(t, network.Options{ID: "desk", Peers: []string{srv.URL}}, nil)
	eventually(t, "the viewer is known", func() bool { _, ok := c.Registry().Find("viewer"); return ok })

	call := swarm.WithCallKey(ctx, "run_1", "t1/tool/call_1")
	call = strategy.WithConversationParts(call, []model.Message{{Role: model.RoleUser, Content: "look", Parts: []model.Part{model.Image("image/jpeg", img)}}})
	out, err := c.Discover("viewer").Call(call, json.RawMessage(`{"request":"what is it?"}`))
	if err != nil || out != "a cat" {
		t.Fatalf("viewer: %q, %v (its model must get the image)", out, err)
	}

	tc := swarm.WithCallKey(ctx, "run_1", "t2/tool/call_2")
	out, err = c.Discover("chart").Call(tc, json.RawMessage(`{}`))
	if err != nil || out != "attached" {
		t.Fatalf("chart: %q, %v", out, err)
	}
	got := swarm.AttachedParts(tc)
	if len(got) != 1 || got[0].Type != model.PartImage || got[0].MediaType != "image/png" || !bytes.Equal(got[0].Data, chart) {
		t.Fatalf("the chart's result parts: %v", got)
	}

	// Garbage from a peer: the call's error, naming the part.
	for name, part := range map[string]string{
		"bad base64":     `{"kind":"file","file":{"mimeType":"image/png","bytes":"%%% not base64"}}`,
		"no source":      `{"kind":"file","file":{"mimeType":"image/png"}}`,
		"wrong kind":     `{"kind":"data","file":{"mimeType":"image/png","bytes":"aGk="}}`,
		"bad media type": `{"kind":"file","file":{"mimeType":"image/","bytes":"aGk="}}`,
		"too large":      `{"kind":"file","file":{"mimeType":"image/png","bytes":"` + strings.Repeat("A", (64<<20)/3*4+8) + `"}}`,
		"bad uri scheme": `{"kind":"file","file":{"mimeType":"image/png","uri":"file:///etc/passwd"}}`,
	} {
		body := `{"name":"viewer","input":{"request":"x"},"idempotency_key":"g-` + strings.ReplaceAll(name, " ", "-") + `","parts":[` + part + `]}`
		resp, err := http.Post(srv.URL+"/v1/network/call", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var cr network.CallResponse
		if err := json.Unmarshal(b, &cr); err != nil || resp.StatusCode != http.StatusOK || !cr.IsError || !strings.Contains(cr.Output, "bad part: part 0") {
			t.Errorf("%s: %d %.200s, want the call's error naming part 0", name, resp.StatusCode, b)
		}
	}
}
