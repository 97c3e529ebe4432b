package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/dashboard"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/server"
	"github.com/swarmrt/swarm/swarmtest"
)

const (
	adminSecret = "admin-secret"
	echoSecret  = "echo-only-secret"
)

// serve starts swarm serve's handler (API and dashboard) with two tokens,
// or none when open.
func serve(t testing.TB, open bool) (*httptest.Server, *swarm.Runtime) {
	t.Helper()
	text := func(id string) *swarm.Swarm[string, string] {
		return swarm.Define[string, string](id, "the "+id+" swarm", nil)
	}
	rt, _ := swarmtest.NewRuntime(t, scripted.Script{
		"echo":  {scripted.Text("done")},
		"other": {scripted.Text("done")},
		"slow":  {{Text: "late", Delay: swarmtest.Timeout}},
	}, text("echo"), text("other"), text("slow"))
	var tokens []auth.Token
	if !open {
		tokens = []auth.Token{{Name: "admin", Secret: adminSecret}, {Name: "echoer", Secret: echoSecret, Swarms: []string{"echo"}}}
	}
	a, err := auth.New(tokens)
	if err != nil {
		t.Fatal(err)
	}
	return serveDashboard(t, rt, dashboard.Options{Auth: a}), rt
}

// serveDashboard serves the API and the dashboard of rt with opts until
// the test ends.
func serveDashboard(t testing.TB, rt *swarm.Runtime, opts dashboard.Options) *httptest.Server {
	t.Helper()
	d, err := dashboard.New(rt, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(rt, server.Options{Auth: opts.Auth, Mounts: d.Mounts()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.CloseStreams()
		ts.Close()
	})
	return ts
}

// browser is a client that keeps cookies and does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, header map[string]string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(swarmtest.Context(b.t), method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, res.Header, string(out)}
}

func (b *browser) get(path string) page { return b.do("GET", path, nil, nil) }

func (b *browser) login(secret string) {
	b.t.Helper()
	p := b.do("POST", "/ui/login", url.Values{"token": {secret}, "next": {"/ui/"}}, nil)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/" {
		b.t.Fatalf("login: %d %s", p.status, p.header.Get("Location"))
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func csrf(t *testing.T, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token in the page")
	}
	return m[1]
}

// wrongToken returns a token of the same length and alphabet as tok that
// differs from it in its first character, so it is never the right one.
func wrongToken(tok string) string {
	first := byte('0')
	if tok[0] == first {
		first = '1'
	}
	return string(first) + tok[1:]
}

func start(t *testing.T, rt *swarm.Runtime, swarmID, id string) {
	t.Helper()
	if _, err := rt.Start(swarmtest.Context(t), swarmID, []byte(`"x"`), swarm.WithID(id)); err != nil {
		t.Fatal(err)
	}
	if swarmID == "slow" {
		return // it waits for its model
	}
	if _, err := rt.Wait(swarmtest.Context(t), id); err != nil {
		t.Fatal(err)
	}
}

func TestLogin(t *testing.T) {
	ts, _ := serve(t, false)
	b := newBrowser(t, ts.URL)
	if p := b.get("/"); p.status != http.StatusFound || p.header.Get("Location") != "/ui/" {
		t.Errorf("GET /: %d %q", p.status, p.header.Get("Location"))
	}
	p := b.get("/ui/runs/x?y=1")
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/login?next="+url.QueryEscape("/ui/runs/x?y=1") {
		t.Fatalf("a page without a session: %d %q, want the login page", p.status, p.header.Get("Location"))
	}
	if p := b.do("POST", "/ui/login", url.Values{"token": {"wrong"}}, nil); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "not valid") {
		t.Errorf("wrong token: %d", p.status)
	}
	p = b.do("POST", "/ui/login", url.Values{"token": {adminSecret}, "next": {"/ui/swarms"}}, nil)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/swarms" {
		t.Fatalf("login: %d %q", p.status, p.header.Get("Location"))
	}
	c := p.header.Get("Set-Cookie")
	for _, want := range []string{auth.SessionCookie + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(c, want) {
			t.Errorf("cookie %q lacks %s", c, want)
		}
	}
	if p := b.get("/ui/"); p.status != http.StatusOK || !strings.Contains(p.body, "<h1>Runs</h1>") {
		t.Errorf("runs page after login: %d", p.status)
	}
	// The API accepts the cookie for reads, never for writes.
	if p := b.get("/v1/runs"); p.status != http.StatusOK {
		t.Errorf("GET /v1/runs with the cookie: %d", p.status)
	}
	if p := b.do("POST", "/v1/swarms/echo/runs", nil, map[string]string{"Content-Type": "application/json"}); p.status != http.StatusUnauthorized {
		t.Errorf("POST to the API with only the cookie: %d, want 401", p.status)
	}
	// A redirect after login never leaves the dashboard.
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/ui/\\evil", "/v1/runs", "javascript:alert(1)"} {
		p := b.do("POST", "/ui/login", url.Values{"token": {adminSecret}, "next": {next}}, nil)
		if loc := p.header.Get("Location"); loc != "/ui/" {
			t.Errorf("next %q redirects to %q, want /ui/", next, loc)
		}
	}
	if p := b.do("POST", "/ui/logout", url.Values{}, nil); !strings.Contains(p.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("logout does not clear the cookie: %q", p.header.Get("Set-Cookie"))
	}
}

