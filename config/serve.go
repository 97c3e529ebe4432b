package config

import (
	"fmt"
	"net/url"
	"time"

	"go.yaml.in/yaml/v3"
)

// Serve is the optional serve section of a file: how `swarm serve` listens
// and which bearer tokens it accepts. Secrets are never written in the
// file: each token names the environment variable that holds its secret.
//
//	serve:
//	  addr: 0.0.0.0:8080
//	  public_url: https://swarm.example.com  # where clients reach the server (cards name it)
//	  hosts: [swarm.internal, 10.0.0.7:8080]  # more names it answers to ("*": any)
//	  tokens:
//	    - name: ci
//	      secret_env: SWARM_TOKEN_CI
//	      swarms: [trip]       # omit or "*" for every swarm
//	      capabilities: [check-inventory]   # network capabilities; omit or "*" for all
//	  oauth:                               # OAuth 2.1 access tokens, besides the tokens
//	    issuer: https://login.example.com
//	    resource: https://swarm.example.com  # this server's public URL (the audience)
//	    introspection:                     # optional: ask the issuer instead of checking JWTs
//	      url: https://login.example.com/introspect
//	      client_id_env: SWARM_OAUTH_CLIENT_ID
//	      client_secret_env: SWARM_OAUTH_CLIENT_SECRET
type Serve struct {
	// Addr is the listen address (HOST:PORT), "" for the default.
	Addr string
	// PublicURL is the server's public base URL (http(s)://host[:port]
	// and any path prefix), "" for none: agent cards name it, and its
	// host is one the server answers to.
	PublicURL string
	// Hosts are the further names (host, host:port, or "*" for any) that
	// the server answers to besides loopback ones and its address; a
	// request to any other Host is refused (DNS rebinding protection).
	Hosts []string
	// Tokens are the accepted bearer tokens.
	Tokens []ServeToken
	// OAuth, when set, also accepts OAuth 2.1 access tokens.
	OAuth *ServeOAuth
}

// ServeOAuth is the oauth entry of the serve section: the authorization
// server whose access tokens `swarm serve` accepts (see auth.OAuthConfig).
type ServeOAuth struct {
	// Issuer is the authorization server's issuer identifier.
	Issuer string
	// Resource is the server's public base URL, the tokens' audience.
	Resource string
	// Audiences are further accepted audiences.
	Audiences []string
	// JWKSURI is the issuer's key set ("" to read it from its metadata).
	JWKSURI string
	// Algorithms are the accepted signature algorithms (empty: the
	// asymmetric ones).
	Algorithms []string
	// SwarmsClaim and CapabilitiesClaim name claims granting swarms and
	// capabilities besides the swarm: and capability: scopes.
	SwarmsClaim, CapabilitiesClaim string
	// JWKSMinRefresh is the least time between two fetches of the key set
	// caused by unknown key ids (0: the default).
	JWKSMinRefresh time.Duration
	// IntrospectionURL, when set, validates tokens by introspection,
	// authenticated with the client id and secret held in the
	// environment variables ClientIDEnv and ClientSecretEnv.
	IntrospectionURL, ClientIDEnv, ClientSecretEnv string
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
	serveFields      = []string{"addr", "public_url", "hosts", "tokens", "oauth"}
	serveTokenFields = []string{"name", "secret_env", "swarms", "capabilities"}
	oauthFields      = []string{"issuer", "resource", "audiences", "jwks_uri", "jwks_min_refresh", "algorithms", "swarms_claim", "capabilities_claim", "introspection"}
	introFields      = []string{"url", "client_id_env", "client_secret_env"}
)

// CheckPublicURL checks a server's public base URL: absolute http(s),
// without query, fragment or user.
func CheckPublicURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("public_url %q: want an absolute http(s) URL such as https://swarm.example.com, without query or fragment", v)
	}
	return nil
}

// duration reads a positive duration such as 30s.
func (p *parser) duration(n *yaml.Node, what, name string) time.Duration {
	s := p.str(n, what, name)
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		p.errf(n, "%s: invalid %s %q: want a positive duration such as 30s", what, name, s)
		return 0
	}
	return d
}

// oauth reads the oauth entry of the serve section.
func (p *parser) oauth(n *yaml.Node) *ServeOAuth {
	const what = "serve: oauth"
	fs := p.fields(n, what, oauthFields)
	o := &ServeOAuth{}
	for name, dst := range map[string]*string{"issuer": &o.Issuer, "resource": &o.Resource, "jwks_uri": &o.JWKSURI, "swarms_claim": &o.SwarmsClaim, "capabilities_claim": &o.CapabilitiesClaim} {
		if f, ok := fs[name]; ok {
			*dst = p.str(f.val, what, name)
		}
	}
	for name, dst := range map[string]*[]string{"audiences": &o.Audiences, "algorithms": &o.Algorithms} {
		if f, ok := fs[name]; ok {
			*dst = p.strList(f.val, what, name)
		}
	}
	if f, ok := fs["jwks_min_refresh"]; ok {
		o.JWKSMinRefresh = p.duration(f.val, what, "jwks_min_refresh")
	}
	if o.Issuer == "" || o.Resource == "" {
		p.errf(deref(n), "%s: issuer and resource are required (the authorization server, and this server's public URL)", what)
	}
	if f, ok := fs["introspection"]; ok && !isNull(f.val) {
		const what = "serve: oauth: introspection"
		is := p.fields(f.val, what, introFields)
		for name, dst := range map[string]*string{"url": &o.IntrospectionURL, "client_id_env": &o.ClientIDEnv, "client_secret_env": &o.ClientSecretEnv} {
			if f, ok := is[name]; ok {
				*dst = p.str(f.val, what, name)
			}
		}
		if o.IntrospectionURL == "" || o.ClientIDEnv == "" {
			p.errf(deref(f.val), "%s: url and client_id_env are required (secrets are never written in the file)", what)
		}
	}
	return o
}

// serve reads the serve section.
func (p *parser) serve(n *yaml.Node) *Serve {
	fs := p.fields(n, "serve", serveFields)
	s := &Serve{}
	if fd, ok := fs["addr"]; ok {
		s.Addr = p.str(fd.val, "serve", "addr")
	}
	if fd, ok := fs["public_url"]; ok {
		s.PublicURL = p.str(fd.val, "serve", "public_url")
		if err := CheckPublicURL(s.PublicURL); err != nil {
			p.errf(fd.val, "serve: %v", err)
		}
	}
	if fd, ok := fs["hosts"]; ok {
		s.Hosts = p.strList(fd.val, "serve", "hosts")
	}
	if fd, ok := fs["oauth"]; ok && !isNull(fd.val) {
		s.OAuth = p.oauth(fd.val)
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
