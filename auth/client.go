package auth

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/swarmrt/swarm/store"
)

// ErrConsentRequired is the error of a request to an OAuth-protected
// service for which no token can be had without a person's consent.
var ErrConsentRequired = errors.New("OAuth consent required")

// ConsentError says that a person must authorize access to Resource at
// the authorization server Issuer (with `swarm login URL`) before the
// service can be called. It is [ErrConsentRequired] to errors.Is.
type ConsentError struct {
	// URL is the service's URL, Resource its resource identifier, Issuer
	// its authorization server.
	URL, Resource, Issuer string
	// Reason says why no token could be had.
	Reason string
}

func (e *ConsentError) Error() string {
	return fmt.Sprintf("%s needs an OAuth access token from %s that a person must authorize (%s): run `swarm login %s`",
		e.URL, orUnknown(e.Issuer), e.Reason, e.URL)
}

// Is reports whether target is ErrConsentRequired.
func (e *ConsentError) Is(target error) bool { return target == ErrConsentRequired }

func orUnknown(s string) string {
	if s == "" {
		return "its authorization server"
	}
	return s
}

// TokenSet is an OAuth token set as a client keeps it.
type TokenSet struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scope        string    `json:"scope,omitempty"`
}

// valid reports whether t can be sent (with a minute's margin).
func (t *TokenSet) valid(now time.Time) bool {
	return t != nil && t.AccessToken != "" && (t.Expiry.IsZero() || now.Add(time.Minute).Before(t.Expiry))
}

// TokenStore keeps a client's tokens between processes.
type TokenStore interface {
	// LoadToken returns the token saved under key, or nil and no error.
	LoadToken(ctx context.Context, key string) (*TokenSet, error)
	// SaveToken saves t under key.
	SaveToken(ctx context.Context, key string, t *TokenSet) error
}

// SecretKeyEnv names the environment variable holding the key that
// encrypts the tokens kept in a store: 32 bytes, base64-encoded (generate
// one with `openssl rand -base64 32`).
const SecretKeyEnv = "SWARM_SECRET_KEY"

// SecretKeyFromEnv reads the key of [SecretKeyEnv].
func SecretKeyFromEnv() ([]byte, error) {
	v := os.Getenv(SecretKeyEnv)
	if v == "" {
		return nil, fmt.Errorf("auth: %s is not set: OAuth tokens are kept in the store encrypted with it (generate one with `openssl rand -base64 32`)", SecretKeyEnv)
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil || len(k) != 32 {
		return nil, fmt.Errorf("auth: %s: want 32 bytes in base64 (`openssl rand -base64 32`)", SecretKeyEnv)
	}
	return k, nil
}

// SealedStore keeps tokens in a store's secrets ([store.Secrets]),
// encrypted with AES-256-GCM under a key of its own: the database holds
// no usable token, and a token moved to another name does not decrypt.
type SealedStore struct {
	secrets store.Secrets
	aead    cipher.AEAD
}

// NewSealedStore returns a token store over secrets with the 32-byte key.
func NewSealedStore(secrets store.Secrets, key []byte) (*SealedStore, error) {
	if secrets == nil {
		return nil, errors.New("auth: this store keeps no secrets")
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("auth: token encryption key of %d bytes: want 32", len(key))
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	return &SealedStore{secrets: secrets, aead: aead}, nil
}

const sealedPrefix = "oauth-token:"

// LoadToken implements TokenStore.
func (s *SealedStore) LoadToken(ctx context.Context, key string) (*TokenSet, error) {
	v, err := s.secrets.Secret(ctx, sealedPrefix+key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: load token: %w", err)
	}
	n := s.aead.NonceSize()
	if len(v) < n {
		return nil, errors.New("auth: load token: stored value too short")
	}
	plain, err := s.aead.Open(nil, v[:n], v[n:], []byte(sealedPrefix+key))
	if err != nil {
		return nil, fmt.Errorf("auth: load token for %s: cannot decrypt (another %s?)", key, SecretKeyEnv)
	}
	var t TokenSet
	if err := json.Unmarshal(plain, &t); err != nil {
		return nil, fmt.Errorf("auth: load token: %w", err)
	}
	return &t, nil
}

// SaveToken implements TokenStore.
func (s *SealedStore) SaveToken(ctx context.Context, key string, t *TokenSet) error {
	plain, err := json.Marshal(t)
	if err != nil {
		return err
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	if err := s.secrets.PutSecret(ctx, sealedPrefix+key, s.aead.Seal(nonce, nonce, plain, []byte(sealedPrefix+key))); err != nil {
		return fmt.Errorf("auth: save token: %w", err)
	}
	return nil
}

// memoryTokens is the default TokenStore: this process only.
type memoryTokens struct {
	mu sync.Mutex
	m  map[string]TokenSet
}

func (m *memoryTokens) LoadToken(_ context.Context, key string) (*TokenSet, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.m[key]; ok {
		return &t, nil
	}
	return nil, nil
}

func (m *memoryTokens) SaveToken(_ context.Context, key string, t *TokenSet) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]TokenSet{}
	}
	m.m[key] = *t
	return nil
}

