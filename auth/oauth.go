package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// ErrInvalidToken: the request carries a bearer token that is malformed,
// unknown, expired, not for this resource or not signed by the issuer. It
// wraps [ErrUnauthenticated].
var ErrInvalidToken = fmt.Errorf("%w: invalid access token", ErrUnauthenticated)

// Scopes an OAuth access token carries to use swarms and network
// capabilities. A token without any of them is valid but allowed nothing.
const (
	// ScopeSwarmPrefix + a swarm id allows that swarm; ScopeAllSwarms all.
	ScopeSwarmPrefix = "swarm:"
	ScopeAllSwarms   = ScopeSwarmPrefix + "*"
	// ScopeCapabilityPrefix + a capability name allows that network
	// capability; ScopeAllCapabilities all.
	ScopeCapabilityPrefix = "capability:"
	ScopeAllCapabilities  = ScopeCapabilityPrefix + "*"
)

// MaxTokenBytes bounds the bearer tokens an [OAuth] resource looks at;
// longer ones are refused before they are parsed.
const MaxTokenBytes = 16 << 10

// WellKnownPath is where a protected resource serves its metadata (RFC
// 9728); the metadata of the MCP endpoint is at WellKnownPath + "/mcp".
const WellKnownPath = "/.well-known/oauth-protected-resource"

// Defaults of [OAuthConfig].
const (
	DefaultLeeway     = 30 * time.Second
	DefaultMinRefresh = time.Minute
	DefaultCacheTTL   = 30 * time.Second
	DefaultKeyMaxAge  = time.Hour
)

// DefaultAlgorithms are the signature algorithms accepted when
// [OAuthConfig.Algorithms] is empty: asymmetric ones only, so that neither
// "none" nor an HMAC keyed with a public key can pass.
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// OAuthConfig makes a server an OAuth 2.1 protected resource.
type OAuthConfig struct {
	// Issuer is the authorization server's issuer identifier; the "iss"
	// of every token must equal it.
	Issuer string
	// Resource is the public base URL of the server (https://host[:port]),
	// its resource identifier. Tokens must name it, or Resource + "/mcp",
	// or one of Audiences, in "aud".
	Resource string
	// Audiences are further accepted "aud" values.
	Audiences []string
	// JWKSURI is where the issuer's signing keys are; "" reads it from
	// the issuer's metadata (RFC 8414, then OpenID discovery).
	JWKSURI string
	// Algorithms are the accepted JWS algorithms; empty means
	// [DefaultAlgorithms]. Symmetric algorithms and "none" are refused.
	Algorithms []string
	// IntrospectionURL, when set, validates every token by asking the
	// issuer (RFC 7662) instead of checking it as a JWT; ClientID and
	// ClientSecret authenticate that request.
	IntrospectionURL       string
	ClientID, ClientSecret string
	// SwarmsClaim and CapabilitiesClaim name claims holding swarm ids and
	// capability names (a list, or a space-separated string) granted in
	// addition to the scopes.
	SwarmsClaim, CapabilitiesClaim string
	// Scopes are listed as scopes_supported in the metadata.
	Scopes []string
	// Leeway allows for clock skew in exp and nbf (default DefaultLeeway).
	Leeway time.Duration
	// MinRefresh is the least time between two fetches of the key set
	// caused by tokens signed with an unknown key (default
	// DefaultMinRefresh), so that forged key ids cannot flood the issuer.
	MinRefresh time.Duration
	// KeyMaxAge is how long a fetched key set is used before it is
	// fetched again (default DefaultKeyMaxAge).
	KeyMaxAge time.Duration
	// CacheTTL bounds how long an introspection answer is reused
	// (default DefaultCacheTTL).
	CacheTTL time.Duration
	// Client fetches metadata, keys and introspection answers (default:
	// a client with a 10 s timeout).
	Client *http.Client
}

