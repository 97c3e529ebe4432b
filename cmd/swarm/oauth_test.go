package main_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/swarmrt/swarm/a2a"
)

// oidcProvider starts the certified OpenID provider of interop/oauth
// (oidc-provider, pinned by its package-lock.json) on a loopback port and
// returns its issuer URL and a function that stops it. Without node or its
// packages the test skips loudly, and fails in CI.
func oidcProvider(t *testing.T, ctx context.Context, env ...string) (string, func()) {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "..", "interop", "oauth"))
	_, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "oidc-provider")); err != nil || nodeErr != nil {
		msg := "!!! node or interop/oauth/node_modules is missing: run (cd interop/oauth && npm ci) to test against oidc-provider !!!"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cmd := exec.CommandContext(ctx, "node", "provider.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) }
	t.Cleanup(stop)
	issuer := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "issuer "); ok {
				issuer <- u
			}
		}
		close(issuer)
	}()
	select {
	case u, ok := <-issuer:
		if !ok {
			t.Fatalf("oidc-provider exited before it was ready: %s", stderr.String())
		}
		return u, stop
	case <-time.After(30 * time.Second):
		t.Fatalf("oidc-provider did not print its issuer within 30s: %s", stderr.String())
	}
	return "", nil
}

// clientToken asks the issuer for an access token with client
// credentials, for resource with scope.
func clientToken(t *testing.T, issuer, resource, scope string) string {
	t.Helper()
	code, b := clientPost(t, issuer+"/token", url.Values{"grant_type": {"client_credentials"}, "scope": {scope}, "resource": {resource}})
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(b, &tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token request: %d %s", code, b)
	}
	return tok.AccessToken
}

// clientPost posts a form to the issuer as the client ci.
func clientPost(t *testing.T, u string, form url.Values) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("ci", "ci-secret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// serveWithOAuth starts swarm serve with an oauth section (oauthYAML,
// indented under serve:) and the static token ops.
func serveWithOAuth(t *testing.T, ctx context.Context, oauthYAML string, env ...string) *served {
	t.Helper()
	dir := workdir(t)
	f := filepath.Join(dir, "swarm.yaml")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, []byte("serve:\n  oauth:\n"+oauthYAML)...)
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return serve(t, ctx, dir, append([]string{"SWARM_TOKENS=ops:t0p-secret:trip"}, env...))
}

// bearer sends a request with a bearer token and returns its status, its
// WWW-Authenticate header and its body.
func bearer(t *testing.T, method, u, token, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("WWW-Authenticate"), string(b)
}

const oauthResource = "https://swarm.example"