// ClientConfig configures a [Client].
type ClientConfig struct {
	// URL is the protected service: an MCP endpoint, an A2A agent, an
	// HTTP API.
	URL string
	// Resource is the resource identifier tokens are asked for (RFC
	// 8707). Empty: the resource of the service's protected resource
	// metadata (RFC 9728), which must then be on URL's origin.
	Resource string
	// Issuer is the authorization server. Empty: the first the service's
	// metadata names.
	Issuer string
	// ClientID and ClientSecret identify this client to the authorization
	// server. With a secret, tokens come from the client credentials grant
	// (a service); without one, from a person's authorization code with
	// PKCE ([Client.Login]), then refreshed.
	ClientID, ClientSecret string
	// Scopes are asked for in token requests.
	Scopes []string
	// Store keeps tokens (default: in this process only). Use a
	// [SealedStore] to keep them in the runtime's store, encrypted.
	Store TokenStore
	// HTTPClient reaches the metadata and the authorization server
	// (default: a client with a 10 s timeout).
	HTTPClient *http.Client
}

// Client gets OAuth access tokens for one protected service: it discovers
// the service's authorization server (RFC 9728, then RFC 8414 or OpenID
// discovery), asks it for tokens (client credentials, or refreshes a
// person's authorization), keeps them in its store, and adds them to the
// requests of [Client.Transport]. A token no grant can produce is a
// [ConsentError].
type Client struct {
	cfg ClientConfig

	mu       sync.Mutex
	resource string
	md       *ServerMetadata
	tok      *TokenSet
	loaded   bool
	// extra are scopes services asked for in insufficient_scope
	// challenges (step-up authorization).
	extra []string
}

// scopes are the scopes asked for: the configured ones and those of
// step-ups.
func (c *Client) scopes() []string { return append(slices.Clone(c.cfg.Scopes), c.extra...) }

