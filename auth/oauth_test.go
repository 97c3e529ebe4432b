package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// testIssuer is an authorization server of the tests: it serves its
// OpenID configuration and key set, and signs tokens with its keys.
type testIssuer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    map[string]*ecdsa.PrivateKey // by kid
	signer  string                       // kid signing new tokens
	fetches atomic.Int64
	down    atomic.Bool               // the key set answers 503
	active  map[string]map[string]any // introspection answers by token
}

func newTestIssuer(t testing.TB) *testIssuer {
	t.Helper()
	is := &testIssuer{keys: map[string]*ecdsa.PrivateKey{}, active: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		if is.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		var set jose.JSONWebKeySet
		for kid, k := range is.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"})
		}
		_ = json.NewEncoder(w).Encode(set)
	})
	mux.HandleFunc("POST /introspect", func(w http.ResponseWriter, r *http.Request) {
		if id, secret, ok := r.BasicAuth(); !ok || id != "swarm" || secret != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		is.mu.Lock()
		ans, ok := is.active[r.PostFormValue("token")]
		is.mu.Unlock()
		if !ok {
			ans = map[string]any{"active": false}
		}
		_ = json.NewEncoder(w).Encode(ans)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	is.rotate(t, "k1")
	return is
}

// rotate adds a key and signs new tokens with it.
func (is *testIssuer) rotate(t testing.TB, kid string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	is.keys[kid], is.signer = k, kid
	is.mu.Unlock()
}

const testResource = "https://swarm.example"

// claims returns valid claims for the test resource with scope.
func (is *testIssuer) claims(scope string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": is.srv.URL, "aud": testResource, "sub": "svc", "scope": scope,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

// sign signs claims with the current key.
func (is *testIssuer) sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	is.mu.Lock()
	kid, k := is.signer, is.keys[is.signer]
	is.mu.Unlock()
	return signWith(t, jose.ES256, k, kid, claims)
}

func signWith(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	return signTyped(t, alg, key, kid, "at+jwt", claims)
}

// signTyped is signWith with the JOSE header typ ("" for none).
func signTyped(t testing.TB, alg jose.SignatureAlgorithm, key any, kid, typ string, claims map[string]any) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func newTestOAuth(t testing.TB, is *testIssuer, mod func(*OAuthConfig)) *OAuth {
	t.Helper()
	cfg := OAuthConfig{Issuer: is.srv.URL, Resource: testResource}
	if mod != nil {
		mod(&cfg)
	}
	o, err := NewOAuth(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// TestOAuthJWT checks the validation of JWT access tokens: accepted ones
// map their scopes to swarms and capabilities; every other one is
// ErrInvalidToken.
func TestOAuthJWT(t *testing.T) {
	is := newTestIssuer(t)
	o := newTestOAuth(t, is, nil)
	ctx := context.Background()

	p, err := o.Verify(ctx, is.sign(t, is.claims("openid swarm:trip capability:check")))
	if err != nil {
		t.Fatalf("valid token: %v", err)
	}
	if p.Name != "oauth:svc" || !p.Allows("trip") || p.Allows("other") || p.All() || !p.AllowsCapability("check") || p.AllowsCapability("x") {
		t.Errorf("principal %+v", p)
	}
	mcp := is.claims("swarm:*")
	mcp["aud"] = []string{"other", testResource + "/mcp"}
	if p, err := o.Verify(ctx, is.sign(t, mcp)); err != nil || !p.All() || p.AllowsCapability("x") {
		t.Errorf("token for the MCP resource with swarm:*: %+v %v", p, err)
	}

	signer := mustKey(t, is, "k1")
	if p, err := o.Verify(ctx, signWith(t, jose.ES256, signer, "", is.claims("swarm:a"))); err != nil || !p.Allows("a") {
		t.Errorf("token without kid, one key in the set: %+v %v", p, err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&signer.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	valid := is.sign(t, is.claims("swarm:*"))
	_, payload, _ := strings.Cut(valid, ".")
	payload, _, _ = strings.Cut(payload, ".")
	hs := b64([]byte(`{"alg":"HS256","kid":"k1","typ":"at+jwt"}`)) + "." + payload
	mac := hmac.New(sha256.New, pub)
	mac.Write([]byte(hs))
	hs += "." + b64(mac.Sum(nil))

	mod := func(f func(map[string]any)) string {
		c := is.claims("swarm:*")
		f(c)
		return is.sign(t, c)
	}
	bad := map[string]string{
		"expired":                   mod(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }),
		"not yet valid":             mod(func(c map[string]any) { c["nbf"] = time.Now().Add(time.Hour).Unix() }),
		"no exp":                    mod(func(c map[string]any) { delete(c, "exp") }),
		"wrong audience":            mod(func(c map[string]any) { c["aud"] = "https://elsewhere.example" }),
		"no audience":               mod(func(c map[string]any) { delete(c, "aud") }),
		"wrong issuer":              mod(func(c map[string]any) { c["iss"] = "https://evil.example" }),
		"alg none":                  b64([]byte(`{"alg":"none","kid":"k1"}`)) + "." + payload + ".",
		"HS256 with the public key": hs,
		"wrong key":                 signWith(t, jose.ES256, other, "k1", is.claims("swarm:*")),
		"tampered":                  valid[:len(valid)-4] + "AAAA",
		"typ JWT (an ID token)":     signTyped(t, jose.ES256, mustKey(t, is, "k1"), "k1", "JWT", is.claims("swarm:*")),
		"no typ":                    signTyped(t, jose.ES256, mustKey(t, is, "k1"), "k1", "", is.claims("swarm:*")),
		"huge":                      strings.Repeat("a", 1_000_000),
		"garbage":                   "not.a.jwt",
		"empty":                     "",
	}
	for name, tok := range bad {
		if p, err := o.Verify(ctx, tok); !errors.Is(err, ErrInvalidToken) || p != nil {
			t.Errorf("%s: got %+v, %v; want ErrInvalidToken", name, p, err)
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("the key set was fetched %d times, want once", n)
	}
}

// TestOAuthKeyRotation checks that a token signed with a new key is
// accepted once the key set is fetched again, and that tokens naming
// unknown keys cannot make the server fetch it more than once per
// MinRefresh.
func TestOAuthKeyRotation(t *testing.T) {
	is := newTestIssuer(t)
	o := newTestOAuth(t, is, func(c *OAuthConfig) { c.MinRefresh = time.Minute })
	now := time.Now()
	o.now = func() time.Time { return now }
	ctx := context.Background()
	if _, err := o.Verify(ctx, is.sign(t, is.claims("swarm:a"))); err != nil {
		t.Fatal(err)
	}
	forger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for i := range 50 {
		tok := signWith(t, jose.ES256, forger, "forged"+string(rune('a'+i%26)), is.claims("swarm:*"))
		if _, err := o.Verify(ctx, tok); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("forged kid: %v", err)
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Fatalf("unknown kids within MinRefresh fetched the key set %d times, want once", n)
	}

	is.rotate(t, "k2")
	rotated := is.sign(t, is.claims("swarm:a"))
	if _, err := o.Verify(ctx, rotated); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("new kid within MinRefresh of the last fetch: %v, want refused", err)
	}
	now = now.Add(time.Minute)
	if p, err := o.Verify(ctx, rotated); err != nil || !p.Allows("a") {
		t.Fatalf("new kid after MinRefresh: %+v %v", p, err)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("fetches = %d, want 2", n)
	}
}

// TestOAuthKeyWithdrawn checks that the key set is fetched again once it
// is older than KeyMaxAge: while the issuer is unreachable the last keys
// hold, and a key the issuer withdrew is then refused.
func TestOAuthKeyWithdrawn(t *testing.T) {
	is := newTestIssuer(t)
	o := newTestOAuth(t, is, nil)
	now := time.Now()
	o.now = func() time.Time { return now }
	ctx := context.Background()
	c := is.claims("swarm:a")
	c["exp"] = now.Add(3 * DefaultKeyMaxAge).Unix()
	tok := is.sign(t, c)
	if _, err := o.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	is.down.Store(true)
	now = now.Add(DefaultKeyMaxAge)
	if _, err := o.Verify(ctx, tok); err != nil {
		t.Fatalf("issuer unreachable after KeyMaxAge: %v, want the last keys to hold", err)
	}
	is.down.Store(false)
	is.rotate(t, "k2")
	is.mu.Lock()
	delete(is.keys, "k1")
	is.mu.Unlock()
	now = now.Add(DefaultMinRefresh)
	if _, err := o.Verify(ctx, tok); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("withdrawn key: %v, want refused", err)
	}
	if n := is.fetches.Load(); n != 3 {
		t.Errorf("fetches = %d, want 3", n)
	}
}

// TestOAuthDiscoveryFailure checks that an unreachable issuer refuses
// tokens (it does not accept them unchecked).
func TestOAuthDiscoveryFailure(t *testing.T) {
	is := newTestIssuer(t)
	tok := is.sign(t, is.claims("swarm:*"))
	o := newTestOAuth(t, is, func(c *OAuthConfig) { c.JWKSURI = is.srv.URL + "/missing" })
	if _, err := o.Verify(context.Background(), tok); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("missing key set: %v", err)
	}
}

// TestOAuthIntrospection checks RFC 7662 introspection: active tokens
// map to principals, inactive ones are refused, and answers are cached
// for CacheTTL.
func TestOAuthIntrospection(t *testing.T) {
	is := newTestIssuer(t)
	o := newTestOAuth(t, is, func(c *OAuthConfig) {
		c.IntrospectionURL, c.ClientID, c.ClientSecret = is.srv.URL+"/introspect", "swarm", "s3cret"
		c.SwarmsClaim = "swarms"
	})
	now := time.Now()
	o.now = func() time.Time { return now }
	is.active["opaque-1"] = map[string]any{"active": true, "iss": is.srv.URL, "aud": testResource, "client_id": "ci", "scope": "capability:*", "swarms": []string{"trip"}, "exp": now.Add(time.Hour).Unix()}
	is.active["wrong-aud"] = map[string]any{"active": true, "aud": "https://elsewhere.example"}
	ctx := context.Background()
	p, err := o.Verify(ctx, "opaque-1")
	if err != nil || p.Name != "oauth:ci" || !p.Allows("trip") || p.Allows("x") || !p.AllowsCapability("x") {
		t.Fatalf("active: %+v %v", p, err)
	}
	for _, tok := range []string{"wrong-aud", "unknown"} {
		if _, err := o.Verify(ctx, tok); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: %v", tok, err)
		}
	}
	// Revoked: the cached answer holds for CacheTTL, then the issuer's
	// answer counts.
	is.mu.Lock()
	delete(is.active, "opaque-1")
	is.mu.Unlock()
	if _, err := o.Verify(ctx, "opaque-1"); err != nil {
		t.Errorf("cached answer: %v", err)
	}
	now = now.Add(DefaultCacheTTL)
	if _, err := o.Verify(ctx, "opaque-1"); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("revoked after the cache: %v", err)
	}
	bad := newTestOAuth(t, is, func(c *OAuthConfig) {
		c.IntrospectionURL, c.ClientID, c.ClientSecret = is.srv.URL+"/introspect", "swarm", "wrong"
	})
	if _, err := bad.Verify(ctx, "opaque-1"); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "status 401") {
		t.Errorf("wrong client secret: %v", err)
	}
}