// OAuth validates OAuth 2.1 access tokens for a protected resource and
// maps their scopes to a [Principal]. Create it with [NewOAuth] and pass it
// to [Authenticator.UseOAuth].
type OAuth struct {
	cfg       OAuthConfig
	algs      []jose.SignatureAlgorithm
	audiences []string
	now       func() time.Time

	keys atomic.Pointer[keySet]
	// fetchMu serializes key set fetches; lastFetch is guarded by it.
	fetchMu   sync.Mutex
	lastFetch time.Time
	jwksURI   string

	cacheMu sync.Mutex
	cache   map[[sha256.Size]byte]cached

	mdMu sync.Mutex
	md   *ServerMetadata
}

type cached struct {
	p     *Principal
	until time.Time
}

// maxCache bounds the introspection cache.
const maxCache = 10000

// NewOAuth checks cfg and returns its validator. Nothing is fetched until
// the first token arrives.
func NewOAuth(cfg OAuthConfig) (*OAuth, error) {
	if err := absURL("issuer", cfg.Issuer); err != nil {
		return nil, err
	}
	if err := absURL("resource", cfg.Resource); err != nil {
		return nil, err
	}
	cfg.Resource = strings.TrimSuffix(cfg.Resource, "/")
	for _, u := range []struct{ name, v string }{{"jwks_uri", cfg.JWKSURI}, {"introspection url", cfg.IntrospectionURL}} {
		if u.v != "" {
			if err := absURL(u.name, u.v); err != nil {
				return nil, err
			}
		}
	}
	if cfg.IntrospectionURL != "" && cfg.ClientID == "" {
		return nil, errors.New("auth: oauth: introspection needs a client id")
	}
	o := &OAuth{cfg: cfg, now: time.Now, jwksURI: cfg.JWKSURI, cache: map[[sha256.Size]byte]cached{}}
	names := cfg.Algorithms
	if len(names) == 0 {
		names = DefaultAlgorithms
	}
	for _, n := range names {
		if !slices.Contains(DefaultAlgorithms, n) {
			return nil, fmt.Errorf("auth: oauth: algorithm %q is not allowed (want one of %s)", n, strings.Join(DefaultAlgorithms, ", "))
		}
		o.algs = append(o.algs, jose.SignatureAlgorithm(n))
	}
	o.audiences = append([]string{cfg.Resource, cfg.Resource + "/mcp"}, cfg.Audiences...)
	if o.cfg.Leeway <= 0 {
		o.cfg.Leeway = DefaultLeeway
	}
	if o.cfg.MinRefresh <= 0 {
		o.cfg.MinRefresh = DefaultMinRefresh
	}
	if o.cfg.KeyMaxAge <= 0 {
		o.cfg.KeyMaxAge = DefaultKeyMaxAge
	}
	if o.cfg.CacheTTL <= 0 {
		o.cfg.CacheTTL = DefaultCacheTTL
	}
	if o.cfg.Client == nil {
		o.cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	return o, nil
}

func absURL(name, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("auth: oauth: %s %q: want an absolute http(s) URL without query or fragment", name, v)
	}
	return nil
}

// Verify validates an access token and returns its principal, or an error
// wrapping [ErrInvalidToken]. A JWT must be typed at+jwt (or
// application/at+jwt, RFC 9068), signed by the issuer with an accepted
// algorithm, and name the resource in its aud.
func (o *OAuth) Verify(ctx context.Context, token string) (*Principal, error) {
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidToken, MaxTokenBytes)
	}
	if o.cfg.IntrospectionURL != "" {
		return o.introspect(ctx, token)
	}
	tok, err := jwt.ParseSigned(token, o.algs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: want one signature", ErrInvalidToken)
	}
	h := tok.Headers[0]
	// RFC 9068: an access token says so in its typ, so that an ID token or
	// another JWT of the issuer cannot pass for one.
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") {
		return nil, fmt.Errorf("%w: JOSE header typ %q: want at+jwt (RFC 9068)", ErrInvalidToken, typ)
	}
	key, err := o.key(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return nil, err
	}
	var std jwt.Claims
	var all map[string]any
	if err := tok.Claims(key, &std, &all); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if std.Expiry == nil {
		return nil, fmt.Errorf("%w: no exp claim", ErrInvalidToken)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: o.cfg.Issuer, AnyAudience: o.audiences, Time: o.now()}, o.cfg.Leeway); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	return o.principal(all), nil
}

