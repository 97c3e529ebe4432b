package main_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/mcp"
	"github.com/swarmrt/swarm/store"
)

// callTrip calls the trip swarm of the MCP server at u through a toolset
// whose requests carry the tokens of c.
func callTrip(t *testing.T, ctx context.Context, u string, c *auth.Client) (string, error) {
	t.Helper()
	ts := &mcp.Toolset{Name: "remote", URL: u, OAuth: c}
	defer ts.Close()
	tools, err := ts.Tools(ctx)
	if err != nil {
		return "", err
	}
	for _, tl := range tools {
		if tl.Name() == "remote__trip" {
			return tl.Call(ctx, json.RawMessage(`{"input":"x"}`))
		}
	}
	t.Fatalf("no remote__trip among %d tools", len(tools))
	return "", nil
}

// TestOAuthClient reaches a swarm serve that needs OAuth as an MCP client
// with tokens of a real authorization server (oidc-provider), found by
// discovery (the server's 401, its protected resource metadata, the
// issuer's metadata): a service with client credentials; a person who
// logs in once (authorization code with PKCE), whose tokens, kept
// encrypted in a SQLite store, another client then loads and refreshes;
// and a client with neither, which gets a consent error naming swarm login.
func TestOAuthClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Access tokens live 30 s, under the client's one-minute margin: every
	// use of a stored token refreshes it.
	issuer, _ := oidcProvider(t, ctx, "SCOPES=swarm:* swarm:trip swarm:approval", "ACCESS_TTL=30")
	s := serveWithOAuth(t, ctx, "    issuer: "+issuer+"\n    resource: "+oauthResource+"\n")
	u := s.URL + "/mcp"
	resource := oauthResource + "/mcp"

	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sealed, err := auth.NewSealedStore(st.(store.Secrets), key)
	if err != nil {
		t.Fatal(err)
	}

	// A service: client credentials.
	svc, err := auth.NewClient(auth.ClientConfig{URL: u, Resource: resource, ClientID: "ci", ClientSecret: "ci-secret", Scopes: []string{"swarm:trip"}, Store: sealed})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := callTrip(t, ctx, u, svc); err != nil || !strings.Contains(out, "plan") {
		t.Fatalf("service: %q %v", out, err)
	}

	// The same service's A2A agent, through a delegation tool.
	agentClient, _ := auth.NewClient(auth.ClientConfig{URL: s.URL + "/a2a/trip", Resource: oauthResource, ClientID: "ci", ClientSecret: "ci-secret", Scopes: []string{"swarm:trip"}})
	delegate, err := a2a.Remote("trip", s.URL+"/a2a/trip", a2a.WithOAuth(agentClient))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := delegate.Call(ctx, json.RawMessage(`{"request":"{\"where\":\"alps\"}"}`)); err != nil || !strings.Contains(out, "plan") {
		t.Fatalf("A2A delegation: %q %v", out, err)
	}

	// A swarm outside the token's scope: the server's 403 names the
	// scope, and the client asks for it (step-up). The approval swarm then
	// runs, and pauses for input, which a delegation cannot give.
	approval, _ := a2a.Remote("approval", s.URL+"/a2a/approval", a2a.WithOAuth(agentClient))
	if _, err := approval.Call(ctx, json.RawMessage(`{"request":"book it"}`)); err == nil || !strings.Contains(err.Error(), "needs input") {
		t.Fatalf("A2A delegation after step-up: %v", err)
	}

	// Nobody consented yet: a clear error.
	person := auth.ClientConfig{URL: u, Resource: resource, ClientID: "cli", Scopes: []string{"swarm:trip"}, Store: sealed}
	c, _ := auth.NewClient(person)
	if _, err := callTrip(t, ctx, u, c); !errors.Is(err, auth.ErrConsentRequired) || !strings.Contains(err.Error(), "swarm login "+u) {
		t.Fatalf("before login: %v", err)
	}

	// A person logs in; the browser follows the redirects.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	err = c.Login(ctx, func(authURL string) error {
		res, err := browser.Get(authURL)
		if err != nil {
			return err
		}
		res.Body.Close()
		return nil
	})
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	// Another process with the same store and key: it loads the token and
	// refreshes it.
	stored, err := sealed.LoadToken(ctx, resource+" "+issuer+" cli")
	if err != nil || stored == nil || stored.RefreshToken == "" {
		t.Fatalf("stored token: %+v %v", stored, err)
	}
	later, _ := auth.NewClient(person)
	if out, err := callTrip(t, ctx, u, later); err != nil || !strings.Contains(out, "plan") {
		t.Fatalf("after login: %q %v", out, err)
	}
	refreshed, _ := sealed.LoadToken(ctx, resource+" "+issuer+" cli")
	if refreshed == nil || refreshed.AccessToken == stored.AccessToken {
		t.Error("the stored token was not refreshed")
	}

	// The database holds no usable token, and another key opens nothing.
	raw, err := st.(store.Secrets).Secret(ctx, "oauth-token:"+resource+" "+issuer+" cli")
	if err != nil || bytes.Contains(raw, []byte(refreshed.AccessToken)) || bytes.Contains(raw, []byte(refreshed.RefreshToken)) {
		t.Errorf("stored secret: %v (plain token inside: %v)", err, bytes.Contains(raw, []byte(refreshed.AccessToken)))
	}
	other := make([]byte, 32)
	_, _ = rand.Read(other)
	wrong, _ := auth.NewSealedStore(st.(store.Secrets), other)
	if _, err := wrong.LoadToken(ctx, resource+" "+issuer+" cli"); err == nil || !strings.Contains(err.Error(), "cannot decrypt") {
		t.Errorf("another key: %v", err)
	}
}