// NewClient checks cfg and returns its client. Nothing is fetched yet.
func NewClient(cfg ClientConfig) (*Client, error) {
	if err := absURL("url", cfg.URL); err != nil {
		return nil, err
	}
	if cfg.ClientID == "" {
		return nil, fmt.Errorf("auth: OAuth client for %s: missing the client id", cfg.URL)
	}
	if cfg.Store == nil {
		cfg.Store = &memoryTokens{}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &Client{cfg: cfg}, nil
}

// storeKey is where the client's token is kept: one per service,
// authorization server and client.
func (c *Client) storeKey() string {
	return c.resource + " " + c.md.Issuer + " " + c.cfg.ClientID
}

// discover finds the resource identifier and the authorization server's
// metadata, from the service's challenge (its resource_metadata) or the
// well-known URL of its protected resource metadata.
func (c *Client) discover(ctx context.Context, challenge string) error {
	if c.md != nil {
		return nil
	}
	u, _ := url.Parse(c.cfg.URL)
	// RFC 9728 §3.1: the well-known path goes between host and path.
	w := *u
	w.Path = WellKnownPath + strings.TrimSuffix(u.Path, "/")
	w.RawQuery = ""
	urls := []string{w.String()}
	if named := challengeParam(challenge, "resource_metadata"); named != "" && named != urls[0] {
		// The challenge's URL first; the service's own well-known URL
		// if it cannot be read (a server that names its public URL,
		// reached here at another).
		urls = []string{named, urls[0]}
	}
	if root := u.Scheme + "://" + u.Host + WellKnownPath; !slices.Contains(urls, root) {
		// Last, the metadata of the whole server.
		urls = append(urls, root)
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	var errs []error
	for _, m := range urls {
		err := getJSON(ctx, c.cfg.HTTPClient, m, &prm)
		if err == nil {
			errs = nil
			break
		}
		errs = append(errs, err)
	}
	if errs != nil {
		return fmt.Errorf("auth: protected resource metadata of %s: %w", c.cfg.URL, errors.Join(errs...))
	}
	resource := c.cfg.Resource
	switch {
	case resource == "" && !sameOrigin(prm.Resource, c.cfg.URL):
		return fmt.Errorf("auth: the metadata of %s names the resource %q, on another origin: set the client's resource to trust it", c.cfg.URL, prm.Resource)
	case resource == "":
		resource = prm.Resource
	case prm.Resource != "" && prm.Resource != resource && !strings.HasPrefix(prm.Resource, resource+"/"):
		return fmt.Errorf("auth: the metadata of %s names the resource %q, not %q", c.cfg.URL, prm.Resource, resource)
	}
	if prm.Resource != "" {
		resource = prm.Resource
	}
	issuer := c.cfg.Issuer
	if issuer == "" {
		if len(prm.AuthorizationServers) == 0 {
			return fmt.Errorf("auth: the metadata of %s names no authorization server", c.cfg.URL)
		}
		issuer = prm.AuthorizationServers[0]
	}
	md, err := DiscoverServer(ctx, c.cfg.HTTPClient, issuer)
	if err != nil {
		return err
	}
	if md.TokenEndpoint == "" {
		return fmt.Errorf("auth: authorization server %s has no token endpoint", issuer)
	}
	c.resource, c.md = resource, md
	return nil
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// challengeParam returns the parameter name of a WWW-Authenticate Bearer
// challenge.
func challengeParam(challenge, name string) string {
	i := strings.Index(challenge, name+`="`)
	if i < 0 {
		return ""
	}
	rest := challenge[i+len(name)+2:]
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// token returns a valid token: the cached or stored one, refreshed, or a
// new one from the client credentials grant; else a ConsentError.
func (c *Client) token(ctx context.Context, challenge string, stale string) (*TokenSet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.discover(ctx, challenge); err != nil {
		return nil, err
	}
	if !c.loaded {
		t, err := c.cfg.Store.LoadToken(ctx, c.storeKey())
		if err != nil {
			return nil, err
		}
		c.tok, c.loaded = t, true
	}
	now := time.Now()
	if c.tok.valid(now) && c.tok.AccessToken != stale {
		return c.tok, nil
	}
	var err error
	var t *TokenSet
	switch {
	case c.tok != nil && c.tok.RefreshToken != "":
		t, err = c.grant(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.tok.RefreshToken}})
		if err != nil && c.cfg.ClientSecret == "" {
			return nil, &ConsentError{URL: c.cfg.URL, Resource: c.resource, Issuer: c.md.Issuer, Reason: "the refresh failed: " + err.Error()}
		}
		if err == nil && t.RefreshToken == "" {
			t.RefreshToken = c.tok.RefreshToken
		}
	case c.cfg.ClientSecret == "":
		return nil, &ConsentError{URL: c.cfg.URL, Resource: c.resource, Issuer: c.md.Issuer, Reason: "no token was granted yet"}
	}
	if t == nil {
		form := url.Values{"grant_type": {"client_credentials"}}
		if sc := c.scopes(); len(sc) > 0 {
			form.Set("scope", strings.Join(sc, " "))
		}
		if t, err = c.grant(ctx, form); err != nil {
			return nil, err
		}
	}
	if err := c.cfg.Store.SaveToken(ctx, c.storeKey(), t); err != nil {
		return nil, err
	}
	c.tok = t
	return t, nil
}

// grant posts a token request and returns its token.
func (c *Client) grant(ctx context.Context, form url.Values) (*TokenSet, error) {
	form.Set("resource", c.resource)
	if c.cfg.ClientSecret == "" {
		form.Set("client_id", c.cfg.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.md.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if c.cfg.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(c.cfg.ClientID), url.QueryEscape(c.cfg.ClientSecret))
	}
	res, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("auth: token request to %s: %w", c.md.TokenEndpoint, err)
	}
	defer res.Body.Close()
	var ans struct {
		TokenSet
		ExpiresIn        int64  `json:"expires_in"`
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, maxDocument)).Decode(&ans); err != nil {
		return nil, fmt.Errorf("auth: token request to %s: status %d: %w", c.md.TokenEndpoint, res.StatusCode, err)
	}
	if res.StatusCode != http.StatusOK || ans.AccessToken == "" {
		return nil, fmt.Errorf("auth: token request to %s (%s): status %d: %s %s", c.md.TokenEndpoint, form.Get("grant_type"), res.StatusCode, ans.Error, ans.ErrorDescription)
	}
	t := ans.TokenSet
	if ans.ExpiresIn > 0 {
		t.Expiry = time.Now().Add(time.Duration(ans.ExpiresIn) * time.Second)
	}
	return &t, nil
}