// key returns the public key with id kid for alg. The key set is fetched
// when it is not known yet, older than KeyMaxAge (so that a key the issuer
// withdrew stops working), or lacks kid (key rotation); not twice within
// MinRefresh, whatever the tokens name. While the issuer cannot be reached,
// the keys fetched last keep working.
func (o *OAuth) key(ctx context.Context, kid, alg string) (*jose.JSONWebKey, error) {
	now := o.now()
	if ks := o.keys.Load(); ks != nil && now.Sub(ks.at) < o.cfg.KeyMaxAge {
		if k := ks.find(kid, alg); k != nil {
			return k, nil
		}
	}
	o.fetchMu.Lock()
	defer o.fetchMu.Unlock()
	ks := o.keys.Load()
	k := ks.find(kid, alg)
	if k != nil && now.Sub(ks.at) < o.cfg.KeyMaxAge {
		return k, nil // fetched while this request waited
	}
	if !o.lastFetch.IsZero() && now.Sub(o.lastFetch) < o.cfg.MinRefresh {
		if k != nil {
			return k, nil
		}
		return nil, fmt.Errorf("%w: unknown signing key %q", ErrInvalidToken, kid)
	}
	o.lastFetch = now
	// A fetch outlives the request that caused it: others wait for it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	set, err := o.fetchKeys(ctx)
	if err != nil {
		if k != nil {
			return k, nil
		}
		return nil, fmt.Errorf("%w: fetching the issuer's keys: %w", ErrInvalidToken, err)
	}
	ks = &keySet{keys: set.Keys, at: now}
	o.keys.Store(ks)
	if k := ks.find(kid, alg); k != nil {
		return k, nil
	}
	return nil, fmt.Errorf("%w: unknown signing key %q", ErrInvalidToken, kid)
}

// keySet is the issuer's key set as fetched at a time.
type keySet struct {
	keys []jose.JSONWebKey
	at   time.Time
}

// find picks the public signing key named kid for alg (with no kid, the
// only such key), or nil.
func (ks *keySet) find(kid, alg string) *jose.JSONWebKey {
	if ks == nil {
		return nil
	}
	var found *jose.JSONWebKey
	for i := range ks.keys {
		k := &ks.keys[i]
		if (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && k.Algorithm != alg) || !k.IsPublic() || (kid != "" && k.KeyID != kid) {
			continue
		}
		if found != nil {
			return nil // ambiguous
		}
		found = k
	}
	return found
}

// fetchKeys reads the key set, finding its URL in the issuer's metadata
// the first time when none is configured.
func (o *OAuth) fetchKeys(ctx context.Context) (*jose.JSONWebKeySet, error) {
	if o.jwksURI == "" {
		u, err := o.discover(ctx)
		if err != nil {
			return nil, err
		}
		o.jwksURI = u
	}
	var set jose.JSONWebKeySet
	if err := o.getJSON(ctx, o.jwksURI, &set); err != nil {
		return nil, err
	}
	return &set, nil
}

// discover reads jwks_uri from the issuer's metadata.
func (o *OAuth) discover(ctx context.Context) (string, error) {
	md, err := o.ServerMetadata(ctx)
	if err != nil {
		return "", err
	}
	if err := absURL("jwks_uri", md.JWKSURI); err != nil {
		return "", err
	}
	return md.JWKSURI, nil
}

// ServerMetadata returns the issuer's authorization server metadata,
// read once (and again after a failure).
func (o *OAuth) ServerMetadata(ctx context.Context) (*ServerMetadata, error) {
	o.mdMu.Lock()
	defer o.mdMu.Unlock()
	if o.md != nil {
		return o.md, nil
	}
	md, err := DiscoverServer(ctx, o.cfg.Client, o.cfg.Issuer)
	if err != nil {
		return nil, err
	}
	o.md = md
	return md, nil
}