// TestOAuthMiddleware checks the challenge of a refused request and the
// protected resource metadata, with static tokens still accepted.
func TestOAuthMiddleware(t *testing.T) {
	is := newTestIssuer(t)
	a, err := New([]Token{{Name: "static", Secret: "static-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	a.UseOAuth(newTestOAuth(t, is, nil))
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(FromContext(r.Context()).Name))
	}))
	do := func(path, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, c := range []struct{ path, token, body string }{
		{"/v1/swarms", "static-secret", "static"},
		{"/v1/swarms", is.sign(t, is.claims("swarm:a")), "oauth:svc"},
	} {
		if w := do(c.path, c.token); w.Code != 200 || w.Body.String() != c.body {
			t.Errorf("%s: %d %q", c.body, w.Code, w.Body)
		}
	}
	for _, c := range []struct{ path, token, want string }{
		{"/v1/swarms", "", `Bearer realm="swarm", resource_metadata="` + testResource + `/.well-known/oauth-protected-resource"`},
		{"/mcp", "", `Bearer realm="swarm", resource_metadata="` + testResource + `/.well-known/oauth-protected-resource/mcp"`},
		{"/v1/swarms", "nope", `Bearer realm="swarm", resource_metadata="` + testResource + `/.well-known/oauth-protected-resource", error="invalid_token"`},
	} {
		w := do(c.path, c.token)
		if got := w.Header().Get("WWW-Authenticate"); w.Code != 401 || got != c.want {
			t.Errorf("%s %q: %d %q, want 401 %q", c.path, c.token, w.Code, got, c.want)
		}
	}

	for _, c := range []struct{ path, resource string }{
		{WellKnownPath, testResource},
		{WellKnownPath + "/mcp", testResource + "/mcp"},
	} {
		w := httptest.NewRecorder()
		a.OAuth().MetadataHandler().ServeHTTP(w, httptest.NewRequest("GET", c.path, nil))
		var got struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.Resource != c.resource || len(got.AuthorizationServers) != 1 || got.AuthorizationServers[0] != is.srv.URL || len(got.ScopesSupported) == 0 {
			t.Errorf("%s: %d %s %v", c.path, w.Code, w.Body, err)
		}
	}
}

