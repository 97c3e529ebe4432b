// Package auth decides who may use which swarms over the network.
//
// Every network front end of the runtime (the HTTP API, A2A and MCP) puts the
// same [Authenticator] in front of its handlers and asks [Allowed] before it
// touches a swarm or a run, so the three enforce one set of rules.
//
// A server bound to a loopback address may run without tokens; any other bind
// requires bearer tokens, each allowed a set of swarms. Secrets are compared in
// constant time and never appear in errors or logs.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Errors returned by [Authenticator.Authenticate].
var (
	// ErrUnauthenticated: the request carries no token, or an unknown one.
	ErrUnauthenticated = errors.New("missing or invalid bearer token")
	// ErrForbidden: the token is valid but not allowed the swarm.
	ErrForbidden = errors.New("token not allowed this swarm")
)

// Token is a bearer secret and the swarms it may use.
type Token struct {
	// Name labels the token in logs; it is never the secret.
	Name string
	// Secret is the bearer token itself.
	Secret string
	// Swarms lists the swarm ids the token may use; empty or "*" means all.
	Swarms []string
	// Capabilities lists the network capabilities (see package network)
	// the token may see and call; empty or "*" means all.
	Capabilities []string
}

// Principal is the authenticated caller of a request.
type Principal struct {
	// Name is the token's name, or "anonymous" when no token is required.
	Name    string
	swarms  []string
	all     bool
	caps    []string
	allCaps bool
	// oauth is the validator of an OAuth access token's principal.
	oauth *OAuth
}

// ScopeChallenge returns the WWW-Authenticate header of a 403 refusing the
// principal swarm id on a request to path (RFC 6750 insufficient_scope):
// for an OAuth principal it names the scope to ask for and the resource
// metadata, so that a client can step up its authorization.
func (p *Principal) ScopeChallenge(path, id string) string {
	c := `Bearer error="insufficient_scope"`
	if p != nil && p.oauth != nil {
		c += `, scope="` + ScopeSwarmPrefix + id + `", resource_metadata="` + p.oauth.metadataURL(path) + `"`
	}
	return c
}

// AllowsCapability reports whether the principal may see and call the
// network capability name.
func (p *Principal) AllowsCapability(name string) bool {
	if p == nil {
		return false
	}
	return p.allCaps || slices.Contains(p.caps, name)
}

// CapabilityAllowed reports whether the caller in ctx may see and call the
// network capability name. In-process callers may use everything.
func CapabilityAllowed(ctx context.Context, name string) bool {
	p := FromContext(ctx)
	return p == nil || p.AllowsCapability(name)
}

// Allows reports whether the principal may use swarm id.
func (p *Principal) Allows(id string) bool {
	if p == nil {
		return false
	}
	return p.all || slices.Contains(p.swarms, id)
}

// All reports whether the principal may use every swarm.
func (p *Principal) All() bool { return p != nil && p.all }

type ctxKey struct{}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the request's principal, or nil when the request did
// not pass through an [Authenticator] (in-process callers).
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxKey{}).(*Principal)
	return p
}

// Allowed reports whether the caller in ctx may use swarm id. In-process
// callers, whose context carries no principal, may use everything.
func Allowed(ctx context.Context, id string) bool {
	p := FromContext(ctx)
	return p == nil || p.Allows(id)
}

// Check is Allowed as an error: nil, or a [*ForbiddenError] (which is
// ErrForbidden) naming the swarm.
func Check(ctx context.Context, id string) error {
	if Allowed(ctx, id) {
		return nil
	}
	return &ForbiddenError{Swarm: id}
}

// ForbiddenError refuses a caller a swarm its token is not allowed; it is
// [ErrForbidden] to errors.Is. A front end answers it 403 with the
// principal's [Principal.ScopeChallenge] for Swarm.
type ForbiddenError struct {
	// Swarm is the swarm refused.
	Swarm string
}

func (e *ForbiddenError) Error() string { return fmt.Sprintf("swarm %q: %v", e.Swarm, ErrForbidden) }

// Is reports whether target is ErrForbidden.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

type entry struct {
	sum  [sha256.Size]byte
	prin *Principal
}

// newPrincipal returns the principal allowed swarms and caps ("*" for
// all). An empty list allows everything when emptyAll (static tokens) and
// nothing otherwise (OAuth tokens get what their scopes grant).
func newPrincipal(name string, swarms, caps []string, emptyAll bool) *Principal {
	p := &Principal{Name: name}
	p.all = slices.Contains(swarms, "*") || (emptyAll && len(swarms) == 0)
	if !p.all {
		p.swarms = slices.Clone(swarms)
	}
	p.allCaps = slices.Contains(caps, "*") || (emptyAll && len(caps) == 0)
	if !p.allCaps {
		p.caps = slices.Clone(caps)
	}
	return p
}

// Authenticator checks bearer tokens: static secrets, and OAuth access
// tokens when [Authenticator.UseOAuth] was called. The zero value and nil
// require none.
type Authenticator struct {
	entries []entry
	oauth   *OAuth
}

// UseOAuth makes a also accept OAuth access tokens validated by o (a
// token matching a static secret is that token's). Call it before serving.
func (a *Authenticator) UseOAuth(o *OAuth) { a.oauth = o }

