package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
)

// TestClientDiscoveryRefusals: a client does not trust protected resource
// metadata that names a resource on another origin unless told to, nor
// metadata without an authorization server, and says so.
func TestClientDiscoveryRefusals(t *testing.T) {
	var md string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, WellKnownPath) {
			_, _ = w.Write([]byte(md))
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="x"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	for _, c := range []struct{ md, resource, want string }{
		{`{"resource":"https://evil.example/mcp","authorization_servers":["https://as.example"]}`, "", "on another origin"},
		{`{"resource":"` + srv.URL + `/mcp","authorization_servers":[]}`, "", "names no authorization server"},
		{`{"resource":"https://other.example/api","authorization_servers":["https://as.example"]}`, "https://mine.example", `not "https://mine.example"`},
	} {
		md = c.md
		cl, err := NewClient(ClientConfig{URL: srv.URL + "/mcp", Resource: c.resource, ClientID: "c", ClientSecret: "s"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := (&http.Client{Transport: cl.Transport(nil)}).Get(srv.URL + "/mcp")
		if err == nil {
			res.Body.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("metadata %s: %v, want an error with %q", c.md, err, c.want)
		}
	}
	if _, err := NewClient(ClientConfig{URL: srv.URL}); err == nil || !strings.Contains(err.Error(), "client id") {
		t.Errorf("no client id: %v", err)
	}
	if _, err := NewClient(ClientConfig{URL: "not a url", ClientID: "c"}); err == nil {
		t.Error("bad URL: no error")
	}
}

// TestSealedStore: tokens round-trip; the stored bytes are neither the
// token nor readable under another name or key.
func TestSealedStore(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	key := []byte(strings.Repeat("k", 32))
	s, err := NewSealedStore(st, key)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := s.LoadToken(ctx, "a"); tok != nil || err != nil {
		t.Fatalf("missing token: %v %v", tok, err)
	}
	want := &TokenSet{AccessToken: "at-123", RefreshToken: "rt-456", TokenType: "Bearer"}
	if err := s.SaveToken(ctx, "a", want); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadToken(ctx, "a")
	if err != nil || got.AccessToken != want.AccessToken || got.RefreshToken != want.RefreshToken {
		t.Fatalf("load: %+v %v", got, err)
	}
	raw, _ := st.Secret(ctx, sealedPrefix+"a")
	if strings.Contains(string(raw), "at-123") || strings.Contains(string(raw), "rt-456") {
		t.Error("the stored value holds the token")
	}
	// Moved to another name: the name is authenticated data.
	if err := st.PutSecret(ctx, sealedPrefix+"b", raw); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadToken(ctx, "b"); err == nil {
		t.Error("a token moved to another name decrypts")
	}
	other, _ := NewSealedStore(st, []byte(strings.Repeat("x", 32)))
	if _, err := other.LoadToken(ctx, "a"); err == nil || !strings.Contains(err.Error(), "cannot decrypt") {
		t.Errorf("another key: %v", err)
	}
	if _, err := NewSealedStore(st, []byte("short")); err == nil {
		t.Error("short key: no error")
	}
	var none store.Secrets
	if _, err := NewSealedStore(none, key); err == nil {
		t.Error("no secrets: no error")
	}
	t.Setenv(SecretKeyEnv, "dG9vIHNob3J0")
	if _, err := SecretKeyFromEnv(); err == nil || !strings.Contains(err.Error(), "32 bytes") {
		t.Errorf("short env key: %v", err)
	}
}

// TestConsentError: the error names the service, the issuer and the
// command, and is ErrConsentRequired.
func TestConsentError(t *testing.T) {
	err := error(&ConsentError{URL: "https://tools.example/mcp", Issuer: "https://as.example", Reason: "no token was granted yet"})
	if !errors.Is(err, ErrConsentRequired) || !strings.Contains(err.Error(), "run `swarm login https://tools.example/mcp`") || !strings.Contains(err.Error(), "https://as.example") {
		t.Errorf("%v", err)
	}
	b, _ := json.Marshal(TokenSet{AccessToken: "x"})
	if strings.Contains(string(b), "expiry") {
		t.Errorf("a token without expiry encodes one: %s", b)
	}
}