// TestServeOAuth runs swarm serve as a protected resource of a real
// authorization server (oidc-provider): its JWT access tokens are
// accepted for the swarms their scopes name, on the HTTP API, A2A and MCP
// alike; tokens for another resource, forged ones and huge ones get 401;
// the static token keeps working; the resource metadata names the issuer.
func TestServeOAuth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	issuer, _ := oidcProvider(t, ctx, "SCOPES=swarm:* swarm:trip swarm:approval")
	s := serveWithOAuth(t, ctx, "    issuer: "+issuer+"\n    resource: "+oauthResource+"\n")

	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	if code := httpJSON(t, "GET", s.URL+"/.well-known/oauth-protected-resource/mcp", "", &md); code != 200 || md.Resource != oauthResource+"/mcp" ||
		len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != issuer || !strings.Contains(strings.Join(md.ScopesSupported, " "), "swarm:trip") {
		t.Errorf("metadata: %d %+v", code, md)
	}

	trip := clientToken(t, issuer, oauthResource, "swarm:trip")
	if code, _, body := bearer(t, "GET", s.URL+"/v1/swarms", trip, ""); code != 200 || !strings.Contains(body, `"trip"`) || strings.Contains(body, `"approval"`) {
		t.Errorf("token with swarm:trip lists: %d %s", code, body)
	}
	if code, _, body := bearer(t, "GET", s.URL+"/v1/swarms/approval", clientToken(t, issuer, oauthResource, "swarm:*"), ""); code != 200 {
		t.Errorf("token with swarm:*, swarm approval: %d %s", code, body)
	}
	if code, _, body := bearer(t, "GET", s.URL+"/v1/swarms/trip", "t0p-secret", ""); code != 200 {
		t.Errorf("static token: %d %s", code, body)
	}
	mcpInit := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	if code, _, body := bearer(t, "POST", s.URL+"/mcp", trip, mcpInit); code != 200 {
		t.Errorf("MCP with the token: %d %s", code, body)
	}
	a2aCall := `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"none"}}`
	// Outside the scopes: 403 naming the scope to ask for (step-up).
	mcpCall := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"approval","arguments":{"input":"x"}}}`
	for _, c := range []struct{ name, path, body, challenge string }{
		{"HTTP API", "/v1/swarms/approval", "", `Bearer error="insufficient_scope", scope="swarm:approval", resource_metadata="` + oauthResource + `/.well-known/oauth-protected-resource"`},
		{"HTTP API run", "/v1/swarms/approval/runs", `{"input":"x"}`, `Bearer error="insufficient_scope", scope="swarm:approval", resource_metadata="` + oauthResource + `/.well-known/oauth-protected-resource"`},
		{"A2A", "/a2a/approval", a2aCall, `Bearer error="insufficient_scope", scope="swarm:approval", resource_metadata="` + oauthResource + `/.well-known/oauth-protected-resource"`},
		{"MCP", "/mcp", mcpCall, `Bearer error="insufficient_scope", scope="swarm:approval", resource_metadata="` + oauthResource + `/.well-known/oauth-protected-resource/mcp"`},
	} {
		method := "POST"
		if c.body == "" {
			method = "GET"
		}
		if code, challenge, body := bearer(t, method, s.URL+c.path, trip, c.body); code != 403 || challenge != c.challenge {
			t.Errorf("%s approval with swarm:trip: %d %q %s, want 403 %q", c.name, code, challenge, body, c.challenge)
		}
	}

	// Refused tokens: 401 with a challenge naming the metadata, and
	// error="invalid_token" when a token was sent.
	_, payload, _ := strings.Cut(trip, ".")
	payload, _, _ = strings.Cut(payload, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"k1"}`)) + "." + payload + "."
	meta := `resource_metadata="` + oauthResource + `/.well-known/oauth-protected-resource`
	for _, c := range []struct{ name, method, path, token, body, challenge string }{
		{"no token", "GET", "/v1/swarms", "", "", meta + `"`},
		{"no token, MCP", "POST", "/mcp", "", mcpInit, meta + `/mcp"`},
		{"no token, A2A", "POST", "/a2a/trip", "", a2aCall, meta + `"`},
		{"other resource", "GET", "/v1/swarms", clientToken(t, issuer, "https://elsewhere.example", "swarm:*"), "", `error="invalid_token"`},
		{"alg none", "GET", "/v1/swarms", none, "", `error="invalid_token"`},
		{"tampered", "GET", "/v1/swarms", trip[:len(trip)-4] + "AAAA", "", `error="invalid_token"`},
		{"1 MB", "GET", "/v1/swarms", strings.Repeat("a", 1_000_000), "", `error="invalid_token"`},
		{"other resource, MCP", "POST", "/mcp", clientToken(t, issuer, "https://elsewhere.example", "swarm:*"), mcpInit, meta + `/mcp", error="invalid_token"`},
	} {
		code, challenge, body := bearer(t, c.method, s.URL+c.path, c.token, c.body)
		if code != 401 || !strings.Contains(challenge, c.challenge) {
			t.Errorf("%s: %d %q %s; want 401 with %s", c.name, code, challenge, body, c.challenge)
		}
	}
	if !strings.Contains(s.Log(), "OAuth access tokens of "+issuer) || !strings.Contains(s.Log(), "/.well-known/oauth-protected-resource (protected resource metadata)") {
		t.Errorf("the start does not say OAuth is on: %s", s.Log())
	}
	if strings.Contains(s.Log(), trip) {
		t.Error("an access token is in the log")
	}
}

