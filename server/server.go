// Package server serves a swarm runtime over HTTP: a JSON API under /v1 to
// start, inspect, resume, stop and list runs and to list the registered
// swarms, run events as server-sent events, health and readiness probes, and
// the API's OpenAPI 3.1 document at /openapi.json.
//
// Other front ends (A2A, MCP) are mounted into the same server with
// [Options.Mounts], behind the same authentication, body limit, logging and
// panic recovery, and the same refusal of the Hosts and Origins of other
// sites ([Options.Hosts]).
//
// The server uses the standard library's [http.ServeMux] and nothing else.
// Every error is a JSON object {"error": {"code": ..., "message": ...}}; a
// client's mistake never gets a 5xx status.
package server

import (
	"io"

	"github.com/swarmrt/swarm/internal/traceprop"

	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/store"
)

// Defaults of [Options].
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultHeartbeat    = 15 * time.Second
	DefaultMaxWait      = 60 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	DefaultBodyTimeout  = 30 * time.Second
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the HTTP API, as served at
// /openapi.json.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

// Mount is an extra front end served by the server.
type Mount struct {
	// Pattern is an [http.ServeMux] pattern such as "/mcp" or
	// "POST /a2a/{swarm}". It must not collide with the server's own routes.
	Pattern string
	// Handler serves the requests matching Pattern. It runs behind the
	// server's middleware; use [auth.Allowed] or [auth.Check] with a
	// swarm id before touching a swarm or a run.
	Handler http.Handler
	// Public serves Pattern without authentication (for documents that a
	// protocol requires to be public, such as A2A agent cards). The body
	// limit, logging and panic recovery still apply.
	Public bool
}

// Options configures a [Server]. The zero value is usable.
type Options struct {
	// Auth checks bearer tokens (nil: none required). Every route except
	// /healthz, /readyz, /openapi.json and public mounts is behind it, and
	// every run endpoint checks that the caller may use the run's swarm.
	Auth *auth.Authenticator
	// MaxBodyBytes limits request bodies (default 1 MiB); a larger body
	// gets 413.
	MaxBodyBytes int64
	// MaxUploadBytes limits the body of a run's start and of a resume
	// (a message to a conversation), which may carry attachments; a
	// larger body gets 413. The default is 32 MiB, or
	// MaxBodyBytes when that is set.
	MaxUploadBytes int64
	// Heartbeat is the interval of SSE comment lines that keep idle event
	// streams alive (default 15s).
	Heartbeat time.Duration
	// MaxWait bounds the long poll of GET /v1/runs/{id}?wait= (default
	// 60s).
	MaxWait time.Duration
	// WriteTimeout bounds each write to an event stream; a client that
	// reads slower than that is disconnected (default 10s).
	WriteTimeout time.Duration
	// BodyTimeout bounds the reading of each request body (default 30s):
	// a client that sends its body slower is disconnected. It is a
	// deadline on the connection from the start of the request until the
	// body has been read, so responses that stream afterwards (event
	// streams, long polls, A2A and MCP streams) are not bounded by it.
	BodyTimeout time.Duration
	// Mounts are extra front ends (A2A, MCP) served by the same server.
	Mounts []Mount
	// Hosts are the names the server answers to besides loopback ones and
	// the address a request came to (see [auth.NewHostGuard]): a request
	// to any other Host, or from another site's Origin, gets 403 on every
	// route, so that no web page can drive the server through DNS
	// rebinding. "*" allows any Host.
	Hosts []string
	// Metrics, when set, writes more metrics in the Prometheus text
	// format after the node's counters on GET /metrics (for instance
	// telemetry.Telemetry.WritePrometheus: GenAI token usage and
	// operation duration histograms, runs by state).
	Metrics func(ctx context.Context, w io.Writer) error
	// Logger receives one line per request (method, path, status,
	// duration; never headers or bodies) and errors (default: discard).
	Logger *slog.Logger
	// Ready reports whether the server can serve (GET /readyz). By default
	// it lists one run from the runtime's store.
	Ready func(ctx context.Context) error
}

// Server serves a runtime over HTTP. It is an [http.Handler]; create it
// with [New].
type Server struct {
	rt      *swarm.Runtime
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	handler http.Handler

	// ctx is cancelled by CloseStreams; streams and long polls end with it.
	mu      sync.Mutex // orders stream starts with CloseStreams
	ctx     context.Context
	cancel  context.CancelFunc
	streams sync.WaitGroup

	// draining: set by Drain; /readyz answers 503 from then on.
	draining atomic.Bool
}

// route is one endpoint of the API. The OpenAPI document lists exactly
// these (a test holds them to it).
type route struct {
	method, path string
	public       bool
	h            func(*Server, http.ResponseWriter, *http.Request)
}