func TestNoLoginWithoutTokens(t *testing.T) {
	ts, _ := serve(t, true)
	b := newBrowser(t, ts.URL)
	if p := b.get("/ui/"); p.status != http.StatusOK {
		t.Errorf("runs page without tokens: %d", p.status)
	}
	if p := b.get("/ui/login"); p.status != http.StatusSeeOther {
		t.Errorf("login page without tokens: %d, want a redirect to the runs", p.status)
	}
}

func TestTokenSeesOnlyItsSwarms(t *testing.T) {
	ts, rt := serve(t, false)
	start(t, rt, "echo", "echo-1")
	start(t, rt, "other", "other-1")
	b := newBrowser(t, ts.URL)
	b.login(echoSecret)
	p := b.get("/ui/?scope=all")
	if !strings.Contains(p.body, `title="echo-1"`) || strings.Contains(p.body, "other-1") {
		t.Errorf("the list shows other swarms' runs or hides its own:\n%s", p.body)
	}
	for _, path := range []string{"/ui/runs/other-1", "/ui/runs/other-1/side", "/ui/?swarm=other", "/v1/runs/other-1/events"} {
		if p := b.get(path); p.status != http.StatusForbidden {
			t.Errorf("GET %s: %d, want 403", path, p.status)
		}
	}
	run := b.get("/ui/runs/echo-1")
	if run.status != http.StatusOK {
		t.Fatalf("own run: %d", run.status)
	}
	if p := b.do("POST", "/ui/runs/other-1/fork", url.Values{"csrf": {csrf(t, run)}}, nil); p.status != http.StatusForbidden {
		t.Errorf("fork of another swarm's run: %d, want 403", p.status)
	}
	if p := b.get("/ui/swarms"); strings.Contains(p.body, "the other swarm") || !strings.Contains(p.body, "the echo swarm") {
		t.Errorf("the swarms page shows swarms the token may not use")
	}
}

func TestFormsNeedCSRFTokenAndSameOrigin(t *testing.T) {
	ts, rt := serve(t, false)
	start(t, rt, "slow", "slow-1")
	b := newBrowser(t, ts.URL)
	b.login(adminSecret)
	tok := csrf(t, b.get("/ui/runs/slow-1"))
	if p := b.do("POST", "/ui/runs/slow-1/stop", url.Values{}, nil); p.status != http.StatusForbidden {
		t.Errorf("stop without a CSRF token: %d, want 403", p.status)
	}
	if p := b.do("POST", "/ui/runs/slow-1/stop", url.Values{"csrf": {wrongToken(tok)}}, nil); p.status != http.StatusForbidden {
		t.Errorf("stop with a wrong CSRF token: %d, want 403", p.status)
	}
	cross := map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}
	if p := b.do("POST", "/ui/runs/slow-1/stop", url.Values{"csrf": {tok}}, cross); p.status != http.StatusForbidden {
		t.Errorf("stop from another site: %d, want 403", p.status)
	}
	if st, _ := rt.Status(swarmtest.Context(t), "slow-1"); st.State != swarm.StateRunning {
		t.Fatalf("a refused stop stopped the run: %s", st.State)
	}
	p := b.do("POST", "/ui/runs/slow-1/stop", url.Values{"csrf": {tok}}, map[string]string{"Sec-Fetch-Site": "same-origin"})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/runs/slow-1" {
		t.Fatalf("stop: %d %s", p.status, p.body)
	}
	st, err := rt.Wait(swarmtest.Context(t), "slow-1")
	if err != nil || st.State != swarm.StateStopped || st.Reason != "stopped from the dashboard by admin" {
		t.Errorf("after stop: %+v %v", st, err)
	}
	if p := b.do("POST", "/ui/runs/slow-1/stop", url.Values{"csrf": {tok}}, nil); p.status != http.StatusConflict {
		t.Errorf("stopping a stopped run: %d, want 409", p.status)
	}
}

