package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/conversation"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
)

// A user's message to a conversation carries an image over HTTP, as base64
// JSON and as a multipart file: the model answering it gets the image;
// bad parts are refused with a clear 4xx and store nothing.
func TestResumeWithParts(t *testing.T) {
	img := pngBytes(t, 20<<10)
	see := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: len(img)}}
	desk := &swarm.Agent{Name: "desk", Instructions: "Help."}
	conv := conversation.Define("helpdesk", "a help desk", conversation.Spec[struct{}]{Queen: desk})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{"desk": {
		scripted.Text("hello"),
		{ExpectParts: see, Text: "a chart"},
		{ExpectParts: see, Text: "the same chart"},
	}}, conv)
	ts, _ := serveRuntime(t, rt, Options{MaxUploadBytes: 64 << 10})
	c := client{t: t, base: ts.URL}
	st := c.start("helpdesk", `{"input": null}`)
	say := func(contentType, body string) RunStatus {
		t.Helper()
		res := c.do("POST", "/v1/runs/"+st.ID+"/resume", contentType, body)
		if res.status != http.StatusAccepted {
			t.Fatalf("resume: %d %s", res.status, res.body)
		}
		_, s := c.wait(st.ID)
		return s
	}
	reply := func(n string) string {
		t.Helper()
		evs, err := rt.History(t.Context(), st.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Key == "m"+n+"/reply" {
				return ev.Text + ev.Reason
			}
		}
		return ""
	}
	if _, s := c.wait(st.ID); s.State != swarm.StatePaused {
		t.Fatalf("conversation: %s %s", s.State, s.Reason)
	}
	say("application/json", `{"message": "hi"}`)

	// Bad parts: 4xx, nothing sent or stored.
	_, was := c.wait(st.ID)
	other := pngBytes(t, 8<<10)
	for _, tc := range []struct {
		what, body string
		status     int
		code       string
	}{
		{"bad base64", `{"message": "look", "parts": [{"type": "image", "media_type": "image/png", "data": "not base64!"}]}`, 400, "bad_request"},
		{"an unknown blob", `{"message": "look", "parts": [{"type": "image", "media_type": "image/png", "blob": "` + store.BlobHash(other) + `", "size": 8200}]}`, 400, "invalid_input"},
		{"an invalid part", `{"message": "look", "parts": [{"type": "image", "media_type": "text/html", "data": "` + base64.StdEncoding.EncodeToString(other) + `"}]}`, 400, "invalid_input"},
		{"an oversized body", `{"message": "look", "parts": [{"type": "image", "media_type": "image/png", "data": "` + base64.StdEncoding.EncodeToString(make([]byte, 100<<10)) + `"}]}`, 413, "body_too_large"},
	} {
		res := c.post("/v1/runs/"+st.ID+"/resume", tc.body)
		if res.status != tc.status || res.errorCode() != tc.code {
			t.Errorf("a message with %s: %d %s, want %d %s", tc.what, res.status, res.body, tc.status, tc.code)
		}
		if _, now := c.wait(st.ID); now.State != swarm.StatePaused || now.LastSeq != was.LastSeq {
			t.Fatalf("after a message with %s: %s at %d, want paused at %d", tc.what, now.State, now.LastSeq, was.LastSeq)
		}
	}
	if r := c.get("/v1/runs/" + st.ID + "/blobs/" + store.BlobHash(other)); r.status != http.StatusNotFound {
		t.Errorf("the refused image was stored: %d", r.status)
	}

	// As base64 JSON.
	body, _ := json.Marshal(MessageRequest{Message: "what is in this screenshot?", Parts: []model.Part{model.Image("image/png", img)}})
	say("application/json", string(body))
	if got := reply("2"); got != "a chart" {
		t.Fatalf("reply to the JSON message: %q", got)
	}
	if r := c.get("/v1/runs/" + st.ID + "/blobs/" + store.BlobHash(img)); r.status != 200 || !bytes.Equal(r.body, img) {
		t.Errorf("the image's blob: %d, %d bytes", r.status, len(r.body))
	}

	// As a multipart file (the model sees it on this message, and the one
	// before in the history).
	img2 := pngBytes(t, 10<<10)
	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	w.WriteField("message", "and this one?")
	fw, _ := w.CreateFormFile("file", "second.png")
	fw.Write(img2)
	w.Close()
	say(w.FormDataContentType(), mp.String())
	if got := reply("3"); got != "the same chart" {
		t.Fatalf("reply to the multipart message: %q", got)
	}
	if r := c.get("/v1/runs/" + st.ID + "/blobs/" + store.BlobHash(img2)); r.status != 200 || !bytes.Equal(r.body, img2) {
		t.Errorf("the multipart image's blob: %d, %d bytes", r.status, len(r.body))
	}
}

// The answer to a question a child swarm asked, sent to the parent over
// HTTP with an image, reaches the child with the image: its model gets
// the bytes, and the child refers to the blob.
func TestResumePartsReachAWaitingChild(t *testing.T) {
	img := pngBytes(t, 20<<10)
	see := []scripted.ExpectPart{{Type: model.PartImage, MediaType: "image/png", MinBytes: len(img)}}
	viewer := swarm.Define[string, string]("viewer", "Looks at images", func(string) swarm.Spec {
		return swarm.Spec{Instructions: "Describe what you see."}
	})
	desk := swarm.Define[string, string]("desk", "", func(string) swarm.Spec {
		return swarm.Spec{Handoffs: []swarm.Handoff{swarm.ToSwarm(viewer)}}
	})
	// The desk hands off to the viewer, which asks for the screenshot and
	// describes it once answered.
	handoff := scripted.CallTool("handoff_to_viewer", map[string]any{"request": "look at the user's screen"})
	ask := scripted.CallTool("pause", map[string]any{"reason": "send me the screenshot"})
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{
		"desk":   {scripted.Tools(handoff), scripted.Text("it shows an invoice")},
		"viewer": {scripted.Tools(ask), {ExpectParts: see, Text: "an invoice"}},
	}, viewer, desk)
	ts, _ := serveRuntime(t, rt, Options{})
	c := client{t: t, base: ts.URL}
	st := c.start("desk", `{"input": "what is on my screen?"}`)
	_, s := c.wait(st.ID)
	if s.State != swarm.StatePaused || s.Waiting == "" || s.Waiting == st.ID {
		t.Fatalf("desk: %s %s waiting on %q; want its child's question", s.State, s.Reason, s.Waiting)
	}
	body, _ := json.Marshal(MessageRequest{Message: "here it is", Parts: []model.Part{model.Image("image/png", img)}})
	if res := c.post("/v1/runs/"+st.ID+"/resume", string(body)); res.status != http.StatusAccepted {
		t.Fatalf("resume: %d %s", res.status, res.body)
	}
	if _, s := c.wait(st.ID); s.State != swarm.StateCompleted || string(s.Result) != `"it shows an invoice"` {
		t.Fatalf("desk after the answer: %s %s %s", s.State, s.Reason, s.Result)
	}
	if _, kid := c.wait(s.Waiting); kid.State != swarm.StateCompleted {
		t.Fatalf("the child after the answer: %s %s", kid.State, kid.Reason)
	}
	if r := c.get("/v1/runs/" + s.Waiting + "/blobs/" + store.BlobHash(img)); r.status != 200 || !bytes.Equal(r.body, img) {
		t.Errorf("the child's blob of the image: %d, %d bytes", r.status, len(r.body))
	}
}