// ServerMetadata is what this package reads of an authorization server's
// metadata (RFC 8414, or OpenID Connect Discovery).
type ServerMetadata struct {
	Issuer                      string   `json:"issuer"`
	AuthorizationEndpoint       string   `json:"authorization_endpoint,omitempty"`
	TokenEndpoint               string   `json:"token_endpoint,omitempty"`
	JWKSURI                     string   `json:"jwks_uri,omitempty"`
	DeviceAuthorizationEndpoint string   `json:"device_authorization_endpoint,omitempty"`
	RegistrationEndpoint        string   `json:"registration_endpoint,omitempty"`
	CodeChallengeMethods        []string `json:"code_challenge_methods_supported,omitempty"`
	GrantTypes                  []string `json:"grant_types_supported,omitempty"`
	// URL is where the metadata was read.
	URL string `json:"-"`
}

// DiscoverServer reads the metadata of the authorization server issuer
// with client (nil: a client with a 10 s timeout): RFC 8414's
// /.well-known/oauth-authorization-server first, then OpenID Connect's
// /.well-known/openid-configuration. The metadata must name issuer as
// its issuer.
func DiscoverServer(ctx context.Context, client *http.Client, issuer string) (*ServerMetadata, error) {
	if err := absURL("issuer", issuer); err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	u, _ := url.Parse(issuer)
	path := strings.TrimSuffix(u.Path, "/")
	rfc := *u
	rfc.Path = "/.well-known/oauth-authorization-server" + path
	oidc := *u
	oidc.Path = path + "/.well-known/openid-configuration"
	var errs []error
	for _, m := range []string{rfc.String(), oidc.String()} {
		var md ServerMetadata
		if err := getJSON(ctx, client, m, &md); err != nil {
			errs = append(errs, err)
			continue
		}
		if md.Issuer != issuer {
			return nil, fmt.Errorf("auth: metadata at %s names issuer %q, want %q", m, md.Issuer, issuer)
		}
		md.URL = m
		return &md, nil
	}
	return nil, fmt.Errorf("auth: issuer metadata: %w", errors.Join(errs...))
}

// maxDocument bounds the documents read from the issuer.
const maxDocument = 1 << 20

func (o *OAuth) getJSON(ctx context.Context, u string, v any) error {
	return getJSON(ctx, o.cfg.Client, u, v)
}

// getJSON reads the JSON document at u into v.
func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	return doJSON(client, req, v)
}

func (o *OAuth) do(req *http.Request, v any) error { return doJSON(o.cfg.Client, req, v) }

// doJSON sends req and decodes its 200 answer into v.
func doJSON(client *http.Client, req *http.Request, v any) error {
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxDocument))
		return fmt.Errorf("%s %s: status %d", req.Method, req.URL.Redacted(), res.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, maxDocument)).Decode(v); err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	return nil
}

// introspect asks the issuer about token (RFC 7662), reusing an answer
// for up to CacheTTL (never past the token's exp).
func (o *OAuth) introspect(ctx context.Context, token string) (*Principal, error) {
	sum := sha256.Sum256([]byte(token))
	now := o.now()
	o.cacheMu.Lock()
	c, ok := o.cache[sum]
	o.cacheMu.Unlock()
	if ok && now.Before(c.until) {
		if c.p == nil {
			return nil, fmt.Errorf("%w: not active", ErrInvalidToken)
		}
		return c.p, nil
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.cfg.IntrospectionURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(o.cfg.ClientID), url.QueryEscape(o.cfg.ClientSecret))
	var ans map[string]any
	if err := o.do(req, &ans); err != nil {
		return nil, fmt.Errorf("%w: introspection: %w", ErrInvalidToken, err)
	}
	p, until, err := o.introspected(ans, now)
	o.cacheMu.Lock()
	if len(o.cache) >= maxCache {
		for k, c := range o.cache {
			if !now.Before(c.until) {
				delete(o.cache, k)
			}
		}
		if len(o.cache) >= maxCache {
			clear(o.cache)
		}
	}
	o.cache[sum] = cached{p: p, until: until}
	o.cacheMu.Unlock()
	return p, err
}