// OAuth returns the validator set by [Authenticator.UseOAuth], or nil.
func (a *Authenticator) OAuth() *OAuth {
	if a == nil {
		return nil
	}
	return a.oauth
}

// New returns an authenticator accepting tokens. With no tokens, every
// request is anonymous and allowed everything; callers must refuse that
// configuration on non-loopback binds (see [RequireForAddr]).
func New(tokens []Token) (*Authenticator, error) {
	a := &Authenticator{}
	seen := map[[sha256.Size]byte]bool{}
	for i, t := range tokens {
		if t.Secret == "" {
			return nil, fmt.Errorf("auth: token %d (%q) has an empty secret", i+1, t.Name)
		}
		name := t.Name
		if name == "" {
			name = fmt.Sprintf("token%d", i+1)
		}
		sum := sha256.Sum256([]byte(t.Secret))
		if seen[sum] {
			return nil, fmt.Errorf("auth: token %q repeats another token's secret", name)
		}
		seen[sum] = true
		p := newPrincipal(name, t.Swarms, t.Capabilities, true)
		a.entries = append(a.entries, entry{sum: sum, prin: p})
	}
	return a, nil
}

// Required reports whether requests must carry a token.
func (a *Authenticator) Required() bool { return a != nil && (len(a.entries) > 0 || a.oauth != nil) }

var anonymous = &Principal{Name: "anonymous", all: true, allCaps: true}

// Authenticate returns the principal of r: anonymous when no token is
// required, else the owner of r's bearer token (or, on a GET or HEAD
// without an Authorization header, of its [SessionCookie]), or
// ErrUnauthenticated.
func (a *Authenticator) Authenticate(r *http.Request) (*Principal, error) {
	if !a.Required() {
		return anonymous, nil
	}
	h := r.Header.Get("Authorization")
	if h == "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		if c, err := r.Cookie(SessionCookie); err == nil {
			return a.AuthenticateToken(r.Context(), c.Value)
		}
	}
	if h == "" {
		return nil, ErrUnauthenticated
	}
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return nil, ErrInvalidToken
	}
	return a.AuthenticateToken(r.Context(), secret)
}

// SessionCookie is the cookie in which a browser carries its token: the
// dashboard's login form sets it (HttpOnly, SameSite=Strict), because a
// browser cannot send a bearer header when it follows a link or opens an
// event stream. [Authenticator.Authenticate] accepts it on GET and HEAD
// requests that carry no Authorization header; a request that changes
// something must carry the bearer header (the dashboard's own forms check
// the cookie and a CSRF token themselves).
const SessionCookie = "swarm_session"

// AuthenticateSecret is [Authenticator.AuthenticateToken] without a
// request context.
func (a *Authenticator) AuthenticateSecret(secret string) (*Principal, error) {
	return a.AuthenticateToken(context.Background(), secret)
}

// AuthenticateToken returns the principal of a bearer token: anonymous
// when no token is required, else the owner of a static secret, else (with
// OAuth) the principal of a valid access token, or an error wrapping
// ErrUnauthenticated. Secrets are compared in constant time.
func (a *Authenticator) AuthenticateToken(ctx context.Context, secret string) (*Principal, error) {
	if !a.Required() {
		return anonymous, nil
	}
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return nil, ErrUnauthenticated
	}
	sum := sha256.Sum256([]byte(secret))
	var found *Principal
	// Compare against every entry so the time taken does not tell which
	// token (if any) matched.
	for _, e := range a.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			found = e.prin
		}
	}
	if found != nil {
		return found, nil
	}
	if a.oauth != nil {
		return a.oauth.Verify(ctx, secret)
	}
	return nil, ErrInvalidToken
}

// Challenge returns the WWW-Authenticate header answering a request to
// path refused with err (RFC 6750): error="invalid_token" when it carried
// a token, and with OAuth the resource_metadata URL of RFC 9728.
func (a *Authenticator) Challenge(path string, err error) string {
	c := `Bearer realm="swarm"`
	if o := a.OAuth(); o != nil {
		c += `, resource_metadata="` + o.metadataURL(path) + `"`
	}
	if errors.Is(err, ErrInvalidToken) {
		c += `, error="invalid_token"`
	}
	return c
}

// Middleware authenticates each request and stores its principal in the
// request context; unauthenticated requests get 401 with a
// WWW-Authenticate: Bearer header (see [Authenticator.Challenge]) and a
// JSON error body.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.Authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", a.Challenge(r.URL.Path, err))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":"unauthenticated","message":"missing or invalid bearer token"}}` + "\n"))
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// RequireForAddr returns an error when addr is not a loopback address and a
// has no tokens: a server reachable from the network must authenticate.
func RequireForAddr(a *Authenticator, addr string) error {
	if a.Required() || IsLoopback(addr) {
		return nil
	}
	return fmt.Errorf("auth: %s is not a loopback address; configure bearer tokens (SWARM_TOKENS or the serve section of swarm.yaml) or OAuth to listen on it", addr)
}

// IsLoopback reports whether a listen address (host:port) binds only to the
// loopback interface.
func IsLoopback(addr string) bool {
	host := addr
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		host = addr[:i]
	}
	host = strings.Trim(host, "[]")
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return strings.HasPrefix(host, "127.")
}
