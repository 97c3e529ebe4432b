package dashboard_test

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
)

// noisePNG returns a PNG of noise, too large to stay inline in a record.
func noisePNG(t *testing.T, seed uint64) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 48, 48))
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.Uint32())
	}
	img.Set(0, 0, color.RGBA{A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if buf.Len() <= store.BlobThreshold {
		t.Fatalf("noise PNG of %d bytes stays inline", buf.Len())
	}
	return buf.Bytes()
}

// padded returns s followed by spaces up to past the blob threshold.
func padded(s string) []byte {
	return append([]byte(s), bytes.Repeat([]byte(" "), store.BlobThreshold+100)...)
}

// The dashboard serves a run's files to the sessions allowed the run, and
// only the files that run refers to; raster images inline, as the image
// their bytes are, and everything else (a PDF, an SVG, HTML dressed as a
// PNG) as a download that no browser renders from the dashboard's origin.
func TestBlobs(t *testing.T) {
	ts, rt := serve(t, false)
	ctx := swarmtest.Context(t)
	pic, otherPic := noisePNG(t, 1), noisePNG(t, 2)
	pdf := padded("%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n")
	svg := padded(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>`)
	fakePNG := padded(`<!DOCTYPE html><html><script>alert(document.cookie)</script></html>`)
	parts := []model.Part{
		{Type: model.PartImage, MediaType: "image/png", Name: "chart.png", Data: pic},
		model.File("report.pdf", "application/pdf", pdf),
		{Type: model.PartImage, MediaType: "image/svg+xml", Name: "logo.svg", Data: svg},
		{Type: model.PartImage, MediaType: "image/png", Name: "innocent.png", Data: fakePNG},
	}
	if _, err := rt.Start(ctx, "echo", []byte(`"look"`), swarm.WithID("echo-1"), swarm.WithParts(parts...)); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, "other", []byte(`"look"`), swarm.WithID("other-1"), swarm.WithParts(model.Image("image/png", otherPic))); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"echo-1", "other-1"} {
		if _, err := rt.Wait(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	url := func(run string, data []byte, name string) string {
		u := "/ui/runs/" + run + "/blobs/" + store.BlobHash(data)
		if name != "" {
			u += "?name=" + name
		}
		return u
	}

	// Without a session: the login page, not the bytes.
	anon := newBrowser(t, ts.URL)
	if p := anon.get(url("echo-1", pic, "")); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/ui/login?next=") || strings.Contains(p.body, "PNG") {
		t.Errorf("a file without a session: %d %q", p.status, p.header.Get("Location"))
	}

	b := newBrowser(t, ts.URL)
	b.login(adminSecret)
	for _, c := range []struct {
		what, path        string
		body              []byte
		ctype, disp       string
		inline            bool
		dispositionPrefix string
	}{
		{"a PNG", url("echo-1", pic, "chart.png"), pic, "image/png", `inline; filename=chart.png`, true, "inline"},
		{"a PDF", url("echo-1", pdf, "report.pdf"), pdf, "application/octet-stream", `attachment; filename=report.pdf`, false, "attachment"},
		{"an SVG", url("echo-1", svg, "logo.svg"), svg, "application/octet-stream", `attachment; filename=logo.svg`, false, "attachment"},
		{"HTML said to be a PNG", url("echo-1", fakePNG, "innocent.png"), fakePNG, "application/octet-stream", `attachment; filename=innocent.png`, false, "attachment"},
		{"a PDF without a name", url("echo-1", pdf, ""), pdf, "application/octet-stream", `attachment; filename=` + store.BlobHash(pdf)[:16] + ".pdf", false, "attachment"},
	} {
		p := b.get(c.path)
		if p.status != http.StatusOK || !bytes.Equal([]byte(p.body), c.body) {
			t.Errorf("%s: %d, %d bytes, want 200 and its %d bytes", c.what, p.status, len(p.body), len(c.body))
			continue
		}
		h := p.header
		if got := h.Get("Content-Type"); got != c.ctype {
			t.Errorf("%s: Content-Type %q, want %q", c.what, got, c.ctype)
		}
		if got := h.Get("Content-Disposition"); got != c.disp {
			t.Errorf("%s: Content-Disposition %q, want %q", c.what, got, c.disp)
		}
		if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", c.what, got)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "sandbox") || strings.Contains(csp, "script-src") {
			t.Errorf("%s: Content-Security-Policy %q, want nothing allowed, sandboxed", c.what, csp)
		}
		if cc := h.Get("Cache-Control"); !strings.Contains(cc, "private") {
			t.Errorf("%s: Cache-Control %q, want private (the session decides who sees it)", c.what, cc)
		}
	}

	// A download's name cannot break out of its header or name a path.
	for name, want := range map[string]string{
		"..%2F..%2Fetc%2Fpasswd":            "attachment; filename=passwd",
		"a%22b%0D%0AX-Evil:%20yes%3B.pdf":   `attachment; filename="a_b__X-Evil_ yes_.pdf"`,
		"..%5C..%5Cboot.ini":                "attachment; filename=boot.ini",
		"%2E%2E%2E":                         "attachment; filename=" + store.BlobHash(pdf)[:16] + ".pdf",
		"r%C3%A9sum%C3%A9.pdf":              "attachment; filename*=utf-8''r%C3%A9sum%C3%A9.pdf",
		strings.Repeat("x", 300) + "%2Epdf": "attachment; filename=" + strings.Repeat("x", 96) + ".pdf",
	} {
		p := b.get(url("echo-1", pdf, name))
		if got := p.header.Get("Content-Disposition"); got != want || p.header.Get("X-Evil") != "" {
			t.Errorf("name %s: Content-Disposition %q, want %q", name, got, want)
		}
	}

	// Content-addressed: a browser that has the bytes is told so.
	if p := b.do("GET", url("echo-1", pic, ""), nil, map[string]string{"If-None-Match": `"` + store.BlobHash(pic) + `"`}); p.status != http.StatusNotModified || p.body != "" {
		t.Errorf("a file the browser has: %d, want 304", p.status)
	}

	// Only the files a run refers to, of a run the session may see.
	for what, path := range map[string]string{
		"another run's file":   url("echo-1", otherPic, ""),
		"bytes kept nowhere":   url("echo-1", []byte("nothing"), ""),
		"not a hash":           "/ui/runs/echo-1/blobs/" + strings.Repeat("Z", 64),
		"a file of no run":     url("nope", pic, ""),
		"an uppercase hash":    "/ui/runs/echo-1/blobs/" + strings.ToUpper(store.BlobHash(pic)),
		"a file of a sub path": "/ui/runs/echo-1/blobs/" + store.BlobHash(pic) + "/x",
	} {
		if p := b.get(path); p.status != http.StatusNotFound || strings.Contains(p.body, "IHDR") {
			t.Errorf("%s: %d, want 404", what, p.status)
		}
	}
	if p := b.get(url("other-1", otherPic, "")); p.status != http.StatusOK {
		t.Errorf("the other run's own file: %d", p.status)
	}

	// A fork refers to its origin's files: its page shows them.
	fork, err := rt.Fork(ctx, "echo-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if p := b.get(url(fork, pic, "")); p.status != http.StatusOK || p.header.Get("Content-Type") != "image/png" {
		t.Errorf("a fork's file from its origin: %d %q", p.status, p.header.Get("Content-Type"))
	}

	limited := newBrowser(t, ts.URL)
	limited.login(echoSecret)
	if p := limited.get(url("other-1", otherPic, "")); p.status != http.StatusForbidden || strings.Contains(p.body, "IHDR") {
		t.Errorf("a file of a swarm the token may not use: %d, want 403", p.status)
	}
	if p := limited.get(url("echo-1", pic, "")); p.status != http.StatusOK {
		t.Errorf("a file of the token's own swarm: %d", p.status)
	}
}

// BenchmarkBlob measures serving a run's 2 MB image to a logged-in
// session: the session and the run checked, the blob read, its type
// sniffed, the bytes written.
func BenchmarkBlob(b *testing.B) {
	ts, rt := serve(b, false)
	ctx := b.Context()
	pic := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 2<<20)...)
	if _, err := rt.Start(ctx, "echo", []byte(`"look"`), swarm.WithID("echo-1"), swarm.WithParts(model.Image("image/png", pic))); err != nil {
		b.Fatal(err)
	}
	if _, err := rt.Wait(ctx, "echo-1"); err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/ui/runs/echo-1/blobs/"+store.BlobHash(pic), nil)
	req.Header.Set("Authorization", "Bearer "+adminSecret)
	b.SetBytes(int64(len(pic)))
	for b.Loop() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || n != int64(len(pic)) {
			b.Fatalf("%d, %d bytes", res.StatusCode, n)
		}
	}
}
