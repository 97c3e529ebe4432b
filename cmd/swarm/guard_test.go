package main_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/swarmrt/swarm/mcp"
)

// hostRequest sends a request to u with the Host header host (none: the
// URL's), the headers hdr and body, and returns its status and body.
func hostRequest(t *testing.T, method, u, host string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// modernMCP returns the headers and body of a stateless (2026-07-28) MCP
// request, as its clients send them; name is the Mcp-Name header.
func modernMCP(method, name string, params map[string]any) (map[string]string, string) {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "guard-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{mcp.TasksExtension: map[string]any{}}},
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	hdr := map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		hdr["Mcp-Name"] = name
	}
	return hdr, string(b)
}

// TestServeRefusesOtherSites: a default swarm serve (loopback, no tokens)
// answers no Host but its own names, on every route, so that a page whose
// name is rebound to 127.0.0.1 cannot drive it; and no request whose
// Origin is another site's, /mcp included.
func TestServeRefusesOtherSites(t *testing.T) {
	dir := workdir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s := serve(t, ctx, dir, nil, "--allow-host", "swarm.example")
	u, _ := url.Parse(s.URL)
	port := u.Port()
	listHdr, listBody := modernMCP("tools/list", "", nil)

	evil := "evil.example:" + port
	for _, c := range []struct {
		method, path, body string
		hdr                map[string]string
	}{
		{"POST", "/v1/swarms/approval/runs", `{"id": "r1", "input": "a hut"}`, nil},
		{"GET", "/v1/runs", "", nil},
		{"GET", "/v1/memory", "", nil},
		{"DELETE", "/v1/runs/r1", "", nil},
		{"POST", "/a2a/approval", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`, nil},
		{"GET", "/a2a/approval/.well-known/agent-card.json", "", nil},
		{"POST", "/mcp", listBody, listHdr},
		{"GET", "/ui/", "", nil},
		{"GET", "/healthz", "", nil},
	} {
		code, body := hostRequest(t, c.method, s.URL+c.path, evil, c.hdr, c.body)
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal([]byte(body), &e)
		if code != http.StatusForbidden || e.Error.Code != "host_not_allowed" || !strings.Contains(e.Error.Message, "evil.example") {
			t.Errorf("%s %s with Host %s: %d %s", c.method, c.path, evil, code, body)
		}
	}
	if code := httpJSON(t, "GET", s.URL+"/v1/runs/r1", "", nil); code != http.StatusNotFound {
		t.Errorf("a refused start started run r1: %d", code)
	}

	for _, host := range []string{"localhost:" + port, "localhost", "127.0.0.1", "127.0.0.1:" + port, "[::1]:" + port, "swarm.example", "Swarm.Example:8443"} {
		if code, body := hostRequest(t, "GET", s.URL+"/v1/runs", host, nil, ""); code != 200 {
			t.Errorf("GET /v1/runs with Host %s: %d %s", host, code, body)
		}
	}

	// Another site's Origin: refused on a start and on /mcp, which answer
	// without it; the server's own origin is fine.
	foreign := map[string]string{"Origin": "http://evil.example"}
	if code, body := hostRequest(t, "POST", s.URL+"/v1/swarms/approval/runs", "", foreign, `{"id": "o1", "input": "a hut"}`); code != 403 || !strings.Contains(body, `"origin_not_allowed"`) {
		t.Errorf("start with Origin evil.example: %d %s", code, body)
	}
	if code := httpJSON(t, "GET", s.URL+"/v1/runs/o1", "", nil); code != http.StatusNotFound {
		t.Errorf("a refused start started run o1: %d", code)
	}
	if code, body := hostRequest(t, "POST", s.URL+"/mcp", "", listHdr, listBody); code != 200 || !strings.Contains(body, `"tools"`) {
		t.Fatalf("tools/list: %d %s", code, body)
	}
	originHdr := map[string]string{"Origin": "http://evil.example"}
	for k, v := range listHdr {
		originHdr[k] = v
	}
	if code, body := hostRequest(t, "POST", s.URL+"/mcp", "", originHdr, listBody); code != 403 || !strings.Contains(body, `"origin_not_allowed"`) {
		t.Errorf("tools/list with Origin evil.example: %d %s", code, body)
	}
	for _, o := range []string{"null", "http://localhost:1"} {
		if code, _ := hostRequest(t, "POST", s.URL+"/v1/runs/o1/stop", "", map[string]string{"Origin": o}, "{}"); code != 403 {
			t.Errorf("stop with Origin %s: %d, want 403", o, code)
		}
	}
	if code, body := hostRequest(t, "POST", s.URL+"/v1/swarms/approval/runs", "", map[string]string{"Origin": s.URL}, `{"id": "o2", "input": "a hut"}`); code != 201 {
		t.Errorf("start with the server's own Origin: %d %s", code, body)
	}

	// A name that is not a host is a usage error.
	cmd := swarmCmd(ctx, dir, "serve", "--addr", "127.0.0.1:0", "--allow-host", "https://swarm.example/")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "not a URL") {
		t.Errorf("--allow-host with a URL: exit %d %s", cmd.ProcessState.ExitCode(), out)
	}
}

// TestServeMCPTransportErrors: /mcp answers the transport errors of the
// 2026-07-28 revision in JSON-RPC: an unsupported MCP-Protocol-Version
// -32022 listing every version it speaks, a body that is not JSON
// -32700, and a body over the limit 413.
func TestServeMCPTransportErrors(t *testing.T) {
	dir := workdir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := serve(t, ctx, dir, nil)
	hdr, body := modernMCP("tools/list", "", nil)

	type rpcAnswer struct {
		ID    json.RawMessage
		Error *struct {
			Code    int
			Message string
			Data    struct {
				Supported []string
				Requested string
			}
		}
	}
	for _, v := range []string{"2026-07-27", "1900-01-01", "banana", "2099-01-01"} {
		h := map[string]string{}
		for k, x := range hdr {
			h[k] = x
		}
		h["MCP-Protocol-Version"] = v
		code, raw := hostRequest(t, "POST", s.URL+"/mcp", "", h, body)
		var a rpcAnswer
		if err := json.Unmarshal([]byte(raw), &a); err != nil || code != 400 || a.Error == nil || a.Error.Code != -32022 ||
			a.Error.Data.Requested != v || !slices.Contains(a.Error.Data.Supported, "2026-07-28") || !slices.Contains(a.Error.Data.Supported, "2025-11-25") || string(a.ID) != "1" {
			t.Errorf("MCP-Protocol-Version %s: %d %s", v, code, raw)
		}
	}
	for name, h := range map[string]map[string]string{"2026-07-28": hdr, "no version": {"Accept": "application/json, text/event-stream"}} {
		code, raw := hostRequest(t, "POST", s.URL+"/mcp", "", h, "this is not JSON")
		var a rpcAnswer
		if err := json.Unmarshal([]byte(raw), &a); err != nil || code != 400 || a.Error == nil || a.Error.Code != -32700 {
			t.Errorf("a body that is not JSON (%s): %d %s", name, code, raw)
		}
	}
	huge := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("a", 4<<20) + `"}}`
	code, raw := hostRequest(t, "POST", s.URL+"/mcp", "", hdr, huge)
	var a rpcAnswer
	if err := json.Unmarshal([]byte(raw), &a); err != nil || code != http.StatusRequestEntityTooLarge || a.Error == nil {
		t.Errorf("a 4 MiB body: %d %s", code, raw)
	}
	if code, raw := hostRequest(t, "POST", s.URL+"/mcp", "", hdr, body); code != 200 || !strings.Contains(raw, `"tools"`) {
		t.Errorf("tools/list: %d %s", code, raw)
	}
}

// signingKeyFile writes a new P-256 card signing key and returns its path.
func signingKeyFile(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(k)
	f := filepath.Join(t.TempDir(), "card-key.pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// cardURLs returns the JSON-RPC URL and the jku of the signed card of
// swarm approval, fetched with the Host header host.
func cardURLs(t *testing.T, base, host string) (string, string) {
	t.Helper()
	code, raw := hostRequest(t, "GET", base+"/a2a/approval/.well-known/agent-card.json", host, nil, "")
	var card struct {
		SupportedInterfaces []struct{ URL string }
		Signatures          []struct{ Protected string }
	}
	if err := json.Unmarshal([]byte(raw), &card); err != nil || code != 200 || len(card.SupportedInterfaces) != 1 || len(card.Signatures) != 1 {
		t.Fatalf("card with Host %s: %d %s", host, code, raw)
	}
	hb, _ := base64.RawURLEncoding.DecodeString(card.Signatures[0].Protected)
	var h struct{ Jku string }
	_ = json.Unmarshal(hb, &h)
	return card.SupportedInterfaces[0].URL, h.Jku
}

// TestServeCardURLs: the URLs of an agent card (the JSON-RPC endpoint and
// the jku of its signature) never follow the request's Host header: they
// are the listening address, or the public URL of the serve section, whose
// host (and those of serve.hosts) the server then answers to.
func TestServeCardURLs(t *testing.T) {
	dir := workdir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key := "SWARM_A2A_SIGNING_KEY=" + signingKeyFile(t)
	s := serve(t, ctx, dir, []string{key})
	u, _ := url.Parse(s.URL)
	for _, host := range []string{"", "localhost:" + u.Port()} {
		rpc, jku := cardURLs(t, s.URL, host)
		if rpc != s.URL+"/a2a/approval" || jku != s.URL+"/a2a/.well-known/jwks.json" {
			t.Errorf("card with Host %q: url %s, jku %s; want those of %s", host, rpc, jku, s.URL)
		}
	}
	s.Cmd.Process.Kill()
	<-s.Exited

	f := filepath.Join(dir, "swarm.yaml")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, "serve:\n  public_url: https://agents.example.com/\n  hosts: [swarm.internal]\n"...)
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s = serve(t, ctx, dir, []string{key})
	for _, host := range []string{"", "agents.example.com", "swarm.internal:8080"} {
		rpc, jku := cardURLs(t, s.URL, host)
		if rpc != "https://agents.example.com/a2a/approval" || jku != "https://agents.example.com/a2a/.well-known/jwks.json" {
			t.Errorf("card with Host %q: url %s, jku %s; want the public URL's", host, rpc, jku)
		}
	}
	if code, body := hostRequest(t, "GET", s.URL+"/v1/runs", "other.example", nil, ""); code != 403 {
		t.Errorf("Host other.example with a public URL: %d %s", code, body)
	}
	s.Cmd.Process.Kill()
	<-s.Exited

	// --public-url replaces the file's.
	s = serve(t, ctx, dir, []string{key}, "--public-url", "https://flag.example:8443")
	if rpc, jku := cardURLs(t, s.URL, "flag.example:8443"); rpc != "https://flag.example:8443/a2a/approval" || jku != "https://flag.example:8443/a2a/.well-known/jwks.json" {
		t.Errorf("card with --public-url: url %s, jku %s", rpc, jku)
	}
	cmd := swarmCmd(ctx, dir, "serve", "--addr", "127.0.0.1:0", "--public-url", "flag.example")
	if out, _ := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "want an absolute http(s) URL") {
		t.Errorf("--public-url without a scheme: exit %d %s", cmd.ProcessState.ExitCode(), out)
	}
}

// TestServeAccessTokenType: swarm serve takes a JWT access token only if
// its JOSE header says so (typ at+jwt or application/at+jwt, RFC 9068):
// another JWT of the issuer (an ID token, typ JWT) is refused.
func TestServeAccessTokenType(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	}))
	defer jwks.Close()
	issuer := "https://issuer.example"
	sign := func(typ string) string {
		opts := (&jose.SignerOptions{}).WithHeader("kid", "k1")
		if typ != "" {
			opts = opts.WithType(jose.ContentType(typ))
		}
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, opts)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		tok, err := jwt.Signed(s).Claims(map[string]any{"iss": issuer, "aud": oauthResource, "sub": "svc", "scope": "swarm:trip",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := serveWithOAuth(t, ctx, "    issuer: "+issuer+"\n    resource: "+oauthResource+"\n    jwks_uri: "+jwks.URL+"\n")
	for typ, want := range map[string]int{"at+jwt": 200, "application/at+jwt": 200, "AT+JWT": 200, "JWT": 401, "": 401, "JOSE": 401} {
		if code, _, body := bearer(t, "GET", s.URL+"/v1/swarms/trip", sign(typ), ""); code != want {
			t.Errorf("token with typ %q: %d %s, want %d", typ, code, body, want)
		}
	}
}

// TestServeAnswersTellNothing: a token not allowed a swarm learns nothing
// of its runs from tasks/* (the answer to an unknown task); /v1/memory
// takes only a token allowed every swarm by "*"; a blob a run lacks is
// named as such, not as a missing run.
func TestServeAnswersTellNothing(t *testing.T) {
	dir := workdir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := serve(t, ctx, dir, []string{"SWARM_TOKENS=tripper:s-trip:trip;approver:s-appr:approval;named:s-named:trip,approval,guide,tour;all:s-all:*"})
	if code := tokenJSON(t, "POST", s.URL+"/v1/swarms/trip/runs", "s-trip", `{"id": "t1", "input": "two people"}`, nil); code != 201 {
		t.Fatalf("start t1: %d", code)
	}
	task := func(token, method, id string) (int, string) {
		hdr, body := modernMCP(method, id, map[string]any{"taskId": id, "inputResponses": map[string]any{}})
		hdr["Authorization"] = "Bearer " + token
		return hostRequest(t, "POST", s.URL+"/mcp", "", hdr, body)
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		code, body := task("s-appr", m, "t1")
		ucode, ubody := task("s-appr", m, "no-such-run")
		if code != ucode || body != ubody || !strings.Contains(body, "Task not found") {
			t.Errorf("%s of another swarm's run: %d %s; of no run: %d %s", m, code, body, ucode, ubody)
		}
	}
	if code, body := task("s-trip", "tasks/get", "t1"); code != 200 || !strings.Contains(body, `"taskId":"t1"`) {
		t.Errorf("tasks/get of the token's own run: %d %s", code, body)
	}

	var e struct {
		Error struct{ Code, Message string }
	}
	if code := tokenJSON(t, "GET", s.URL+"/v1/memory", "s-named", "", &e); code != 403 || !strings.Contains(e.Error.Message, `"*"`) {
		t.Errorf("memory with a token naming every swarm: %d %+v", code, e)
	}
	if code := tokenJSON(t, "GET", s.URL+"/v1/memory", "s-all", "", nil); code != 200 {
		t.Errorf("memory with a token of *: %d", code)
	}

	hash := strings.Repeat("0", 64)
	if code := tokenJSON(t, "GET", s.URL+"/v1/runs/t1/blobs/"+hash, "s-trip", "", &e); code != 404 || e.Error.Message != `run "t1" has no blob `+hash {
		t.Errorf("a blob the run lacks: %d %+v", code, e)
	}
}