// TestNewOAuthErrors checks that a bad configuration is refused with a
// clear error.
func TestNewOAuthErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  OAuthConfig
		want string
	}{
		{OAuthConfig{Resource: testResource}, "issuer"},
		{OAuthConfig{Issuer: "https://as.example"}, "resource"},
		{OAuthConfig{Issuer: "https://as.example", Resource: "swarm.example"}, "resource"},
		{OAuthConfig{Issuer: "https://as.example", Resource: testResource, Algorithms: []string{"HS256"}}, `"HS256" is not allowed`},
		{OAuthConfig{Issuer: "https://as.example", Resource: testResource, Algorithms: []string{"none"}}, `"none" is not allowed`},
		{OAuthConfig{Issuer: "https://as.example", Resource: testResource, IntrospectionURL: "https://as.example/i"}, "client id"},
	} {
		if _, err := NewOAuth(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// BenchmarkOAuthVerify measures the validation of a JWT access token with
// the key set cached: the cost an OAuth request adds.
func BenchmarkOAuthVerify(b *testing.B) {
	for _, alg := range []string{"ES256", "RS256"} {
		b.Run(alg, func(b *testing.B) {
			is := newTestIssuer(b)
			tok := is.sign(b, is.claims("swarm:trip"))
			o := newTestOAuth(b, is, nil)
			if alg == "RS256" {
				rk, err := rsa.GenerateKey(rand.Reader, 2048)
				if err != nil {
					b.Fatal(err)
				}
				o.keys.Store(&keySet{keys: []jose.JSONWebKey{{Key: &rk.PublicKey, KeyID: "r1", Algorithm: "RS256", Use: "sig"}}, at: time.Now()})
				o.lastFetch = time.Now()
				tok = signWith(b, jose.RS256, rk, "r1", is.claims("swarm:trip"))
			}
			ctx := context.Background()
			if _, err := o.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := o.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// mustKey returns the issuer's key kid.
func mustKey(t testing.TB, is *testIssuer, kid string) *ecdsa.PrivateKey {
	t.Helper()
	is.mu.Lock()
	defer is.mu.Unlock()
	k := is.keys[kid]
	if k == nil {
		t.Fatalf("no key %s", kid)
	}
	return k
}
