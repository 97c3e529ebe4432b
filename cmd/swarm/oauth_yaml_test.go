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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeECKey writes a new P-256 key pair: the private key (SEC 1 PEM) to
// private and its public key (PKIX PEM) to public.
func writeECKey(t *testing.T, private, public string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(k)
	pub, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err := os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// toolResult is a tool_result record of a journal.
type toolResult struct {
	Tool    string `json:"tool"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error"`
}

// toolResults returns the tool results of a run, by tool name.
func toolResults(t *testing.T, dir, id string) map[string]toolResult {
	t.Helper()
	out := map[string]toolResult{}
	for _, rec := range readJournal(t, dir, id) {
		if rec.Type != "tool_result" {
			continue
		}
		var res toolResult
		if err := json.Unmarshal(rec.Data, &res); err != nil {
			t.Fatal(err)
		}
		out[res.Tool] = res
	}
	return out
}

// TestOAuthClientYAML runs `swarm run` on a swarm.yaml whose MCP server
// and remote A2A agent (a swarm serve protecting both with OAuth tokens of
// a real authorization server, oidc-provider) are declared with oauth
// blocks: the run gets tokens with client credentials, whose secret the
// block names by its environment variable, and checks the remote agent's
// signed card against card_keys. Without the secret's variable the file
// is refused naming the line; with a key that did not sign the card the
// delegation fails; without a secret and a login, the run says to run
// swarm login, and after it uses the person's tokens.
func TestOAuthClientYAML(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	issuer, _ := oidcProvider(t, ctx, "SCOPES=swarm:* swarm:trip")
	keys := t.TempDir()
	writeECKey(t, filepath.Join(keys, "card-key.pem"), filepath.Join(keys, "card-pub.pem"))
	writeECKey(t, filepath.Join(keys, "other-key.pem"), filepath.Join(keys, "other-pub.pem"))
	s := serveWithOAuth(t, ctx, "    issuer: "+issuer+"\n    resource: "+oauthResource+"\n", "SWARM_A2A_SIGNING_KEY="+filepath.Join(keys, "card-key.pem"))

	dir := t.TempDir()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	script := `outing:
  - tool_calls:
      - {name: remote__trip, arguments: {input: "alps"}}
      - {name: delegate_to_planner, arguments: {request: "alps"}}
  - text: "outing planned"
`
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile := func(oauth, cardKeys string) {
		t.Helper()
		y := `version: 1
model: scripted:script.yaml
mcp_servers:
  remote:
    url: ` + s.URL + `/mcp
` + oauth + `a2a_agents:
  planner:
    url: ` + s.URL + `/a2a/trip
    card_keys: ` + cardKeys + `
` + strings.ReplaceAll(oauth, "/mcp\n", "\n") + `swarms:
  outing:
    instructions: Plan an outing to {{.Input}}.
    toolsets: [remote]
    handoffs: [planner]
`
		if err := os.WriteFile(filepath.Join(dir, "swarm.yaml"), []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	service := "    oauth:\n      client_id: ci\n      client_secret_env: TRIP_SECRET\n      scopes: [\"swarm:trip\"]\n      resource: " + oauthResource + "/mcp\n"
	runOuting := func(id string, env ...string) (string, int) {
		t.Helper()
		cmd := swarmCmd(ctx, dir, "run", "--id", id, "outing", "x")
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return string(out), code
	}

	// Client credentials: both calls succeed.
	writeFile(service, filepath.Join(keys, "card-pub.pem"))
	out, code := runOuting("r1", "TRIP_SECRET=ci-secret")
	if code != 0 {
		t.Fatalf("swarm run: exit %d\n%s", code, out)
	}
	res := toolResults(t, dir, "r1")
	for _, tool := range []string{"remote__trip", "delegate_to_planner"} {
		if r, ok := res[tool]; !ok || r.IsError || !strings.Contains(r.Output, "plan") {
			t.Errorf("%s: %+v (found: %v)", tool, r, ok)
		}
	}

	// The secret's variable unset: the file is refused, naming the line.
	out, code = runOuting("r2")
	if code != 2 || !strings.Contains(out, "swarm.yaml:8: mcp server remote: oauth: client_secret_env: the environment variable TRIP_SECRET is not set") {
		t.Errorf("without TRIP_SECRET: exit %d\n%s", code, out)
	}

	// A card key that did not sign the card: nothing is sent to the agent.
	writeFile(service, filepath.Join(keys, "other-pub.pem"))
	if out, code = runOuting("r3", "TRIP_SECRET=ci-secret"); code != 0 {
		t.Fatalf("swarm run with another card key: exit %d\n%s", code, out)
	}
	if r := toolResults(t, dir, "r3")["delegate_to_planner"]; !r.IsError || !strings.Contains(r.Output, "signature not verified") {
		t.Errorf("delegation with another card key: %+v", r)
	}

	// A person's client (no secret) that nobody logged in with: the run
	// cannot list the server's tools, and says how to log in.
	writeFile("    oauth:\n      client_id: cli\n      scopes: [\"swarm:trip\"]\n      resource: "+oauthResource+"/mcp\n", filepath.Join(keys, "card-pub.pem"))
	keyEnv := "SWARM_SECRET_KEY=" + base64.StdEncoding.EncodeToString(key)
	out, code = runOuting("r4", keyEnv)
	if code != 2 || !strings.Contains(out, "run `swarm login "+s.URL+"/mcp`") {
		t.Errorf("a person's client before login: exit %d\n%s", code, out)
	}
	// The person logs in to the MCP server (swarm login, with the store
	// and key of swarm run): the run uses their tokens. The remote agent,
	// another resource, still needs its own login.
	swarmLogin(t, ctx, dir, issuer, keyEnv, s.URL+"/mcp", "--client-id", "cli", "--scope", "swarm:trip", "--resource", oauthResource+"/mcp")
	if out, code = runOuting("r6", keyEnv); code != 0 {
		t.Fatalf("swarm run after swarm login: exit %d\n%s", code, out)
	}
	res = toolResults(t, dir, "r6")
	if r := res["remote__trip"]; r.IsError || !strings.Contains(r.Output, "plan") {
		t.Errorf("remote__trip after swarm login: %+v", r)
	}
	if r := res["delegate_to_planner"]; !r.IsError || !strings.Contains(r.Output, "run `swarm login "+s.URL+"/a2a/trip`") {
		t.Errorf("delegate_to_planner without its login: %+v", r)
	}
	out, code = runOuting("r5")
	if code != 2 || !strings.Contains(out, "swarm.yaml:6: mcp server remote: oauth: without client_secret_env the tokens are a person's") || !strings.Contains(out, "SWARM_SECRET_KEY is not set") {
		t.Errorf("a person's client without SWARM_SECRET_KEY: exit %d\n%s", code, out)
	}
}