var routes = []route{
	{"GET", "/healthz", true, (*Server).healthz},
	{"GET", "/readyz", true, (*Server).readyz},
	{"GET", "/openapi.json", true, (*Server).openapi},
	{"GET", "/metrics", false, (*Server).metrics},
	{"GET", "/v1/swarms", false, (*Server).listSwarms},
	{"GET", "/v1/swarms/{swarm}", false, (*Server).getSwarm},
	{"POST", "/v1/swarms/{swarm}/runs", false, (*Server).startRun},
	{"GET", "/v1/runs", false, (*Server).listRuns},
	{"GET", "/v1/runs/{id}", false, (*Server).getRun},
	{"POST", "/v1/runs/{id}/resume", false, (*Server).resumeRun},
	{"POST", "/v1/runs/{id}/stop", false, (*Server).stopRun},
	{"DELETE", "/v1/runs/{id}", false, (*Server).deleteRun},
	{"POST", "/v1/runs/{id}/fork", false, (*Server).forkRun},
	{"GET", "/v1/runs/{id}/events", false, (*Server).events},
	{"GET", "/v1/runs/{id}/requests/{key...}", false, (*Server).modelRequest},
	{"GET", "/v1/runs/{id}/blobs/{hash}", false, (*Server).getBlob},
	{"GET", "/v1/registry/search", false, (*Server).searchRegistry},
	{"GET", "/v1/teams/{id}", false, (*Server).teamRoster},
	{"GET", "/v1/teams/{id}/mail", false, (*Server).teamInbox},
	{"POST", "/v1/teams/{id}/mail", false, (*Server).teamSend},
	{"GET", "/v1/teams/{id}/tasks", false, (*Server).teamTasks},
	{"POST", "/v1/teams/{id}/tasks", false, (*Server).teamAddTask},
	{"GET", "/v1/teams/{id}/requests", false, (*Server).teamRequests},
	{"GET", "/v1/evals", false, (*Server).listEvals},
	{"GET", "/v1/evals/{id}", false, (*Server).getEval},
	{"GET", "/v1/evals/{id}/compare/{other}", false, (*Server).compareEvals},
	{"GET", "/v1/memory", false, (*Server).listBanks},
	{"GET", "/v1/memory/{bank}", false, (*Server).listMemories},
	{"DELETE", "/v1/memory/{bank}", false, (*Server).deleteBank},
	{"GET", "/v1/memory/{bank}/{key...}", false, (*Server).getMemory},
	{"DELETE", "/v1/memory/{bank}/{key...}", false, (*Server).deleteMemory},
}

// New returns a server for rt.
func New(rt *swarm.Runtime, opts Options) (*Server, error) {
	if rt == nil {
		return nil, errors.New("server: nil runtime")
	}
	if opts.MaxUploadBytes <= 0 {
		opts.MaxUploadBytes = DefaultMaxUploadBytes
		if opts.MaxBodyBytes > 0 {
			opts.MaxUploadBytes = opts.MaxBodyBytes
		}
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	s := &Server{rt: rt, opts: opts, log: opts.Logger, mux: http.NewServeMux()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.Ready == nil {
		s.opts.Ready = func(ctx context.Context) error {
			_, err := rt.Store().List(ctx, store.Filter{Limit: 1})
			return err
		}
	}
	guard, err := auth.NewHostGuard(opts.Hosts)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	authed := func(h http.Handler) http.Handler { return h }
	if opts.Auth.Required() {
		authed = opts.Auth.Middleware
	}
	for _, r := range routes {
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { r.h(s, w, req) })
		if !r.public {
			h = authed(h)
		}
		s.mux.Handle(r.method+" "+r.path, h)
	}
	if o := opts.Auth.OAuth(); o != nil {
		// The protected resource metadata (RFC 9728) of the server and of
		// its MCP endpoint: public, so that a client can find the issuer.
		s.mux.Handle("GET "+auth.WellKnownPath, o.MetadataHandler())
		s.mux.Handle("GET "+auth.WellKnownPath+"/mcp", o.MetadataHandler())
	}
	for i, m := range opts.Mounts {
		if m.Pattern == "" || m.Handler == nil {
			return nil, fmt.Errorf("server: mount %d: empty pattern or nil handler", i)
		}
		h := m.Handler
		if !m.Public {
			h = authed(h)
		}
		if err := register(s.mux, m.Pattern, h); err != nil {
			return nil, fmt.Errorf("server: mount %q: %w", m.Pattern, err)
		}
	}
	s.handler = s.recoverPanics(s.logRequests(guard.Middleware(http.HandlerFunc(s.route))))
	return s, nil
}

// register adds a mount to mux, turning the panic of a conflicting pattern
// into an error.
func register(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A caller's W3C trace context: runs started here join its trace.
	s.handler.ServeHTTP(w, traceprop.Extract(r))
}

// CloseStreams ends every open event stream and long poll, and makes new
// ones end at once. Call it when shutting down: [http.Server.Shutdown] waits
// for active requests, and an event stream is active until its run ends.
// Register it with [http.Server.RegisterOnShutdown]. It waits for the
// streams' goroutines to exit.
func (s *Server) CloseStreams() {
	s.mu.Lock()
	s.cancel()
	s.mu.Unlock()
	s.streams.Wait()
}

// route limits bodies and dispatches; requests that match no route get a
// JSON 404 or 405 instead of the mux's plain text.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil && r.Body != http.NoBody {
		// The connection's read deadline bounds the body. net/http lifts
		// it when the body has been read to its end (and it starts
		// watching the connection for the client leaving), so responses
		// that stream afterwards are not bounded by it, as they would be
		// by http.Server.ReadTimeout. After a timeout it stays, so the
		// server's discarding of an unread rest fails at once.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	}
	if r.Body != nil {
		limit := s.opts.MaxBodyBytes
		if isUpload(r) {
			limit = s.opts.MaxUploadBytes
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
	}
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	// Let the mux decide between 404 and 405 (it sets Allow), then answer
	// in JSON.
	rec := &statusOnly{header: http.Header{}}
	h.ServeHTTP(rec, r)
	if allow := rec.header.Get("Allow"); allow != "" {
		w.Header().Set("Allow", allow)
	}
	switch rec.status {
	case http.StatusMethodNotAllowed:
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path))
	case http.StatusMovedPermanently, http.StatusPermanentRedirect, http.StatusTemporaryRedirect, http.StatusFound:
		w.Header().Set("Location", rec.header.Get("Location"))
		w.WriteHeader(rec.status)
	default:
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.URL.Path)
	}
}