// TestServeOAuthIntrospection runs swarm serve validating opaque access
// tokens of oidc-provider by introspection: an active token is accepted,
// a revoked one refused.
func TestServeOAuthIntrospection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	issuer, _ := oidcProvider(t, ctx, "OPAQUE=1", "SCOPES=swarm:* swarm:trip")
	s := serveWithOAuth(t, ctx, "    issuer: "+issuer+"\n    resource: "+oauthResource+"\n    introspection:\n      url: "+issuer+"/token/introspection\n      client_id_env: OAUTH_ID\n      client_secret_env: OAUTH_SECRET\n",
		"OAUTH_ID=swarm", "OAUTH_SECRET=swarm-secret")
	active := clientToken(t, issuer, oauthResource, "swarm:trip")
	if code, _, body := bearer(t, "GET", s.URL+"/v1/swarms/trip", active, ""); code != 200 {
		t.Errorf("active token: %d %s", code, body)
	}
	revoked := clientToken(t, issuer, oauthResource, "swarm:trip")
	if code, b := clientPost(t, issuer+"/token/revocation", url.Values{"token": {revoked}}); code != 200 {
		t.Fatalf("revocation: %d %s", code, b)
	}
	if code, challenge, body := bearer(t, "GET", s.URL+"/v1/swarms/trip", revoked, ""); code != 401 || !strings.Contains(challenge, `error="invalid_token"`) {
		t.Errorf("revoked token: %d %q %s", code, challenge, body)
	}
	if code, _, body := bearer(t, "GET", s.URL+"/v1/swarms/trip", "t0p-secret", ""); code != 200 {
		t.Errorf("static token: %d %s", code, body)
	}
}

