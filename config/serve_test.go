package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestServeSection(t *testing.T) {
	f, err := Parse([]byte(`version: 1
serve:
  addr: 0.0.0.0:9000
  public_url: https://swarm.example.com
  hosts: [swarm.internal, "10.0.0.7:9000"]
  tokens:
    - {name: ci, secret_env: SWARM_TOKEN_CI, swarms: [trip]}
    - {name: admin, secret_env: SWARM_TOKEN_ADMIN}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	if f.Serve == nil || f.Serve.Addr != "0.0.0.0:9000" || len(f.Serve.Tokens) != 2 {
		t.Fatalf("serve %+v", f.Serve)
	}
	if f.Serve.PublicURL != "https://swarm.example.com" || !slices.Equal(f.Serve.Hosts, []string{"swarm.internal", "10.0.0.7:9000"}) {
		t.Errorf("public_url %q, hosts %q", f.Serve.PublicURL, f.Serve.Hosts)
	}
	if tk := f.Serve.Tokens[0]; tk.Name != "ci" || tk.SecretEnv != "SWARM_TOKEN_CI" || !slices.Equal(tk.Swarms, []string{"trip"}) {
		t.Errorf("token %+v", tk)
	}
	f, err = Parse([]byte(`version: 1
serve:
  oauth:
    issuer: https://as.example
    resource: https://swarm.example
    audiences: [swarm-api]
    algorithms: [ES256]
    jwks_min_refresh: 10s
    swarms_claim: swarms
    introspection: {url: https://as.example/introspect, client_id_env: ID, client_secret_env: SECRET}
`), "")
	if err != nil {
		t.Fatal(err)
	}
	want := ServeOAuth{Issuer: "https://as.example", Resource: "https://swarm.example", Audiences: []string{"swarm-api"}, Algorithms: []string{"ES256"}, JWKSMinRefresh: 10 * time.Second,
		SwarmsClaim: "swarms", IntrospectionURL: "https://as.example/introspect", ClientIDEnv: "ID", ClientSecretEnv: "SECRET"}
	if o := f.Serve.OAuth; o == nil || !reflect.DeepEqual(*o, want) {
		t.Errorf("oauth %+v, want %+v", f.Serve.OAuth, want)
	}
	if f, err := Parse([]byte("version: 1\n"), ""); err != nil || f.Serve != nil {
		t.Errorf("no serve section: %+v %v", f, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"serve:\n  tokens:\n    - {name: x, secret: hunter2}\n", `unknown field "secret"`},
		{"serve:\n  tokens:\n    - {name: x}\n", "secret_env is required"},
		{"serve:\n  tokens: x\n", "want a list"},
		{"serve:\n  port: 1\n", `unknown field "port"`},
		{"serve:\n  public_url: swarm.example.com\n", `public_url "swarm.example.com": want an absolute http(s) URL`},
		{"serve:\n  public_url: https://swarm.example.com/?x=1\n", "without query or fragment"},
		{"serve:\n  hosts: swarm.internal\n", "serve: hosts: want a list of strings"},
		{"serve:\n  oauth: {issuer: https://as.example}\n", "issuer and resource are required"},
		{"serve:\n  oauth: {issuer: https://as.example, resource: https://s.example, jwks_min_refresh: soon}\n", `invalid jwks_min_refresh "soon"`},
		{"serve:\n  oauth: {issuer: https://as.example, resource: https://s.example, secret: x}\n", `unknown field "secret"`},
		{"serve:\n  oauth: {issuer: https://as.example, resource: https://s.example, introspection: {url: https://as.example/i}}\n", "client_id_env are required"},
	} {
		_, err := Parse([]byte("version: 1\n"+tc.yaml), "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
