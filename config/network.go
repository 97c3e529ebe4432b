package config

import (
	"os"
	"slices"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/network"
)

// The network section, share list and network_tools of agents and swarms:
//
//	network:
//	  id: kitchen                       # node id (default: a random one)
//	  url: http://kitchen.internal:8080 # where peers reach this node (default: the listen address)
//	  peers: [http://127.0.0.1:8081]    # other nodes; one is enough
//	  token_env: NETWORK_TOKEN          # bearer token sent to peers, from this variable
//	  fail_after: 3s                    # failure detection bound (default 3s)
//	share:
//	  - tool: check-inventory           # a tool, agent or swarm of this file
//	    tags: [food, stock]
//	    version: "1.2"                  # optional
//	    description: Stock levels       # optional: replaces the definition's
//	agents:
//	  room-service:
//	    network_tools: {tags: [food]}   # or [check-inventory, dietary-check], or all
var (
	networkFields      = []string{"id", "url", "peers", "token_env", "fail_after", "call_timeout"}
	shareFields        = []string{"tool", "agent", "swarm", "tags", "version", "description"}
	networkToolsFields = []string{"names", "tags", "kinds"}
)

// netDef is what the file says about the network.
type netDef struct {
	opts   network.Options
	url    string
	shares []shareDef
	// node is made when the file is loaded, if it has a network section,
	// shares or network_tools.
	node   *network.Node
	once   sync.Once
	shared error
}

type shareDef struct {
	kind                network.Kind
	name, version, desc string
	tags                []string
}

// Network returns the file's network node, nil when the file has no
// network section, share list or network_tools. `swarm serve` starts it
// with the runtime and its listen address and mounts its handler;
// [File.Register] shares the file's shared items with it.
func (f *File) Network() *network.Node {
	if f.net == nil {
		return nil
	}
	return f.net.node
}

// NetworkURL returns the url of the network section ("" if none).
func (f *File) NetworkURL() string {
	if f.net == nil {
		return ""
	}
	return f.net.url
}

// network reads the network section and the share list, and makes the
// node when anything in the file uses the network.
func (p *parser) network(top map[string]field, f *File, usesNetwork bool) {
	nd := &netDef{}
	if fd, ok := top["network"]; ok && !isNull(fd.val) {
		what := "network"
		fs := p.fields(fd.val, what, networkFields)
		if x, ok := fs["id"]; ok {
			nd.opts.ID = p.str(x.val, what, "id")
		}
		if x, ok := fs["url"]; ok {
			nd.url = p.str(x.val, what, "url")
		}
		if x, ok := fs["peers"]; ok {
			nd.opts.Peers = p.strList(x.val, what, "peers")
		}
		if x, ok := fs["token_env"]; ok {
			env := p.str(x.val, what, "token_env")
			if nd.opts.Token = os.Getenv(env); env != "" && nd.opts.Token == "" {
				p.errf(x.val, "network: token_env: environment variable %s is not set", env)
			}
		}
		for _, f := range []struct {
			name string
			dst  *time.Duration
		}{{"fail_after", &nd.opts.FailAfter}, {"call_timeout", &nd.opts.CallTimeout}} {
			if x, ok := fs[f.name]; ok && !isNull(x.val) {
				s := p.str(x.val, what, f.name)
				if d, err := time.ParseDuration(s); err != nil || d <= 0 {
					p.errf(x.val, "network: invalid %s %q: want a positive duration such as 3s", f.name, s)
				} else {
					*f.dst = d
				}
			}
		}
		usesNetwork = true
	}
	if fd, ok := top["share"]; ok && !isNull(fd.val) {
		nd.shares = p.shares(fd.val)
		usesNetwork = true
	}
	// A shared swarm without tags of its own takes the share's, so that
	// its A2A card carries them as skill tags.
	for _, sd := range nd.shares {
		for _, s := range f.swarms {
			if sd.kind == network.KindSwarm && s.name == sd.name && len(s.tags) == 0 {
				s.tags = slices.Clone(sd.tags)
			}
		}
	}
	if !usesNetwork {
		return
	}
	node, err := network.New(nd.opts)
	if err != nil {
		p.errf(nil, "network: %v", err)
		return
	}
	nd.node = node
	f.net = nd
}

