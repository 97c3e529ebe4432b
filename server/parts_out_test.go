package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
)

// A completed run's result parts come back in its status with a download
// URL behind the run's tokens, and not as base64.
func TestResultPartsOverHTTP(t *testing.T) {
	img := pngBytes(t, 300<<10)
	render := swarm.NewTool("render", "renders", func(ctx context.Context, _ struct{}) (string, error) {
		return "rendered", swarm.AttachOutput(ctx, model.Image("image/png", img))
	})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"charts": {
		scripted.Tools(scripted.CallTool("render", nil)), scripted.Text("here it is"),
	}}, swarm.Define[string, string]("charts", "draws charts", func(string) swarm.Spec {
		return swarm.Spec{Tools: []swarm.Tool{render}}
	}), swarm.Define[string, string]("echo", "echoes", nil))
	a, err := auth.New([]auth.Token{{Name: "all", Secret: "all"}, {Name: "echo", Secret: "echo", Swarms: []string{"echo"}}})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := serveRuntime(t, rt, Options{Auth: a})
	c := client{t: t, base: ts.URL, token: "all"}
	st := c.start("charts", `{"input": "sales"}`)
	if _, st = c.wait(st.ID); st.State != swarm.StateCompleted {
		t.Fatalf("run: %s %s", st.State, st.Reason)
	}
	res := c.get("/v1/runs/" + st.ID)
	if strings.Contains(string(res.body), base64.StdEncoding.EncodeToString(img[:30])) {
		t.Error("the status carries the image's bytes")
	}
	var got RunStatus
	res.decode(t, &got)
	hash := store.BlobHash(img)
	if len(got.Parts) != 1 || got.Parts[0].Blob != hash || got.Parts[0].MediaType != "image/png" || got.Parts[0].DownloadURL != "/v1/runs/"+st.ID+"/blobs/"+hash {
		t.Fatalf("parts: %+v", got.Parts)
	}
	blob := c.get(got.Parts[0].DownloadURL)
	if blob.status != http.StatusOK || !bytes.Equal(blob.body, img) {
		t.Fatalf("download: %d, %d bytes", blob.status, len(blob.body))
	}
	if r := (client{t: t, base: ts.URL, token: "echo"}).get(got.Parts[0].DownloadURL); r.status != http.StatusForbidden {
		t.Errorf("download with another swarm's token: %d", r.status)
	}
}

// A typed swarm whose input has a part field takes the part as JSON over
// HTTP: the model gets it as a real part, the journal a reference.
func TestTypedInputPartOverHTTP(t *testing.T) {
	type shot struct {
		Photo model.Part `json:"photo"`
	}
	img := pngBytes(t, 100<<10)
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"look": {
		{ExpectParts: []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: len(img)}}, Text: "a chart"},
	}}, swarm.Define[shot, string]("look", "looks", nil))
	ts, _ := serveRuntime(t, rt, Options{})
	c := client{t: t, base: ts.URL}
	body, _ := json.Marshal(map[string]any{"input": shot{Photo: model.Image("image/png", img)}})
	st := c.start("look", string(body))
	if _, st = c.wait(st.ID); st.State != swarm.StateCompleted {
		t.Fatalf("run: %s %s", st.State, st.Reason)
	}
	events := c.get("/v1/runs/" + st.ID + "/events")
	if strings.Contains(string(events.body), base64.StdEncoding.EncodeToString(img[:30])) {
		t.Error("the events carry the image's bytes")
	}
}