// introspected checks an introspection answer and returns the principal
// (nil when the token is not usable) and how long the answer may be reused.
func (o *OAuth) introspected(ans map[string]any, now time.Time) (*Principal, time.Time, error) {
	until := now.Add(o.cfg.CacheTTL)
	if active, _ := ans["active"].(bool); !active {
		return nil, until, fmt.Errorf("%w: not active", ErrInvalidToken)
	}
	if iss, ok := ans["iss"].(string); ok && iss != o.cfg.Issuer {
		return nil, until, fmt.Errorf("%w: issuer %q", ErrInvalidToken, iss)
	}
	if aud, ok := ans["aud"]; ok && !slices.ContainsFunc(strList(aud), func(a string) bool { return slices.Contains(o.audiences, a) }) {
		return nil, until, fmt.Errorf("%w: not for this resource", ErrInvalidToken)
	}
	if exp, ok := ans["exp"].(float64); ok {
		end := time.Unix(int64(exp), 0)
		if now.Add(-o.cfg.Leeway).After(end) {
			return nil, until, fmt.Errorf("%w: expired", ErrInvalidToken)
		}
		if end.Before(until) {
			until = end
		}
	}
	return o.principal(ans), until, nil
}

// principal maps a token's claims to a principal: the swarm: and
// capability: scopes (in "scope" or "scp"), and the configured claims.
func (o *OAuth) principal(claims map[string]any) *Principal {
	var swarms, caps []string
	scopes := append(strList(claims["scope"]), strList(claims["scp"])...)
	for _, s := range scopes {
		if id, ok := strings.CutPrefix(s, ScopeSwarmPrefix); ok && id != "" {
			swarms = append(swarms, id)
		}
		if c, ok := strings.CutPrefix(s, ScopeCapabilityPrefix); ok && c != "" {
			caps = append(caps, c)
		}
	}
	if o.cfg.SwarmsClaim != "" {
		swarms = append(swarms, strList(claims[o.cfg.SwarmsClaim])...)
	}
	if o.cfg.CapabilitiesClaim != "" {
		caps = append(caps, strList(claims[o.cfg.CapabilitiesClaim])...)
	}
	name := "oauth"
	for _, c := range []string{"sub", "client_id"} {
		if s, ok := claims[c].(string); ok && s != "" {
			name = "oauth:" + s
			break
		}
	}
	p := newPrincipal(name, swarms, caps, false)
	p.oauth = o
	return p
}

// strList reads a claim holding a list of strings or a space-separated
// string.
func strList(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// metadataURL is the resource metadata URL for a request path: that of
// the MCP endpoint for /mcp, else the server's.
func (o *OAuth) metadataURL(path string) string {
	if path == "/mcp" || strings.HasPrefix(path, "/mcp/") {
		return o.cfg.Resource + WellKnownPath + "/mcp"
	}
	return o.cfg.Resource + WellKnownPath
}

// MetadataHandler serves the protected resource metadata (RFC 9728) at
// [WellKnownPath] (the server as a whole) and WellKnownPath + "/mcp" (the
// MCP endpoint, whose resource identifier is Resource + "/mcp").
func (o *OAuth) MetadataHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		suffix := strings.TrimPrefix(r.URL.Path, WellKnownPath)
		if suffix != "" && suffix != "/mcp" {
			http.NotFound(w, r)
			return
		}
		scopes := o.cfg.Scopes
		if len(scopes) == 0 {
			scopes = []string{ScopeAllSwarms, ScopeAllCapabilities}
		}
		md := map[string]any{
			"resource":                 o.cfg.Resource + suffix,
			"authorization_servers":    []string{o.cfg.Issuer},
			"scopes_supported":         scopes,
			"bearer_methods_supported": []string{"header"},
			"resource_name":            "swarm",
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_ = json.NewEncoder(w).Encode(md)
	})
}
