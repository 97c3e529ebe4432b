package dashboard

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/network"
	"github.com/swarmrt/swarm/server"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configures a [Dashboard].
type Options struct {
	// Auth checks tokens; nil or an authenticator without tokens means no
	// login (only for loopback servers: see [auth.RequireForAddr]).
	Auth *auth.Authenticator
	// Logger receives errors (default: discard).
	Logger *slog.Logger
	// SessionTTL is how long the login cookie lasts (default 12h).
	SessionTTL time.Duration
	// Network is the server's network node, if it joined one: the
	// network page shows what it shares, its peers and the network's
	// capabilities.
	Network *network.Node
}

// Dashboard serves the web dashboard of a runtime. Create it with [New].
type Dashboard struct {
	rt      *swarm.Runtime
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	pages   map[string]*template.Template
	csrfKey []byte
	cop     *http.CrossOriginProtection
	static  http.Handler
	mail    mailCache
}

// New returns the dashboard of rt.
func New(rt *swarm.Runtime, opts Options) (*Dashboard, error) {
	if rt == nil {
		return nil, errors.New("dashboard: nil runtime")
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 12 * time.Hour
	}
	d := &Dashboard{rt: rt, opts: opts, log: opts.Logger, mux: http.NewServeMux(), csrfKey: make([]byte, 32)}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	_, _ = rand.Read(d.csrfKey)
	d.cop = http.NewCrossOriginProtection()
	d.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.error(w, r, http.StatusForbidden, "This form was sent from another site, and refused.")
	}))
	if err := d.parseTemplates(); err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	d.static = http.StripPrefix("/ui/static/", http.FileServerFS(sub))
	d.routes()
	return d, nil
}

// The patterns of the dashboard's mounts.
const (
	// RootPattern serves GET / (a redirect to the runs).
	RootPattern = "GET /{$}"
	// PathPrefix holds every page and asset of the dashboard.
	PathPrefix = "/ui/"
)

// Mounts returns the server mounts of the dashboard: GET / (which leads to
// the runs) and everything under /ui/. They are public mounts because the
// dashboard authenticates by itself, with the login cookie or a bearer
// header, using the server's tokens.
func (d *Dashboard) Mounts() []server.Mount {
	return []server.Mount{
		{Pattern: RootPattern, Handler: d, Public: true},
		{Pattern: PathPrefix, Handler: d, Public: true},
	}
}

// ServeHTTP implements http.Handler.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The pages load nothing from elsewhere, run only their own script
	// and cannot be framed.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	d.mux.ServeHTTP(w, r)
}

func (d *Dashboard) routes() {
	page := func(pattern string, h func(*Dashboard, http.ResponseWriter, *http.Request)) {
		d.mux.Handle(pattern, d.authed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(d, w, r) })))
	}
	action := func(pattern string, h func(*Dashboard, http.ResponseWriter, *http.Request)) {
		d.mux.Handle(pattern, d.cop.Handler(d.authed(d.checkCSRF(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(d, w, r) })))))
	}
	d.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
	d.mux.Handle("GET /ui/static/", d.static)
	d.mux.HandleFunc("GET /ui/login", d.loginPage)
	d.mux.Handle("POST /ui/login", d.cop.Handler(http.HandlerFunc(d.login)))
	d.mux.Handle("POST /ui/logout", d.cop.Handler(http.HandlerFunc(d.logout)))
	page("GET /ui/{$}", (*Dashboard).runsPage)
	page("GET /ui/runs/{id}", (*Dashboard).runPage)
	page("GET /ui/runs/{id}/side", (*Dashboard).sideFragment)
	page("GET /ui/runs/{id}/nodes", (*Dashboard).nodesFragment)
	page("GET /ui/runs/{id}/blobs/{hash}", (*Dashboard).blob)
	page("GET /ui/conversations", (*Dashboard).conversationsPage)
	page("GET /ui/swarms", (*Dashboard).swarmsPage)
	page("GET /ui/cluster", (*Dashboard).clusterPage)
	page("GET /ui/teams", (*Dashboard).teamsPage)
	page("GET /ui/teams/{id}", (*Dashboard).teamPage)
	page("GET /ui/network", (*Dashboard).networkPage)
	page("GET /ui/memory", (*Dashboard).memoryPage)
	page("GET /ui/memory/{bank}", (*Dashboard).bankPage)
	page("GET /ui/evals", (*Dashboard).evalsPage)
	page("GET /ui/evals/compare", (*Dashboard).evalComparePage)
	page("GET /ui/evals/{id}", (*Dashboard).evalPage)
	action("POST /ui/runs/{id}/resume", (*Dashboard).resume)
	action("POST /ui/runs/{id}/stop", (*Dashboard).stop)
	action("POST /ui/runs/{id}/fork", (*Dashboard).fork)
	action("POST /ui/runs/{id}/delete", (*Dashboard).delete)
	action("POST /ui/swarms/{swarm}/runs", (*Dashboard).start)
	action("POST /ui/teams/{id}/mail", (*Dashboard).teamMail)
	action("POST /ui/teams/{id}/tasks", (*Dashboard).teamTask)
	action("POST /ui/teams/{id}/shutdown", (*Dashboard).teamShutdown)
	action("POST /ui/memory/{bank}/delete", (*Dashboard).deleteBank)
	action("POST /ui/memory/{bank}/entries/delete", (*Dashboard).deleteMemory)
	d.mux.Handle("/ui/", d.authed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.error(w, r, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	})))
}