func (p *parser) shares(n *yaml.Node) []shareDef {
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "share: want a list of {tool|agent|swarm, tags}, got %s", describe(n))
		return nil
	}
	var out []shareDef
	seen := map[string]int{}
	for _, e := range n.Content {
		e = deref(e)
		fs := p.fields(e, "share", shareFields)
		var sd shareDef
		for _, k := range []network.Kind{network.KindTool, network.KindAgent, network.KindSwarm} {
			if x, ok := fs[string(k)]; ok {
				if sd.kind != "" {
					p.errf(x.key, "share: an entry shares one tool, agent or swarm")
				}
				sd.kind, sd.name = k, p.str(x.val, "share", string(k))
			}
		}
		switch {
		case sd.kind == "":
			p.errf(e, "share: an entry needs tool, agent or swarm")
			continue
		case sd.kind == network.KindTool && p.tools[sd.name] == nil:
			p.errf(e, "share: unknown tool %q (%s)", sd.name, known(p.toolNames, "tools"))
			continue
		case sd.kind == network.KindAgent && p.agentLines[sd.name] == 0:
			p.errf(e, "share: unknown agent %q (%s)", sd.name, known(p.agentNames, "agents"))
			continue
		case sd.kind == network.KindSwarm && p.swarmLines[sd.name] == 0:
			p.errf(e, "share: unknown swarm %q (%s)", sd.name, known(p.swarmNames, "swarms"))
			continue
		}
		if line, dup := seen[sd.name]; dup {
			p.errf(e, "share: %q is shared twice (first at line %d)", sd.name, line)
			continue
		}
		seen[sd.name] = e.Line
		if x, ok := fs["tags"]; ok {
			sd.tags = p.strList(x.val, "share "+sd.name, "tags")
		}
		if x, ok := fs["version"]; ok {
			sd.version = p.str(x.val, "share "+sd.name, "version")
		}
		if x, ok := fs["description"]; ok {
			sd.desc = p.str(x.val, "share "+sd.name, "description")
		}
		if err := (network.Capability{Name: sd.name, Kind: sd.kind, Tags: sd.tags, Version: sd.version}).Validate(); err != nil {
			p.errf(e, "share: %v", err)
			continue
		}
		out = append(out, sd)
	}
	return out
}

// networkTools reads an agent's or swarm's network_tools: all, a list of
// capability names, or {names, tags, kinds}.
func (p *parser) networkTools(n *yaml.Node, what string) *network.Filter {
	what += ": network_tools"
	switch {
	case isNull(n):
		return nil
	case n.Kind == yaml.ScalarNode && n.Value == "all":
		return &network.Filter{}
	case n.Kind == yaml.SequenceNode:
		return &network.Filter{Names: p.strList(n, what, "names")}
	case n.Kind == yaml.MappingNode:
		fs := p.fields(n, what, networkToolsFields)
		f := &network.Filter{}
		if x, ok := fs["names"]; ok {
			f.Names = p.strList(x.val, what, "names")
		}
		if x, ok := fs["tags"]; ok {
			f.Tags = p.strList(x.val, what, "tags")
		}
		if x, ok := fs["kinds"]; ok {
			for _, k := range p.strList(x.val, what, "kinds") {
				if !slices.Contains([]network.Kind{network.KindTool, network.KindAgent, network.KindSwarm}, network.Kind(k)) {
					p.errf(x.val, "%s: kind %q: want tool, agent or swarm", what, k)
				}
				f.Kinds = append(f.Kinds, network.Kind(k))
			}
		}
		return f
	}
	p.errf(n, "%s: want all, a list of capability names, or {names, tags, kinds}, got %s", what, describe(n))
	return nil
}

// catalog is the dynamic tool set of an agent's network_tools.
func (f *File) catalog(filter *network.Filter) []swarm.Tool {
	if filter == nil || f.net == nil {
		return nil
	}
	return []swarm.Tool{f.net.node.Catalog(*filter)}
}

// share gives the node the file's shared items, once: the agents are
// those of the first Register.
func (f *File) share(agents []*swarm.Agent) error {
	if f.net == nil || len(f.net.shares) == 0 {
		return nil
	}
	f.net.once.Do(func() {
		var items []network.Shared
		for _, sd := range f.net.shares {
			var it network.Shared
			switch sd.kind {
			case network.KindTool:
				it = network.ShareTool(f.tools[sd.name], sd.tags...)
			case network.KindSwarm:
				it = network.ShareSwarm(sd.name, sd.tags...)
			case network.KindAgent:
				for _, a := range agents {
					if a.Name == sd.name {
						it = network.ShareAgent(a, sd.tags...)
					}
				}
			}
			if sd.version != "" {
				it = it.WithVersion(sd.version)
			}
			if sd.desc != "" {
				it = it.WithDescription(sd.desc)
			}
			items = append(items, it)
		}
		f.net.shared = f.net.node.Share(items...)
	})
	return f.net.shared
}