func TestHostileInput(t *testing.T) {
	ts, rt := serve(t, true)
	evil := `<script>alert(1)</script>`
	start(t, rt, "echo", evil)
	b := newBrowser(t, ts.URL)
	for _, path := range []string{"/ui/?scope=all", "/ui/runs/" + url.PathEscape(evil), "/ui/?q=" + url.QueryEscape(evil)} {
		p := b.get(path)
		if p.status != http.StatusOK {
			t.Errorf("GET %s: %d", path, p.status)
		}
		if strings.Contains(p.body, evil) {
			t.Errorf("GET %s: the run id is not escaped", path)
		}
	}
	for path, want := range map[string]int{
		"/ui/?state=nope":                            http.StatusBadRequest,
		"/ui/?time=-1h":                              http.StatusBadRequest,
		"/ui/?time=soon":                             http.StatusBadRequest,
		"/ui/?scope=everything":                      http.StatusBadRequest,
		"/ui/?q=" + strings.Repeat("x", 300):         http.StatusBadRequest,
		"/ui/?after=no-such-run":                     http.StatusOK,
		"/ui/runs/no-such-run":                       http.StatusNotFound,
		"/ui/nothing-here":                           http.StatusNotFound,
		"/ui/runs/" + url.PathEscape(evil) + "/side": http.StatusOK,
	} {
		if p := b.get(path); p.status != want {
			t.Errorf("GET %s: %d, want %d", path, p.status, want)
		}
	}
	tok := csrf(t, b.get("/ui/swarms"))
	for _, c := range []struct {
		form url.Values
		want int
	}{
		{url.Values{"at": {"t9/model"}}, http.StatusBadRequest},
		{url.Values{"input": {"{not json"}}, http.StatusBadRequest},
		{url.Values{"values": {"[1]"}}, http.StatusBadRequest},
	} {
		c.form.Set("csrf", tok)
		if p := b.do("POST", "/ui/runs/"+url.PathEscape(evil)+"/fork", c.form, nil); p.status != c.want {
			t.Errorf("fork %v: %d, want %d", c.form, p.status, c.want)
		}
	}
	if p := b.do("POST", "/ui/runs/"+url.PathEscape(evil)+"/resume", url.Values{"csrf": {tok}, "pause": {"x"}}, nil); p.status != http.StatusBadRequest {
		t.Errorf("resume with a bad pause: %d", p.status)
	}
	if p := b.get("/ui/"); !strings.Contains(p.header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("no CSP: %q", p.header.Get("Content-Security-Policy"))
	}
}

var rowRE = regexp.MustCompile(`<a href="/ui/runs/[^"]+" title="([^"]+)">`)
var olderRE = regexp.MustCompile(`<a href="(/ui/\?[^"]*after=[^"]+)" rel="next">`)

// TestPagination walks the runs list page by page through its "Older
// runs" links: every run once, newest first, with filters kept.
func TestPagination(t *testing.T) {
	ts, rt := serve(t, true)
	var want []string
	for i := range 120 {
		id := fmt.Sprintf("r%03d", i)
		swarmID := "echo"
		if i%3 == 0 {
			swarmID = "other"
		}
		start(t, rt, swarmID, id)
		if swarmID == "echo" {
			want = append([]string{id}, want...)
		}
	}
	b := newBrowser(t, ts.URL)
	var got []string
	path := "/ui/?swarm=echo"
	for pages := 0; path != ""; pages++ {
		if pages > 10 {
			t.Fatal("more pages than runs")
		}
		p := b.get(path)
		for _, m := range rowRE.FindAllStringSubmatch(p.body, -1) {
			got = append(got, m[1])
		}
		path = ""
		if m := olderRE.FindStringSubmatch(p.body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
			if !strings.Contains(path, "swarm=echo") {
				t.Fatalf("the next page loses the filter: %s", path)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("pages list %d runs %v…, want %d %v…", len(got), got[:min(5, len(got))], len(want), want[:5])
	}
	// The live refresh of the first page is its rows alone.
	p := b.get("/ui/?swarm=echo&fragment=rows")
	if strings.Contains(p.body, "<html") || len(rowRE.FindAllString(p.body, -1)) != 50 {
		t.Errorf("rows fragment: %d rows", len(rowRE.FindAllString(p.body, -1)))
	}
}