// Transport returns a RoundTripper that sends base's requests with the
// client's access token. Before the first token, a request is sent
// without one; the service's 401 names its metadata, and the request is
// sent again with a token. A token the service refuses is replaced once
// (refreshed, or granted again). When no token can be had without a
// person, the request fails with a [ConsentError].
func (c *Client) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &oauthTransport{c: c, base: base}
}

type oauthTransport struct {
	c    *Client
	base http.RoundTripper
}

func (t *oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	t.c.mu.Lock()
	known := t.c.md != nil
	t.c.mu.Unlock()
	var sent string
	if known || t.c.cfg.Issuer != "" {
		tok, err := t.c.token(ctx, "", "")
		if err != nil {
			return nil, err
		}
		sent = tok.AccessToken
	}
	res, err := t.send(req, sent)
	if err != nil || (res.StatusCode != http.StatusUnauthorized && res.StatusCode != http.StatusForbidden) {
		return res, err
	}
	if req.Body != nil && req.GetBody == nil {
		return res, nil // cannot send the body again
	}
	challenge := res.Header.Get("WWW-Authenticate")
	var tok *TokenSet
	if res.StatusCode == http.StatusForbidden {
		if sent == "" || !strings.Contains(challenge, `error="insufficient_scope"`) {
			return res, nil
		}
		tok, err = t.c.stepUp(ctx, challenge, sent)
		if err == nil && tok == nil {
			return res, nil // nothing more to ask for: the refusal stands
		}
	} else {
		tok, err = t.c.token(ctx, challenge, sent)
	}
	if err != nil {
		res.Body.Close()
		return nil, err
	}
	res.Body.Close()
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		req = req.Clone(ctx)
		req.Body = body
	}
	return t.send(req, tok.AccessToken)
}

