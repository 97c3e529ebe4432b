package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/store/memory"
)

// testKey is a new P-256 key, with its private key and public key as PEM.
func testKey(t *testing.T) (*ecdsa.PrivateKey, []byte, []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(k)
	pub, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return k, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
}

// TestCardKeys checks that the keys of a card_keys file, PEM or JWK set,
// verify a card signed as swarm serve signs it, and that no other key
// does.
func TestCardKeys(t *testing.T) {
	k, _, pub := testKey(t)
	_, _, otherPub := testKey(t)
	signer, err := a2a.NewCardSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	card := &sdk.AgentCard{Name: "trip", Description: "Plans trips", Version: "1"}
	if err := signer.Sign(card, ""); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(card)
	set, _ := json.Marshal(signer.PublicKeys())
	dir := t.TempDir()
	for name, content := range map[string][]byte{"pub.pem": pub, "both.pem": append(append([]byte{}, otherPub...), pub...), "keys.json": set, "other.pem": otherPub} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		keys, err := loadCardKeys(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		err = a2a.VerifyCard(raw, *keys)
		if (err == nil) != (name != "other.pem") {
			t.Errorf("%s: verify: %v", name, err)
		}
	}
}

// TestOAuthClientBadInput checks the oauth and card_keys entries of
// mcp_servers and a2a_agents: each mistake is reported at its line, naming
// the entry, and valid entries make the clients Register gives the MCP
// servers and remote agents.
func TestOAuthClientBadInput(t *testing.T) {
	dir := t.TempDir()
	_, private, pub := testKey(t)
	k, _, _ := testKey(t)
	noKid, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey}}})
	for name, content := range map[string][]byte{"private.pem": private, "pub.pem": pub, "nokid.json": noKid, "empty.pem": []byte("nothing\n"), "bad.json": []byte("{nope")} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SET_SECRET", "s3cret")
	t.Setenv("SWARM_SECRET_KEY", "")
	const mcpHead = "version: 1\nmcp_servers:\n  tools:\n    url: https://tools.example.com/mcp\n"
	const a2aHead = "version: 1\na2a_agents:\n  research:\n    url: https://agents.example.com/a2a/research\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", mcpHead + "    oauth: {client_id: c, client_secret: s}\n", `line 5: mcp server tools: oauth: unknown field "client_secret"`},
		{"missing client_id", mcpHead + "    oauth: {client_secret_env: SET_SECRET}\n", "line 5: mcp server tools: oauth: missing client_id"},
		{"unset secret", mcpHead + "    oauth:\n      client_id: c\n      client_secret_env: SURELY_UNSET_SECRET\n", "line 7: mcp server tools: oauth: client_secret_env: the environment variable SURELY_UNSET_SECRET is not set"},
		{"a person without the key", mcpHead + "    oauth: {client_id: c}\n", "line 5: mcp server tools: oauth: without client_secret_env the tokens are a person's, given with `swarm login https://tools.example.com/mcp --client-id c`"},
		{"scopes not a list", mcpHead + "    oauth: {client_id: c, client_secret_env: SET_SECRET, scopes: read}\n", "oauth: scopes: want a list of strings"},
		{"bad resource", mcpHead + "    oauth: {client_id: c, client_secret_env: SET_SECRET, resource: tools}\n", "oauth: resource: want an http:// or https:// URL"},
		{"not a mapping", mcpHead + "    oauth: yes\n", "mcp server tools: oauth: want a mapping"},
		{"stdio server", "version: 1\nmcp_servers:\n  tools:\n    command: [sh]\n    oauth: {client_id: c, client_secret_env: SET_SECRET}\n", "line 5: mcp server tools: oauth: a stdio server (command) takes no OAuth"},
		{"a2a missing client_id", a2aHead + "    oauth: {scopes: [x]}\n", "line 5: a2a agent research: oauth: missing client_id"},
		{"a2a token and oauth", a2aHead + "    token_env: SET_SECRET\n    oauth: {client_id: c, client_secret_env: SET_SECRET}\n", "line 6: a2a agent research: give token_env (a fixed bearer token) or oauth, not both"},
		{"unreadable card keys", a2aHead + "    card_keys: missing.pem\n", "line 5: a2a agent research: card_keys: open " + filepath.Join(dir, "missing.pem")},
		{"private card key", a2aHead + "    card_keys: private.pem\n", "a EC PRIVATE KEY: give the public key"},
		{"card key without kid", a2aHead + "    card_keys: nokid.json\n", "key 1 has no kid"},
		{"no card key", a2aHead + "    card_keys: empty.pem\n", "no key: want a JWK set or PEM public keys"},
		{"bad JWK set", a2aHead + "    card_keys: bad.json\n", "not a JWK set"},
	} {
		_, err := Parse([]byte(tc.yaml), dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}

	// A bad key given for a person's tokens, or for a service's.
	t.Setenv("SWARM_SECRET_KEY", "short")
	for _, y := range []string{mcpHead + "    oauth: {client_id: c}\n", mcpHead + "    oauth: {client_id: c, client_secret_env: SET_SECRET}\n"} {
		if _, err := Parse([]byte(y), dir); err == nil || !strings.Contains(err.Error(), "line 5: mcp server tools: oauth:") || !strings.Contains(err.Error(), "want 32 bytes") {
			t.Errorf("a bad SWARM_SECRET_KEY: %v", err)
		}
	}

	// Valid entries: a service, a person's (with the key), trusted keys
	// relative to the file.
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	t.Setenv("SWARM_SECRET_KEY", base64.StdEncoding.EncodeToString(key))
	f, err := Parse([]byte(`version: 1
mcp_servers:
  tools:
    url: https://tools.example.com/mcp
    oauth: {client_id: svc, client_secret_env: SET_SECRET, scopes: [read], resource: https://tools.example.com, issuer: https://login.example.com}
a2a_agents:
  research:
    url: https://agents.example.com/a2a/research
    oauth: {client_id: cli}
    card_keys: pub.pem
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	d := f.mcpOAuth["tools"]
	if d == nil || d.cfg.ClientID != "svc" || d.cfg.ClientSecret != "s3cret" || strings.Join(d.cfg.Scopes, " ") != "read" ||
		d.cfg.Resource != "https://tools.example.com" || d.cfg.Issuer != "https://login.example.com" || d.key == nil {
		t.Errorf("mcp oauth: %+v", d)
	}
	r := f.remotes["research"]
	if r == nil || r.oauth == nil || r.oauth.cfg.ClientSecret != "" || r.oauth.cfg.URL != "https://agents.example.com/a2a/research" || r.keys == nil || len(r.keys.Keys) != 1 {
		t.Fatalf("a2a agent: %+v", r)
	}
	// Register makes the clients, over the runtime's store.
	if err := f.openOAuth(memory.New()); err != nil {
		t.Fatal(err)
	}
	if f.toolsets["tools"].OAuth == nil || r.oauth.client == nil || len(r.options()) != 2 {
		t.Errorf("clients: %v %v %d", f.toolsets["tools"].OAuth, r.oauth.client, len(r.options()))
	}
}
