package config

import (
	"go.yaml.in/yaml/v3"
)

// Serve is the optional serve section of a file: how `swarm serve` listens
// and which bearer tokens it accepts. Secrets are never written in the
// file: each token names the environment variable that holds its secret.
//
//	serve:
//	  addr: 0.0.0.0:8080
//	  tokens:
//	    - name: ci
//	      secret_env: SWARM_TOKEN_CI
//	      swarms: [trip]       # omit or "*" for every swarm
//	      capabilities: [check-inventory]   # network capabilities; omit or "*" for all
type Serve struct {
	// Addr is the listen address (HOST:PORT), "" for the default.
	Addr string
	// Tokens are the accepted bearer tokens.
	Tokens []ServeToken
}

// ServeToken is a token of the serve section.
type ServeToken struct {
	// Name labels the token in logs.
	Name string
	// SecretEnv names the environment variable holding the secret.
	SecretEnv string
	// Swarms lists the swarms the token may use (empty or "*": all).
	Swarms []string
	// Capabilities lists the network capabilities the token may see and
	// call (empty or "*": all).
	Capabilities []string
}

var (
	serveFields      = []string{"addr", "tokens"}
	serveTokenFields = []string{"name", "secret_env", "swarms", "capabilities"}
)

// serve reads the serve section.
func (p *parser) serve(n *yaml.Node) *Serve {
	fs := p.fields(n, "serve", serveFields)
	s := &Serve{}
	if fd, ok := fs["addr"]; ok {
		s.Addr = p.str(fd.val, "serve", "addr")
	}
	fd, ok := fs["tokens"]
	if !ok || isNull(fd.val) {
		return s
	}
	if fd.val.Kind != yaml.SequenceNode {
		p.errf(fd.val, "serve: tokens: want a list of {name, secret_env, swarms}, got %s", describe(fd.val))
		return s
	}
	for _, e := range fd.val.Content {
		tf := p.fields(e, "serve: token", serveTokenFields)
		var t ServeToken
		if f, ok := tf["name"]; ok {
			t.Name = p.str(f.val, "serve: token", "name")
		}
		if f, ok := tf["secret_env"]; ok {
			t.SecretEnv = p.str(f.val, "serve: token", "secret_env")
		}
		if t.SecretEnv == "" {
			p.errf(deref(e), "serve: token %q: secret_env is required (the name of the environment variable holding the secret; secrets are never written in the file)", t.Name)
		}
		if f, ok := tf["swarms"]; ok {
			t.Swarms = p.strList(f.val, "serve: token "+t.Name, "swarms")
		}
		if f, ok := tf["capabilities"]; ok {
			t.Capabilities = p.strList(f.val, "serve: token "+t.Name, "capabilities")
		}
		s.Tokens = append(s.Tokens, t)
	}
	return s
}