// statusOnly records the status and headers the mux's fallback handlers
// write, and drops their plain-text body.
type statusOnly struct {
	header http.Header
	status int
}

func (s *statusOnly) Header() http.Header { return s.header }
func (s *statusOnly) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}
func (s *statusOnly) Write(b []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return len(b), nil
}

// recoverPanics turns a handler's panic into a logged 500.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p))
			writeError(w, http.StatusInternalServerError, "internal", "internal server error")
		}()
		next.ServeHTTP(w, r)
	})
}

// logRequests logs one line per request. Headers (the Authorization header
// among them), query strings and bodies are never logged.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		s.log.Log(r.Context(), level, "http request", "method", r.Method, "path", r.URL.Path, "status", status,
			"duration", time.Since(start).Round(time.Microsecond))
	})
}

// statusWriter remembers the response status. Unwrap lets
// http.ResponseController reach the connection (flushes, deadlines).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush sends buffered data to the client. Handlers that stream (SSE
// through the A2A and MCP SDKs among them) test for http.Flusher directly
// rather than through http.ResponseController, so the wrapper must be one.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// metrics serves the runtime's counters in the Prometheus text format.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	m := s.rt.Metrics()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	for _, c := range []struct {
		name, kind, help string
		v                int64
	}{
		{"swarm_runs_claimed_total", "counter", "Runs claimed by this node (runnable runs and runs whose owner's lease expired).", m.RunsClaimed},
		{"swarm_runs_driven", "gauge", "Runs driven by this node now.", m.RunsDriven},
		{"swarm_lease_renewals_total", "counter", "Successful lease heartbeats.", m.LeaseRenewals},
		{"swarm_leases_lost_total", "counter", "Runs this node stopped driving because their lease was lost.", m.LeasesLost},
		{"swarm_appends_fenced_total", "counter", "Journal appends rejected because this node's lease of the run was stale.", m.AppendsFenced},
		{"swarm_store_notifications_total", "counter", "Change notifications received from the store.", m.Notifications},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", c.name, c.help, c.name, c.kind, c.name, c.v)
	}
	if s.opts.Metrics != nil {
		if err := s.opts.Metrics(r.Context(), w); err != nil {
			s.log.Warn("metrics", "err", err)
		}
	}
}

// Drain marks the server as draining: from now on GET /readyz answers 503
// (not_ready, "draining") while every other endpoint goes on serving, so
// that a load balancer stops sending new requests before the server stops
// listening. It cannot be undone.
func (s *Server) Drain() { s.draining.Store(true) }

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, "not_ready", "not ready: draining")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := s.opts.Ready(ctx); err != nil {
		s.log.Warn("not ready", "err", err)
		writeError(w, http.StatusServiceUnavailable, "not_ready", "not ready: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(openAPI)
}