// TestServeOAuthKeyRotation restarts oidc-provider with a new signing key
// (a new kid, the old key gone): swarm serve fetches the key set again
// and accepts the new tokens, and no longer the old ones.
func TestServeOAuthKeyRotation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	issuer, stop := oidcProvider(t, ctx, "KID=k1", "SCOPES=swarm:trip")
	s := serveWithOAuth(t, ctx, "    issuer: "+issuer+"\n    resource: "+oauthResource+"\n    jwks_min_refresh: 1s\n")
	old := clientToken(t, issuer, oauthResource, "swarm:trip")
	if code, _, body := bearer(t, "GET", s.URL+"/v1/swarms/trip", old, ""); code != 200 {
		t.Fatalf("token of the first key: %d %s", code, body)
	}
	stop()
	u, _ := url.Parse(issuer)
	if again, _ := oidcProvider(t, ctx, "KID=k2", "SCOPES=swarm:trip", "PORT="+u.Port()); again != issuer {
		t.Fatalf("restarted issuer %s, want %s", again, issuer)
	}
	rotated := clientToken(t, issuer, oauthResource, "swarm:trip")
	// Within jwks_min_refresh of the last fetch the new kid is refused;
	// after it the key set is fetched again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _, body := bearer(t, "GET", s.URL+"/v1/swarms/trip", rotated, "")
		if code == 200 {
			break
		}
		if code != 401 || time.Now().After(deadline) {
			t.Fatalf("token of the new key: %d %s (for 30s)", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, _, body := bearer(t, "GET", s.URL+"/v1/swarms/trip", old, ""); code != 401 {
		t.Errorf("token of the retired key: %d %s, want 401", code, body)
	}
}

// TestServeA2ACard: with OAuth on and a card signing key, swarm serve's
// agent cards declare the authorization server's flows (read from its
// metadata) for the swarm's scope, and carry a signature that the keys the
// server publishes verify.
func TestServeA2ACard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	issuer, _ := oidcProvider(t, ctx, "SCOPES=swarm:* swarm:trip swarm:approval")
	s := serveWithOAuth(t, ctx, "    issuer: "+issuer+"\n    resource: "+oauthResource+"\n", "SWARM_A2A_SIGNING_KEY="+signingKeyFile(t))

	code, _, raw := bearer(t, "GET", s.URL+"/a2a/trip/.well-known/agent-card.json", "", "")
	var card struct {
		SecuritySchemes map[string]struct {
			OAuth2SecurityScheme *struct {
				Oauth2MetadataURL string `json:"oauth2MetadataUrl"`
				Flows             map[string]struct {
					AuthorizationURL       string            `json:"authorizationUrl"`
					DeviceAuthorizationURL string            `json:"deviceAuthorizationUrl"`
					TokenURL               string            `json:"tokenUrl"`
					Scopes                 map[string]string `json:"scopes"`
					PKCERequired           bool              `json:"pkceRequired"`
				} `json:"flows"`
			} `json:"oauth2SecurityScheme"`
		} `json:"securitySchemes"`
		SecurityRequirements []map[string]any             `json:"securityRequirements"`
		Signatures           []struct{ Protected string } `json:"signatures"`
	}
	if err := json.Unmarshal([]byte(raw), &card); code != 200 || err != nil {
		t.Fatalf("card: %d %v %s", code, err, raw)
	}
	code2 := card.SecuritySchemes["oauth2"].OAuth2SecurityScheme
	cc := card.SecuritySchemes["oauth2-client-credentials"].OAuth2SecurityScheme
	if code2 == nil || cc == nil || !strings.HasPrefix(code2.Oauth2MetadataURL, issuer+"/.well-known/") {
		t.Fatalf("card schemes: %s", raw)
	}
	ac, ok := code2.Flows["authorizationCode"]
	if !ok || !strings.HasPrefix(ac.AuthorizationURL, issuer) || !strings.HasPrefix(ac.TokenURL, issuer) || !ac.PKCERequired || ac.Scopes["swarm:trip"] == "" {
		t.Errorf("authorization code flow: %+v", code2.Flows)
	}
	if f, ok := cc.Flows["clientCredentials"]; !ok || f.TokenURL != ac.TokenURL || f.Scopes["swarm:trip"] == "" {
		t.Errorf("client credentials flow: %+v", cc.Flows)
	}
	if dc := card.SecuritySchemes["oauth2-device-code"].OAuth2SecurityScheme; dc == nil || !strings.HasPrefix(dc.Flows["deviceCode"].DeviceAuthorizationURL, issuer) {
		t.Errorf("device code flow: %s", raw)
	}
	if len(card.SecurityRequirements) != 4 {
		t.Errorf("security requirements: %v", card.SecurityRequirements)
	}
	// The token endpoint the card names issues a token the server takes.
	if code, _, body := bearer(t, "POST", s.URL+"/a2a/trip", clientToken(t, issuer, oauthResource, "swarm:trip"), `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"none"}}`); code != 200 || !strings.Contains(body, "error") {
		t.Errorf("A2A with a token from the card's flow: %d %s", code, body)
	}

	if len(card.Signatures) != 1 {
		t.Fatalf("signatures: %s", raw)
	}
	hb, _ := base64.RawURLEncoding.DecodeString(card.Signatures[0].Protected)
	var h struct{ Jku string }
	_ = json.Unmarshal(hb, &h)
	_, _, jwks := bearer(t, "GET", h.Jku, "", "")
	var keys jose.JSONWebKeySet
	if err := json.Unmarshal([]byte(jwks), &keys); err != nil {
		t.Fatalf("keys at %q: %v %s", h.Jku, err, jwks)
	}
	if err := a2a.VerifyCard([]byte(raw), keys); err != nil {
		t.Errorf("verify the served card: %v", err)
	}
}
