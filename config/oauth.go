package config

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	jose "github.com/go-jose/go-jose/v4"
	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/store"
)

// clientOAuthFields are the fields of the oauth entry of mcp_servers and
// a2a_agents.
var clientOAuthFields = []string{"client_id", "client_secret_env", "scopes", "resource", "issuer"}

// oauthDef is the oauth entry of an MCP server or a remote A2A agent: an
// OAuth client whose tokens are kept in the store of the runtime the file
// is first registered with.
//
//	oauth:
//	  client_id: swarm
//	  client_secret_env: TOOLS_SECRET   # client credentials; omit for a person's tokens (swarm login)
//	  scopes: [tools:read]
//	  resource: https://tools.example.com/mcp   # optional (RFC 8707)
//	  issuer: https://login.example.com         # optional
type oauthDef struct {
	what string            // "mcp server NAME: oauth", for errors
	cfg  auth.ClientConfig // without its store
	key  []byte            // $SWARM_SECRET_KEY; nil when unset

	mu     sync.Mutex
	client *auth.Client // made by open
}

// oauthClient reads the oauth entry of the service at url.
func (p *parser) oauthClient(fd field, what, url string) *oauthDef {
	what += ": oauth"
	n := fd.key
	fs := p.fields(fd.val, what, clientOAuthFields)
	d := &oauthDef{what: what, cfg: auth.ClientConfig{URL: url}}
	if fd, ok := fs["client_id"]; ok {
		d.cfg.ClientID = p.str(fd.val, what, "client_id")
	}
	if d.cfg.ClientID == "" && fd.val.Kind == yaml.MappingNode {
		p.errf(n, "%s: missing client_id (the id under which this client is registered with the authorization server)", what)
	}
	fd, service := fs["client_secret_env"]
	if service {
		if name := p.str(fd.val, what, "client_secret_env"); name != "" {
			d.cfg.ClientSecret = os.Getenv(name)
			if d.cfg.ClientSecret == "" {
				p.errf(fd.val, "%s: client_secret_env: the environment variable %s is not set", what, name)
			}
		}
	}
	if fd, ok := fs["scopes"]; ok {
		d.cfg.Scopes = p.strList(fd.val, what, "scopes")
	}
	for name, dst := range map[string]*string{"resource": &d.cfg.Resource, "issuer": &d.cfg.Issuer} {
		if fd, ok := fs[name]; ok {
			*dst = p.str(fd.val, what, name)
			if *dst != "" && !strings.HasPrefix(*dst, "https://") && !strings.HasPrefix(*dst, "http://") {
				p.errf(fd.val, "%s: %s: want an http:// or https:// URL, got %s", what, name, describe(fd.val))
			}
		}
	}
	// A person's tokens (no secret) are only ever in the store, sealed
	// with the key; a service's are kept there too when the key is set.
	if os.Getenv(auth.SecretKeyEnv) != "" || !service {
		key, err := auth.SecretKeyFromEnv()
		switch {
		case err != nil && !service:
			p.errf(n, "%s: without client_secret_env the tokens are a person's, given with `swarm login %s --client-id %s` and kept in the store: %s",
				what, url, d.cfg.ClientID, strings.TrimPrefix(err.Error(), "auth: "))
		case err != nil:
			p.errf(n, "%s: %s", what, strings.TrimPrefix(err.Error(), "auth: "))
		}
		d.key = key
	}
	return d
}

// open makes the entry's client, once: its tokens are kept in the secrets
// of st, encrypted with $SWARM_SECRET_KEY, when the key is set; otherwise
// (client credentials only) in this process.
func (d *oauthDef) open(st store.Store) (*auth.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil {
		return d.client, nil
	}
	cfg := d.cfg
	if d.key != nil {
		secrets, _ := st.(store.Secrets)
		tokens, err := auth.NewSealedStore(secrets, d.key)
		switch {
		case err == nil:
			cfg.Store = tokens
		case cfg.ClientSecret == "":
			return nil, fmt.Errorf("%s: the tokens of swarm login cannot be read: %w", d.what, err)
		}
	}
	c, err := auth.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.what, err)
	}
	d.client = c
	return c, nil
}

// openOAuth makes the OAuth clients of the file's MCP servers and remote
// agents, with tokens kept in st (see oauthDef.open), and gives the MCP
// servers theirs.
func (f *File) openOAuth(st store.Store) error {
	f.mcpMu.Lock()
	defer f.mcpMu.Unlock()
	for _, name := range f.toolsetNames {
		d, ts := f.mcpOAuth[name], f.toolsets[name]
		if d == nil || ts == nil {
			continue
		}
		c, err := d.open(st)
		if err != nil {
			return err
		}
		if ts.OAuth == nil {
			ts.OAuth = c
		}
	}
	for _, r := range f.remotes {
		if r == nil || r.oauth == nil {
			continue
		}
		if _, err := r.oauth.open(st); err != nil {
			return err
		}
	}
	return nil
}

// maxKeyFile bounds a card_keys file.
const maxKeyFile = 1 << 20

// cardKeys reads the card_keys file of an A2A agent: the public keys that
// may sign its agent card.
func (p *parser) cardKeys(n *yaml.Node, what string) *jose.JSONWebKeySet {
	path := p.str(n, what, "card_keys")
	if path == "" {
		return nil
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir, path)
	}
	keys, err := loadCardKeys(path)
	if err != nil {
		p.errf(n, "%s: card_keys: %v", what, err)
		return nil
	}
	return keys
}

// loadCardKeys reads a JWK set (JSON, keys with their kid) or PEM public
// keys and certificates, whose key ids are the RFC 7638 thumbprints of the
// keys (as the card signer of swarm serve names its key).
func loadCardKeys(path string) (*jose.JSONWebKeySet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("%s: over %d bytes", path, maxKeyFile)
	}
	var set jose.JSONWebKeySet
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(t, &set); err != nil {
			return nil, fmt.Errorf("%s: not a JWK set: %w", path, err)
		}
		for i, k := range set.Keys {
			switch {
			case !k.IsPublic():
				return nil, fmt.Errorf("%s: key %d (%q) is a private key: give only public keys", path, i+1, k.KeyID)
			case k.KeyID == "":
				return nil, fmt.Errorf("%s: key %d has no kid (card signatures name their key by kid)", path, i+1)
			}
		}
	} else {
		for rest := b; ; {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			var pub any
			switch block.Type {
			case "PUBLIC KEY":
				pub, err = x509.ParsePKIXPublicKey(block.Bytes)
			case "CERTIFICATE":
				var cert *x509.Certificate
				if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
					pub = cert.PublicKey
				}
			default:
				if strings.Contains(block.Type, "PRIVATE KEY") {
					return nil, fmt.Errorf("%s: a %s: give the public key (openssl pkey -in KEY -pubout)", path, block.Type)
				}
				return nil, fmt.Errorf("%s: a PEM block of type %s: want PUBLIC KEY or CERTIFICATE", path, block.Type)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			k := jose.JSONWebKey{Key: pub, Use: "sig"}
			tp, err := k.Thumbprint(crypto.SHA256)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			k.KeyID = base64.RawURLEncoding.EncodeToString(tp)
			set.Keys = append(set.Keys, k)
		}
	}
	if len(set.Keys) == 0 {
		return nil, errors.New(path + ": no key: want a JWK set or PEM public keys")
	}
	return &set, nil
}
