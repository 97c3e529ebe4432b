package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/errordetails"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
)

// PathPrefix is the path under which each swarm's agent lives:
// PathPrefix + "{swarm}" is its JSON-RPC endpoint and PathPrefix +
// "{swarm}/.well-known/agent-card.json" its agent card.
const PathPrefix = "/a2a/"

// CardPath is the well-known path of an agent card, relative to an agent's
// base URL.
const CardPath = a2asrv.WellKnownAgentCardPath

// DefaultMaxBodyBytes bounds a JSON-RPC request body when
// Options.MaxBodyBytes is zero.
const DefaultMaxBodyBytes = 1 << 20

// Options configures [NewHandler].
type Options struct {
	// BaseURL is the externally visible URL of the server (scheme, host and
	// any path prefix the handler is mounted under, such as
	// "https://agents.example.com"). Agent cards advertise
	// BaseURL + "/a2a/{swarm}" as the JSON-RPC endpoint, and signed cards
	// BaseURL + KeysPath as their jku. When empty, it is the address each
	// card request came to (its connection's local address; TLS for the
	// scheme), never the request's Host header.
	BaseURL string
	// Auth declares the bearer scheme in the cards when it requires tokens.
	// JSON-RPC requests whose context carries no principal (because no
	// auth middleware ran before the handler) are authenticated with it.
	// Cards are public, as A2A discovery expects.
	Auth *auth.Authenticator
	// Swarms lists the swarm ids to expose (default: every swarm registered
	// when NewHandler is called).
	Swarms []string
	// Default is the swarm whose card is also served at the root
	// /.well-known/agent-card.json (default: the only exposed swarm, if
	// there is exactly one).
	Default string
	// Version is the agents' version in their cards (default "1.0.0").
	Version string
	// MaxBodyBytes bounds JSON-RPC request bodies (default
	// DefaultMaxBodyBytes); a larger body gets 413.
	MaxBodyBytes int64
	// KeepAlive is the interval of SSE keep-alive comments on streams
	// (default 15s; negative: none).
	KeepAlive time.Duration
	// Signer, when set, signs every card (A2A 1.0 signed agent cards); its
	// public keys are served at [KeysPath], which the signatures' jku
	// header names.
	Signer *CardSigner
}

// server serves the agents of a runtime's swarms.
type server struct {
	rt     *swarm.Runtime
	opts   Options
	agents map[string]*agent
	def    string
}

// agent is one exposed swarm.
type agent struct {
	id, description string
	tags            []string
	inSchema        json.RawMessage
	outSchema       json.RawMessage
	textIn, textOut bool
	rpc             http.Handler
	card            http.Handler
}

// NewHandler returns an http.Handler serving the swarms of rt as A2A agents
// (see the package documentation for the paths). Mount it at the root of
// a server, or at least on PathPrefix and CardPath:
//
//	mux.Handle(a2a.PathPrefix, h)
//	mux.Handle(a2a.CardPath, h)
//
// Every operation checks [auth.Check] for the swarm; unknown swarms in
// Options.Swarms or Options.Default are an error wrapping
// swarm.ErrUnknownSwarm.
func NewHandler(rt *swarm.Runtime, opts Options) (http.Handler, error) {
	if rt == nil {
		return nil, errors.New("a2a: NewHandler with a nil runtime")
	}
	if opts.Version == "" {
		opts.Version = "1.0.0"
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = 15 * time.Second
	}
	opts.BaseURL = strings.TrimSuffix(opts.BaseURL, "/")
	defs := map[string]swarm.Definition{}
	for _, d := range rt.Swarms() {
		defs[d.ID()] = d
	}
	ids := opts.Swarms
	if len(ids) == 0 {
		for id := range defs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
	}
	s := &server{rt: rt, opts: opts, agents: map[string]*agent{}}
	for _, id := range ids {
		d, ok := defs[id]
		if !ok {
			return nil, fmt.Errorf("a2a: %w %q", swarm.ErrUnknownSwarm, id)
		}
		a := &agent{
			id: id, description: d.Description(),
			inSchema: d.InputSchema(), outSchema: d.ResultSchema(),
			textIn: isTextSchema(d.InputSchema()), textOut: isTextSchema(d.ResultSchema()),
		}
		if t, ok := d.(interface{ Tags() []string }); ok {
			a.tags = slices.Clone(t.Tags())
		}
		var topts []a2asrv.TransportOption
		if opts.KeepAlive > 0 {
			topts = append(topts, a2asrv.WithTransportKeepAlive(opts.KeepAlive))
		}
		topts = append(topts, a2asrv.WithTransportPanicHandler(func(r any) error {
			return fmt.Errorf("%w: %v", sdk.ErrInternalError, r)
		}))
		a.rpc = a2asrv.NewJSONRPCHandler(&taskHandler{rt: rt, agent: a}, topts...)
		a.card = a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(func(ctx context.Context) (*sdk.AgentCard, error) {
			base := baseURLFrom(ctx)
			c := s.card(ctx, a, base)
			if s.opts.Signer != nil {
				if err := s.opts.Signer.Sign(c, base+KeysPath); err != nil {
					return nil, err
				}
			}
			return c, nil
		}))
		s.agents[id] = a
	}
	s.def = opts.Default
	if s.def == "" && len(ids) == 1 {
		s.def = ids[0]
	}
	if _, ok := s.agents[s.def]; s.def != "" && !ok {
		return nil, fmt.Errorf("a2a: default %w %q (not exposed)", swarm.ErrUnknownSwarm, s.def)
	}
	return s, nil
}

