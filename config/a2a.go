package config

import (
	"os"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/a2a"
)

// The fields of an entry of a2a_agents.
var a2aFields = []string{"url", "token_env", "description", "oauth", "card_keys"}

// remoteDef is a remote A2A agent of the a2a_agents section:
//
//	a2a_agents:
//	  researcher:
//	    url: https://agents.example.com/a2a/researcher   # base URL or card URL
//	    token_env: RESEARCHER_TOKEN                       # optional bearer token
//	    description: Finds sources                        # optional
//	    oauth: {client_id: swarm, client_secret_env: S}   # optional, instead of token_env
//	    card_keys: keys/researcher.pem                    # optional: trust only cards these keys signed
//
// Its name can be listed in the handoffs of agents and swarms; the model
// then gets a tool delegate_to_<name> (see [a2a.Remote]).
type remoteDef struct {
	name, url, token, description string
	oauth                         *oauthDef           // nil: no OAuth
	keys                          *jose.JSONWebKeySet // nil: the card is not verified
}

// a2aAgents reads the a2a_agents section. It runs after the names of
// agents and swarms are known, and before their handoffs are read.
func (p *parser) a2aAgents(top map[string]field) map[string]*remoteDef {
	out := map[string]*remoteDef{}
	for _, e := range p.entries(top, "a2a_agents", "A2A agent") {
		what := "a2a agent " + e.name
		if !p.checkName(e.key, "A2A agent", e.name, maxName-len(a2a.RemotePrefix)) {
			continue
		}
		if line, dup := p.agentLines[e.name]; dup {
			p.errf(e.key, "%s: the name is already used by the agent defined at line %d", what, line)
			continue
		}
		if line, dup := p.swarmLines[e.name]; dup {
			p.errf(e.key, "%s: the name is already used by the swarm defined at line %d", what, line)
			continue
		}
		if _, dup := p.tools[a2a.RemotePrefix+e.name]; dup {
			p.errf(e.key, "%s: its tool name %s%s is already the name of a tool", what, a2a.RemotePrefix, e.name)
			continue
		}
		before := len(p.errs)
		fs := p.fields(e.val, what, a2aFields)
		r := &remoteDef{name: e.name}
		if fd, ok := fs["url"]; ok {
			r.url = p.str(fd.val, what, "url")
			if r.url != "" {
				if _, err := a2a.Remote(r.name, r.url); err != nil {
					p.errf(fd.val, "%s: url %q: want the http or https URL of the agent or of its card", what, r.url)
				}
			}
		}
		if r.url == "" && len(p.errs) == before {
			p.errf(e.key, "%s: missing url (the agent's base URL, or its agent card's URL)", what)
		}
		if fd, ok := fs["token_env"]; ok {
			if name := p.str(fd.val, what, "token_env"); name != "" {
				r.token = os.Getenv(name)
				if r.token == "" {
					p.errf(fd.val, "%s: token_env: the environment variable %s is not set", what, name)
				}
			}
		}
		if fd, ok := fs["description"]; ok {
			r.description = p.str(fd.val, what, "description")
		}
		if fd, ok := fs["oauth"]; ok && !isNull(fd.val) {
			if _, tok := fs["token_env"]; tok {
				p.errf(fd.key, "%s: give token_env (a fixed bearer token) or oauth, not both", what)
			}
			r.oauth = p.oauthClient(fd, what, r.url)
		}
		if fd, ok := fs["card_keys"]; ok {
			r.keys = p.cardKeys(fd.val, what)
		}
		if len(p.errs) != before {
			p.remotes[e.name] = nil // declared, with mistakes already reported
			continue
		}
		p.remotes[e.name] = r
		out[e.name] = r
	}
	return out
}

// remoteRef reports whether a handoff names a remote A2A agent (declared)
// and whether its definition is usable (ok; its mistakes are reported
// where it is defined).
func (p *parser) remoteRef(name string) (declared, ok bool) {
	r, declared := p.remotes[name]
	return declared, r != nil
}

// options are the options of the remote agent's client: its token,
// OAuth client (made by Register) and trusted card keys.
func (r *remoteDef) options() []a2a.RemoteOption {
	var opts []a2a.RemoteOption
	if r.token != "" {
		opts = append(opts, a2a.WithToken(r.token))
	}
	if r.oauth != nil {
		r.oauth.mu.Lock()
		c := r.oauth.client
		r.oauth.mu.Unlock()
		if c != nil {
			opts = append(opts, a2a.WithOAuth(c))
		}
	}
	if r.keys != nil {
		opts = append(opts, a2a.WithCardKeys(*r.keys))
	}
	return opts
}

// remoteTools makes the delegation tools of the remote agents among refs.
func (f *File) remoteTools(refs []handoffRef) []swarm.Tool {
	var out []swarm.Tool
	for _, h := range refs {
		r := f.remotes[h.target]
		if !h.remote || r == nil {
			continue
		}
		opts := r.options()
		desc := h.description
		if desc == "" {
			desc = r.description
		}
		if desc != "" {
			opts = append(opts, a2a.WithRemoteDescription(desc))
		}
		t, err := a2a.Remote(r.name, r.url, opts...)
		if err != nil {
			continue // checked when the file was parsed
		}
		out = append(out, t)
	}
	return out
}