// session is who is looking at a page.
type session struct {
	principal *auth.Principal
	secret    string // the token the browser logged in with ("" without auth)
}

type sessionKey struct{}

func sessionOf(ctx context.Context) session {
	s, _ := ctx.Value(sessionKey{}).(session)
	return s
}

// authed lets a request through with its principal in its context, or
// sends the browser to the login page (a script gets 401).
func (d *Dashboard) authed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The session cookie, unless the request names a bearer token
		// (without tokens every request is anonymous).
		var secret string
		if c, cerr := r.Cookie(auth.SessionCookie); cerr == nil && r.Header.Get("Authorization") == "" {
			secret = c.Value
		} else if scheme, s, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
			secret = strings.TrimSpace(s)
		}
		p, err := d.opts.Auth.AuthenticateSecret(secret)
		if err != nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			d.error(w, r, http.StatusUnauthorized, "Log in again: your token is missing or no longer valid.")
			return
		}
		if !d.opts.Auth.Required() {
			secret = ""
		}
		ctx := auth.WithPrincipal(r.Context(), p)
		ctx = context.WithValue(ctx, sessionKey{}, session{principal: p, secret: secret})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// csrfToken is the CSRF token of a session: a MAC of its secret under a
// key of this process, so that only pages this server rendered for this
// browser carry it.
func (d *Dashboard) csrfToken(s session) string {
	m := hmac.New(sha256.New, d.csrfKey)
	m.Write([]byte("csrf\x00" + s.secret))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func (d *Dashboard) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.PostFormValue("csrf")
		want := d.csrfToken(sessionOf(r.Context()))
		if !hmac.Equal([]byte(got), []byte(want)) {
			d.error(w, r, http.StatusForbidden, "This form has expired (the server restarted or you logged in again). Reload the page and try again.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	if !d.opts.Auth.Required() {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	d.render(w, r, http.StatusOK, "login", loginData{Next: safeNext(r.URL.Query().Get("next"))})
}

type loginData struct {
	Next, Error string
}

// safeNext keeps a post-login redirect on the dashboard.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/"
	}
	return next
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"))
	if !d.opts.Auth.Required() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	secret := strings.TrimSpace(r.PostFormValue("token"))
	if _, err := d.opts.Auth.AuthenticateSecret(secret); err != nil {
		d.render(w, r, http.StatusUnauthorized, "login", loginData{Next: next, Error: "That token is not valid here."})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: auth.SessionCookie, Value: secret, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(d.opts.SessionTTL / time.Second),
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// frame is what every page's layout shows.
type frame struct {
	Title   string
	Nav     string
	CSRF    string
	Auth    bool
	User    string
	Content any
}

func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, content any) {
	t, ok := d.pages[name]
	if !ok {
		d.log.Error("dashboard: no template", "name", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	s := sessionOf(r.Context())
	f := frame{Title: titles[name], Nav: name, Auth: d.opts.Auth.Required(), Content: content, CSRF: d.csrfToken(s)}
	if s.principal != nil {
		f.User = s.principal.Name
	}
	if tt, ok := content.(interface{ title() string }); ok {
		f.Title = tt.title()
	}
	// A page with a "live" part renders it alone for ?fragment=live: the
	// page's script refreshes that part with it (see app.js, livePart).
	part := "layout"
	if r.URL.Query().Get("fragment") == "live" && t.Lookup("live") != nil {
		part = "live"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, part, f); err != nil {
		d.log.Error("dashboard: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

var titles = map[string]string{
	"login": "Log in", "runs": "Runs", "run": "Run", "conversations": "Conversations", "swarms": "Swarms",
	"cluster": "Node and cluster", "error": "Error", "teams": "Teams", "team": "Team", "network": "Network",
	"memory": "Memory", "bank": "Memory bank", "evals": "Evals", "eval": "Eval", "evalcompare": "Compare evals",
}

type errorData struct {
	Status  int
	Message string
}

func (d *Dashboard) error(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d.render(w, r, status, "error", errorData{Status: status, Message: msg})
}

// fail answers with the page of err: 404 for an unknown run, 403 for a
// swarm the token may not use, 409 for a state that does not allow the
// action, 400 for bad input, 500 otherwise (logged).
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := server.StatusOf(err)
	if status >= 500 {
		d.log.Error("dashboard", "path", r.URL.Path, "err", err)
		d.error(w, r, status, "Something went wrong on the server; it has been logged.")
		return
	}
	d.error(w, r, status, err.Error())
}