// ServeHTTP routes cards and JSON-RPC requests.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path == CardPath {
		a := s.agents[s.def]
		if a == nil {
			httpError(w, http.StatusNotFound, "no default agent: fetch a swarm's card at "+PathPrefix+"{swarm}"+CardPath)
			return
		}
		s.serveCard(w, r, a)
		return
	}
	if path == KeysPath {
		s.serveKeys(w)
		return
	}
	rest, ok := strings.CutPrefix(path, PathPrefix)
	if !ok {
		httpError(w, http.StatusNotFound, "not found")
		return
	}
	id, sub, _ := strings.Cut(rest, "/")
	a := s.agents[id]
	if a == nil {
		msg := fmt.Sprintf("no A2A agent %q", id)
		if r.Method == http.MethodPost {
			rpcError(w, http.StatusNotFound, -32600, "INVALID_REQUEST", msg)
		} else {
			httpError(w, http.StatusNotFound, msg)
		}
		return
	}
	switch "/" + sub {
	case CardPath:
		s.serveCard(w, r, a)
	case "/":
		s.serveRPC(w, r, a)
	default:
		httpError(w, http.StatusNotFound, "not found")
	}
}

func (s *server) serveCard(w http.ResponseWriter, r *http.Request, a *agent) {
	base := s.opts.BaseURL
	if base == "" {
		base = localBase(r)
	}
	a.card.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), baseURLKey{}, base)))
}

// serveKeys serves the public keys of the card signer.
func (s *server) serveKeys(w http.ResponseWriter) {
	if s.opts.Signer == nil {
		httpError(w, http.StatusNotFound, "the agent cards of this server are not signed")
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_ = json.NewEncoder(w).Encode(s.opts.Signer.PublicKeys())
}

// localBase is the base URL of the address a request came to: a card
// never follows the request's Host header, which the client chose (a page
// rebinding its name to this server, or a forged header behind a proxy).
// Without a connection (a handler called in process), it is the Host.
func localBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && a != nil {
		return scheme + "://" + a.String()
	}
	return scheme + "://" + r.Host
}

type baseURLKey struct{}

func baseURLFrom(ctx context.Context) string {
	s, _ := ctx.Value(baseURLKey{}).(string)
	return s
}

// serveRPC authorizes a JSON-RPC request, bounds its body and hands it to
// the SDK's JSON-RPC binding.
func (s *server) serveRPC(w http.ResponseWriter, r *http.Request, a *agent) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		rpcError(w, http.StatusMethodNotAllowed, -32600, "INVALID_REQUEST", "the JSON-RPC endpoint takes POST requests")
		return
	}
	ctx := r.Context()
	if auth.FromContext(ctx) == nil && s.opts.Auth != nil {
		p, err := s.opts.Auth.Authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", s.opts.Auth.Challenge(r.URL.Path, err))
			rpcError(w, http.StatusUnauthorized, -31401, "UNAUTHENTICATED", "missing or invalid bearer token")
			return
		}
		ctx = auth.WithPrincipal(ctx, p)
	}
	if err := auth.Check(ctx, a.id); err != nil {
		w.Header().Set("WWW-Authenticate", auth.FromContext(ctx).ScopeChallenge(r.URL.Path, a.id))
		rpcError(w, http.StatusForbidden, -31403, "UNAUTHORIZED", err.Error())
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxBodyBytes+1))
	limit := s.opts.MaxBodyBytes
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		// A server in front of this handler limits bodies too
		// (http.MaxBytesReader): the same refusal as our own limit.
		err, limit = nil, min(limit, tooLarge.Limit)
	}
	if err != nil {
		rpcError(w, http.StatusBadRequest, -32700, "PARSE_ERROR", "reading the request body: "+err.Error())
		return
	}
	if tooLarge != nil || int64(len(body)) > limit {
		rpcError(w, http.StatusRequestEntityTooLarge, -32600, "INVALID_REQUEST", fmt.Sprintf("request body exceeds %d bytes", limit))
		return
	}
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	a.rpc.ServeHTTP(w, r)
}

// rpcError answers with a JSON-RPC error and an HTTP status other than 200,
// for requests refused before they reach the JSON-RPC binding.
func rpcError(w http.ResponseWriter, status, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{
			"code": code, "message": msg,
			"data": []*errordetails.Typed{errordetails.NewErrorInfo(reason, sdk.ProtocolDomain, nil)},
		},
	})
}

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_")), "message": msg}})
}

// isTextSchema reports whether a JSON schema describes a plain string.
func isTextSchema(schema json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(schema, &s) == nil && s.Type == "string"
}
