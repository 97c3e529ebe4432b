package server

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
)

// newVisionServer serves a "vision" swarm whose model asserts that a PNG
// of at least minPNG bytes and a PDF named notes.pdf arrived, and an
// "echo" swarm, behind tokens: "all", and "echo" for the echo swarm only.
func newVisionServer(t *testing.T, opts Options) string {
	t.Helper()
	script := scripted.Script{
		"vision": {{ExpectParts: []scripted.ExpectPart{
			{Type: model.PartImage, MediaType: "image/png", MinBytes: 100 << 10},
			{Type: model.PartFile, MediaType: "application/pdf", Name: "notes.pdf"},
		}, Text: "a chart"}},
		"echo": {scripted.Text("done")},
	}
	rt, _ := swarmtest.NewRuntime(t, script,
		swarm.Define[string, string]("vision", "looks at pictures", nil),
		swarm.Define[string, string]("echo", "echoes", nil))
	a, err := auth.New([]auth.Token{{Name: "all", Secret: "all"}, {Name: "echo", Secret: "echo", Swarms: []string{"echo"}}})
	if err != nil {
		t.Fatal(err)
	}
	opts.Auth = a
	ts, _ := serveRuntime(t, rt, opts)
	return ts.URL
}

func pngBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return append([]byte("\x89PNG\r\n\x1a\n"), b...)
}

// A start with parts as JSON (base64) and as multipart files reaches the
// model; the run's events carry the image as a blob reference, whose
// bytes are served behind the run's tokens.
func TestStartWithParts(t *testing.T) {
	base := newVisionServer(t, Options{})
	c := client{t: t, base: base, token: "all"}
	img := pngBytes(t, 300<<10)
	pdf := []byte("%PDF-1.7 tiny")
	bigPDF := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("0 0 obj endobj\n"), 1<<10)...)
	svg := append([]byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script>`), bytes.Repeat([]byte("<g/>"), 4<<10)...)
	body, _ := json.Marshal(map[string]any{"input": "what is it?", "id": "v-json", "parts": []model.Part{
		model.Image("image/png", img), model.File("notes.pdf", "application/pdf", pdf),
		model.File("report.pdf", "application/pdf", bigPDF), model.Image("image/svg+xml", svg),
	}})
	st := c.start("vision", string(body))
	if _, st = c.wait(st.ID); st.State != swarm.StateCompleted {
		t.Fatalf("JSON start: %s %s", st.State, st.Reason)
	}

	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	w.WriteField("input", `"what is it?"`)
	w.WriteField("id", "v-multi")
	fw, _ := w.CreateFormFile("file", "chart.png") // application/octet-stream: typed from name and bytes
	fw.Write(img)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="notes.pdf"`)
	h.Set("Content-Type", "application/pdf")
	pw, _ := w.CreatePart(h)
	pw.Write(pdf)
	w.Close()
	res := c.do("POST", "/v1/swarms/vision/runs", w.FormDataContentType(), mp.String())
	if res.status != http.StatusCreated {
		t.Fatalf("multipart start: %d %s", res.status, res.body)
	}
	if _, st = c.wait("v-multi"); st.State != swarm.StateCompleted {
		t.Fatalf("multipart start: %s %s", st.State, st.Reason)
	}

	// The events hold a reference, not the bytes.
	events := c.get("/v1/runs/v-multi/events")
	if strings.Contains(string(events.body), base64.StdEncoding.EncodeToString(img[:30])) {
		t.Error("the event stream carries the image's bytes")
	}
	hash := store.BlobHash(img)
	if !strings.Contains(string(events.body), `"blob":"`+hash+`"`) {
		t.Fatalf("no blob reference in the events: %.300s", events.body)
	}
	blob := c.get("/v1/runs/v-multi/blobs/" + hash)
	if blob.status != 200 || !bytes.Equal(blob.body, img) || blob.header.Get("Content-Type") != "image/png" || blob.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET blob: %d %q, %d bytes", blob.status, blob.header.Get("Content-Type"), len(blob.body))
	}
	// Behind the run's tokens: none, or another swarm's, is refused; a
	// blob of another run is not found.
	if r := (client{t: t, base: base}).get("/v1/runs/v-multi/blobs/" + hash); r.status != http.StatusUnauthorized {
		t.Errorf("blob without a token: %d", r.status)
	}
	if r := (client{t: t, base: base, token: "echo"}).get("/v1/runs/v-multi/blobs/" + hash); r.status != http.StatusForbidden {
		t.Errorf("blob with another swarm's token: %d", r.status)
	}
	echo := c.start("echo", `{"input": "x"}`)
	if r := c.get("/v1/runs/" + echo.ID + "/blobs/" + hash); r.status != http.StatusNotFound {
		t.Errorf("another run's blob: %d %s", r.status, r.body)
	}
	if d := blob.header.Get("Content-Disposition"); !strings.HasPrefix(d, "inline") {
		t.Errorf("a PNG is served as %q, want inline", d)
	}
	// Only raster images are inline: a PDF or an SVG (which can hold a
	// script) is an attachment of no type a browser would render, under
	// a safe name.
	for _, f := range []struct {
		data       []byte
		name, want string
	}{
		{bigPDF, "../../etc/report.pdf", `attachment; filename=report.pdf`},
		{svg, "", `attachment; filename=` + store.BlobHash(svg)[:16] + ".txt"}, // sniffed as text
	} {
		r := c.get("/v1/runs/v-json/blobs/" + store.BlobHash(f.data) + "?name=" + url.QueryEscape(f.name))
		if r.status != 200 || !bytes.Equal(r.body, f.data) {
			t.Fatalf("GET %s: %d, %d bytes", f.name, r.status, len(r.body))
		}
		if ct, d := r.header.Get("Content-Type"), r.header.Get("Content-Disposition"); ct != "application/octet-stream" || d != f.want || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%q served as %q, %q; want application/octet-stream, %q", f.name, ct, d, f.want)
		}
	}
	if r := c.get("/v1/runs/v-multi/blobs/not-a-hash"); r.status != http.StatusBadRequest {
		t.Errorf("bad hash: %d", r.status)
	}
}