// TestLoginCommand runs `swarm login` against a swarm serve that needs
// OAuth: it prints the authorization URL, which a browser follows to
// oidc-provider and back to the command's loopback port; the command then
// keeps the tokens in its store, encrypted, where a client with the same
// key finds them. Without the key, or the client id, it refuses to start.
func TestLoginCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	issuer, _ := oidcProvider(t, ctx, "SCOPES=swarm:* swarm:trip")
	s := serveWithOAuth(t, ctx, "    issuer: "+issuer+"\n    resource: "+oauthResource+"\n")
	u := s.URL + "/mcp"
	resource := oauthResource + "/mcp"
	dir := workdir(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keyEnv := "SWARM_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key)

	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"login", u, "--client-id", "cli"}, "SWARM_SECRET_KEY is not set"},
		{[]string{keyEnv}, []string{"login", u}, "--client-id is required"},
		{[]string{"SWARM_SECRET_KEY=short"}, []string{"login", u, "--client-id", "cli"}, "want 32 bytes"},
	} {
		cmd := swarmCmd(ctx, dir, c.args...)
		cmd.Env = append(cmd.Env, c.env...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("swarm %v with %v: %v %s; want an error with %q", c.args, c.env, err, out, c.want)
		}
	}

	cmd := swarmCmd(ctx, dir, "login", u, "--client-id", "cli", "--scope", "swarm:trip", "--resource", resource)
	cmd.Env = append(cmd.Env, keyEnv)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	browsed := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, issuer+"/") && !browsed {
			browsed = true
			jar, _ := cookiejar.New(nil)
			res, err := (&http.Client{Jar: jar, Timeout: 30 * time.Second}).Get(line)
			if err != nil {
				t.Fatalf("browser: %v", err)
			}
			res.Body.Close()
		}
	}
	if err := cmd.Wait(); err != nil || !browsed || !strings.Contains(stdout.String(), "authorized") {
		t.Fatalf("swarm login: %v (browsed: %v) %s", err, browsed, stdout.String())
	}

	st, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sealed, _ := auth.NewSealedStore(st.(store.Secrets), key)
	c, _ := auth.NewClient(auth.ClientConfig{URL: u, Resource: resource, ClientID: "cli", Scopes: []string{"swarm:trip"}, Store: sealed})
	if out, err := callTrip(t, ctx, u, c); err != nil || !strings.Contains(out, "plan") {
		t.Fatalf("with the tokens of swarm login: %q %v", out, err)
	}
}
