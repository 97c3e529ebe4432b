package a2a_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/swarmrt/swarm/a2a"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/swarmtest"
)

func newSigner(t *testing.T) *a2a.CardSigner {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a2a.NewCardSigner(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func get(t *testing.T, u string) []byte {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", u, res.StatusCode, b)
	}
	return b
}

// TestSignedCard serves signed cards and verifies them: with the keys
// served at KeysPath, the signature's jku; a changed card, another key, an
// unsigned card and a signature claiming alg none are refused.
func TestSignedCard(t *testing.T) {
	signer := newSigner(t)
	e := newEnv(t, a2a.Options{Signer: signer}, nil)
	raw := get(t, e.srv.URL+"/a2a/echo/.well-known/agent-card.json")
	var card struct {
		Description string `json:"description"`
		Signatures  []struct {
			Protected, Signature string
		} `json:"signatures"`
	}
	if err := json.Unmarshal(raw, &card); err != nil || len(card.Signatures) != 1 {
		t.Fatalf("card %s: %v", raw, err)
	}
	hb, _ := base64.RawURLEncoding.DecodeString(card.Signatures[0].Protected)
	var h struct{ Alg, Typ, Kid, Jku string }
	_ = json.Unmarshal(hb, &h)
	if h.Alg != "ES256" || h.Typ != "JOSE" || h.Kid != signer.KeyID() || h.Jku != e.srv.URL+a2a.KeysPath {
		t.Fatalf("protected header %s", hb)
	}
	var served jose.JSONWebKeySet
	if err := json.Unmarshal(get(t, h.Jku), &served); err != nil || len(served.Keys) != 1 || !served.Keys[0].IsPublic() {
		t.Fatalf("key set at %s: %+v %v", h.Jku, served, err)
	}
	if err := a2a.VerifyCard(raw, served); err != nil {
		t.Fatalf("verify: %v", err)
	}

	tampered := []byte(strings.Replace(string(raw), `"Echoes"`, `"Echoes everything"`, 1))
	other := newSigner(t)
	unsigned := get(t, newEnv(t, a2a.Options{}, nil).srv.URL+"/a2a/echo/.well-known/agent-card.json")
	none := []byte(strings.Replace(string(raw), card.Signatures[0].Protected,
		base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"`+signer.KeyID()+`"}`)), 1))
	for name, c := range map[string]struct {
		raw  []byte
		keys jose.JSONWebKeySet
		want string
	}{
		"tampered":  {tampered, served, "invalid signature"},
		"other key": {raw, other.PublicKeys(), "no trusted key"},
		"unsigned":  {unsigned, served, "not signed"},
		"alg none":  {none, served, `"none" is not accepted`},
		"not JSON":  {[]byte("<html>"), served, "not JSON"},
	} {
		err := a2a.VerifyCard(c.raw, c.keys)
		if !errors.Is(err, a2a.ErrCardSignature) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrCardSignature with %q", name, err, c.want)
		}
	}

	// Without a signer there are no keys to serve.
	res, err := http.Get(newEnv(t, a2a.Options{}, nil).srv.URL + a2a.KeysPath)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("keys without a signer: %d", res.StatusCode)
	}
}

// TestCardSignerKeys signs with each kind of key, loaded from PEM files,
// and refuses keys too weak or of another kind.
func TestCardSignerKeys(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	ecDER, _ := x509.MarshalECPrivateKey(ec)
	edDER, _ := x509.MarshalPKCS8PrivateKey(ed)
	dir := t.TempDir()
	for _, c := range []struct {
		name, typ string
		der       []byte
		alg       string
	}{
		{"ec.pem", "EC PRIVATE KEY", ecDER, "ES384"},
		{"rsa.pem", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rk), "RS256"},
		{"ed.pem", "PRIVATE KEY", edDER, "EdDSA"},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: c.typ, Bytes: c.der}), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := a2a.LoadCardSigner(path)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		e := newEnv(t, a2a.Options{Signer: s}, nil)
		raw := get(t, e.srv.URL+"/a2a/planner/.well-known/agent-card.json")
		if err := a2a.VerifyCard(raw, s.PublicKeys()); err != nil || !strings.Contains(string(raw), "signatures") {
			t.Errorf("%s: %v", c.name, err)
		}
		if s.PublicKeys().Keys[0].Algorithm != c.alg {
			t.Errorf("%s: algorithm %s, want %s", c.name, s.PublicKeys().Keys[0].Algorithm, c.alg)
		}
	}
	weak, _ := rsa.GenerateKey(rand.Reader, 1024)
	if _, err := a2a.NewCardSigner(weak); err == nil || !strings.Contains(err.Error(), "at least 2048") {
		t.Errorf("1024-bit RSA: %v", err)
	}
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if _, err := a2a.NewCardSigner(p224); err == nil {
		t.Error("P-224: no error")
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.pem"), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a2a.LoadCardSigner(filepath.Join(dir, "bad.pem")); err == nil || !strings.Contains(err.Error(), "no PEM block") {
		t.Errorf("bad file: %v", err)
	}
}

// TestRemoteVerifiesCard delegates to a remote agent whose card must be
// signed by a trusted key: with the right keys the delegation works; with
// others, or an unsigned card, the call fails and sends nothing.
func TestRemoteVerifiesCard(t *testing.T) {
	signer := newSigner(t)
	signed := newEnv(t, a2a.Options{Signer: signer}, nil)
	unsigned := newEnv(t, a2a.Options{}, nil)
	ctx := swarmtest.Context(t)
	call := func(base string, keys jose.JSONWebKeySet) (string, error) {
		tl, err := a2a.Remote("helper", base+"/a2a/echo", a2a.WithCardKeys(keys))
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return tl.Call(cctx, json.RawMessage(`{"request": "hi"}`))
	}
	if out, err := call(signed.srv.URL, signer.PublicKeys()); err != nil || out != "hello back" {
		t.Fatalf("trusted card: %q %v", out, err)
	}
	for name, c := range map[string]struct {
		base string
		keys jose.JSONWebKeySet
	}{
		"other key": {signed.srv.URL, newSigner(t).PublicKeys()},
		"unsigned":  {unsigned.srv.URL, signer.PublicKeys()},
	} {
		if _, err := call(c.base, c.keys); !errors.Is(err, a2a.ErrCardSignature) {
			t.Errorf("%s: %v, want ErrCardSignature", name, err)
		}
	}
	if runs, err := unsigned.rt.List(ctx, store.Filter{}); err != nil || len(runs) != 0 {
		t.Errorf("the unsigned agent got runs: %v %v", runs, err)
	}
}

// TestSignedCardJS checks a signed card with third-party code (see
// interop/a2a/card.mjs): the official JavaScript client parses it, and
// `canonicalize` with `jose` verify its signature against the served keys
// and refuse a tampered copy.
func TestSignedCardJS(t *testing.T) {
	dir, node := interopNode(t)
	e := newEnv(t, a2a.Options{Signer: newSigner(t)}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"echo", "planner"} {
		cmd := exec.CommandContext(ctx, node, "card.mjs", e.srv.URL+"/a2a/"+id+"/")
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("card.mjs %s: %v\n%s\n%s", id, err, out, stderr)
		}
		var r struct {
			Name             string
			Signatures       int
			Verified         bool
			Alg              string
			TamperedRejected bool
		}
		if err := json.Unmarshal(out, &r); err != nil || r.Name != id || r.Signatures != 1 || !r.Verified || r.Alg != "ES256" || !r.TamperedRejected {
			t.Errorf("card.mjs %s: %s %v", id, out, err)
		}
	}
}