// Bad parts and bodies over the upload limit are refused with clear
// errors, and start nothing.
func TestStartPartsRefused(t *testing.T) {
	base := newVisionServer(t, Options{MaxUploadBytes: 64 << 10})
	c := client{t: t, base: base, token: "all"}
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"input": "x", "parts": [{"type": "image", "media_type": "image/png"}]}`, 400, "invalid_input"},
		{`{"input": "x", "parts": [{"type": "video", "url": "https://x"}]}`, 400, "invalid_input"},
		{`{"input": "x", "parts": [{"type": "image", "url": "file:///etc/passwd"}]}`, 400, "invalid_input"},
		{`{"input": "x", "parts": [{"type": "image", "media_type": "image/png", "blob": "` + strings.Repeat("a", 64) + `"}]}`, 400, "invalid_input"},
		{`{"input": "x", "parts": [{"type": "image", "media_type": "image/png", "data": "` + base64.StdEncoding.EncodeToString(make([]byte, 100<<10)) + `"}]}`, 413, "body_too_large"},
	} {
		res := c.post("/v1/swarms/vision/runs", tc.body)
		if res.status != tc.status || res.errorCode() != tc.code {
			t.Errorf("%.80s: %d %s, want %d %s", tc.body, res.status, res.body, tc.status, tc.code)
		}
	}
	res := c.do("POST", "/v1/swarms/vision/runs", "multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"color\"\r\n\r\nred\r\n--x--\r\n")
	if res.status != 400 || !strings.Contains(string(res.body), "color") {
		t.Errorf("unknown multipart field: %d %s", res.status, res.body)
	}
	if n := c.runCount(); n != 0 {
		t.Errorf("%d runs started, want none", n)
	}
	// Other endpoints keep the small body limit.
	if r := c.post("/v1/runs/x/stop", `{"reason": "`+strings.Repeat("y", 2<<20)+`"}`); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("stop with a 2 MiB body: %d", r.status)
	}
}

// A start repeated with the same id is the same run only with the same
// parts.
func TestStartWithPartsIdempotent(t *testing.T) {
	base := newVisionServer(t, Options{})
	c := client{t: t, base: base, token: "all"}
	img, pdf := pngBytes(t, 150<<10), []byte("%PDF-1.7 tiny")
	body := func(img []byte) string {
		b, _ := json.Marshal(map[string]any{"input": "x", "id": "v-same", "parts": []model.Part{
			model.Image("image/png", img), model.File("notes.pdf", "application/pdf", pdf)}})
		return string(b)
	}
	if res := c.post("/v1/swarms/vision/runs", body(img)); res.status != http.StatusCreated {
		t.Fatalf("first start: %d %s", res.status, res.body)
	}
	if res := c.post("/v1/swarms/vision/runs", body(img)); res.status != http.StatusOK {
		t.Errorf("the same start again: %d %s, want 200", res.status, res.body)
	}
	other := bytes.Clone(img)
	other[len(other)-1]++
	if res := c.post("/v1/swarms/vision/runs", body(other)); res.status != http.StatusConflict {
		t.Errorf("the same id with another image: %d %s, want 409", res.status, res.body)
	}
}