func (t *oauthTransport) send(req *http.Request, token string) (*http.Response, error) {
	if token == "" {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return t.base.RoundTrip(r)
}

// stepUp answers an insufficient_scope challenge: the client asks for the
// scope it names from now on, and replaces token stale with one that has
// it (a new client credentials grant). A person's token cannot be widened
// without them: that is a ConsentError. It returns nil and no error when
// the challenge names no scope the client did not ask for already.
func (c *Client) stepUp(ctx context.Context, challenge, stale string) (*TokenSet, error) {
	c.mu.Lock()
	var added []string
	for _, s := range strings.Fields(challengeParam(challenge, "scope")) {
		if !slices.Contains(c.scopes(), s) {
			added = append(added, s)
		}
	}
	c.extra = append(c.extra, added...)
	secret, md := c.cfg.ClientSecret != "", c.md
	c.mu.Unlock()
	switch {
	case len(added) == 0:
		return nil, nil
	case !secret:
		issuer := ""
		if md != nil {
			issuer = md.Issuer
		}
		return nil, &ConsentError{URL: c.cfg.URL, Resource: c.resource, Issuer: issuer,
			Reason: "the service asks for the scope " + strings.Join(added, " ") + ": log in again with --scope " + strings.Join(added, " --scope ")}
	}
	c.mu.Lock()
	if c.tok != nil && c.tok.AccessToken == stale {
		c.tok.RefreshToken = "" // a new grant, not a refresh, brings new scopes
	}
	c.mu.Unlock()
	return c.token(ctx, "", stale)
}

// Login has a person authorize this client: authorization code with PKCE
// (S256) through a redirect to a loopback listener on this machine. It
// discovers the authorization server, calls open with the URL to visit
// (print it, or open a browser), waits for the redirect (until ctx ends),
// exchanges the code and saves the token, refresh token included.
func (c *Client) Login(ctx context.Context, open func(authURL string) error) error {
	c.mu.Lock()
	err := c.discover(ctx, "")
	md, resource := c.md, c.resource
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if md.AuthorizationEndpoint == "" {
		return fmt.Errorf("auth: authorization server %s has no authorization endpoint", md.Issuer)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("auth: login: %w", err)
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	verifier := randomString(32)
	state := randomString(16)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {c.cfg.ClientID},
		"redirect_uri":          {redirect},
		"state":                 {state},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
		"resource":              {resource},
	}
	if len(c.cfg.Scopes) > 0 {
		q.Set("scope", strings.Join(c.cfg.Scopes, " "))
	}
	authURL := md.AuthorizationEndpoint + "?" + q.Encode()
	if strings.Contains(md.AuthorizationEndpoint, "?") {
		authURL = md.AuthorizationEndpoint + "&" + q.Encode()
	}
	type result struct {
		code string
		err  error
	}
	done := make(chan result, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		v := r.URL.Query()
		var res result
		switch {
		case v.Get("state") != state:
			res.err = errors.New("auth: login: the redirect's state does not match")
		case v.Get("error") != "":
			res.err = fmt.Errorf("auth: login refused: %s %s", v.Get("error"), v.Get("error_description"))
		case v.Get("code") == "":
			res.err = errors.New("auth: login: the redirect has no code")
		default:
			res.code = v.Get("code")
		}
		if res.err != nil {
			http.Error(w, res.err.Error(), http.StatusBadRequest)
		} else {
			_, _ = io.WriteString(w, "Authorized: you may close this page.\n")
		}
		select {
		case done <- res:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	if err := open(authURL); err != nil {
		return err
	}
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		return fmt.Errorf("auth: login: no authorization came back: %w", ctx.Err())
	}
	if res.err != nil {
		return res.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.grant(ctx, url.Values{"grant_type": {"authorization_code"}, "code": {res.code}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
	if err != nil {
		return err
	}
	if err := c.cfg.Store.SaveToken(ctx, c.storeKey(), t); err != nil {
		return err
	}
	c.tok, c.loaded = t, true
	return nil
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
