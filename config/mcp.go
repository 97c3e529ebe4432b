package config

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/mcp"
)

// mcpFields are the fields of an entry of mcp_servers.
var mcpFields = []string{"command", "url", "env", "headers", "allow", "deny", "timeout", "oauth"}

// connectTimeout bounds connecting to the MCP servers of a file.
const connectTimeout = 60 * time.Second

// mcpServers reads the mcp_servers section: MCP servers whose tools agents
// and swarms list with toolsets.
func (p *parser) mcpServers(top map[string]field) {
	for _, e := range p.entries(top, "mcp_servers", "MCP server") {
		what := "mcp server " + e.name
		p.toolsetNames = append(p.toolsetNames, e.name)
		p.toolsets[e.name] = nil
		before := len(p.errs)
		p.checkName(e.key, "MCP server", e.name, maxName/2)
		fs := p.fields(e.val, what, mcpFields)
		ts := &mcp.Toolset{Name: e.name, Dir: p.dir}
		fd, hasCmd := fs["command"]
		if hasCmd {
			ts.Command = p.command(fd.val, what)
			if ts.Command != nil {
				if path, err := p.resolveCommand(ts.Command[0]); err != nil {
					p.errf(fd.val, "%s: command %q: %w", what, ts.Command[0], err)
				} else {
					ts.Command[0] = path
				}
			}
		}
		if fd, ok := fs["url"]; ok {
			ts.URL = p.str(fd.val, what, "url")
			if !strings.HasPrefix(ts.URL, "http://") && !strings.HasPrefix(ts.URL, "https://") {
				p.errf(fd.val, "%s: url: want an http:// or https:// URL, got %s", what, describe(fd.val))
			}
		}
		switch _, hasURL := fs["url"]; {
		case hasCmd && hasURL:
			p.errf(e.key, "%s: give a command (stdio) or a url (streamable HTTP), not both", what)
		case !hasCmd && !hasURL:
			p.errf(e.key, "%s: missing command (a list such as [\"npx\", \"mcp-server-everything\"]) or url", what)
		}
		if fd, ok := fs["env"]; ok && !isNull(fd.val) {
			ts.Env = map[string]string{}
			for _, kv := range p.env(fd.val, what) {
				k, v, _ := strings.Cut(kv, "=")
				ts.Env[k] = v
			}
		}
		if fd, ok := fs["headers"]; ok && !isNull(fd.val) {
			ts.Headers = p.headers(fd.val, what)
		}
		if fd, ok := fs["allow"]; ok {
			ts.Allow = p.strList(fd.val, what, "allow")
		}
		if fd, ok := fs["deny"]; ok {
			ts.Deny = p.strList(fd.val, what, "deny")
		}
		if fd, ok := fs["timeout"]; ok && !isNull(fd.val) {
			s := p.str(fd.val, what, "timeout")
			if d, err := time.ParseDuration(s); err != nil || d <= 0 {
				p.errf(fd.val, "%s: invalid timeout %q: want a positive duration such as 30s", what, s)
			} else {
				ts.Timeout = d
			}
		}
		if fd, ok := fs["oauth"]; ok && !isNull(fd.val) {
			if hasCmd {
				p.errf(fd.key, "%s: oauth: a stdio server (command) takes no OAuth; give a url", what)
			} else {
				p.mcpOAuth[e.name] = p.oauthClient(fd, what, ts.URL)
			}
		}
		if len(p.errs) == before {
			if err := ts.Validate(); err != nil {
				p.errf(e.key, "%v", err)
				continue
			}
			p.toolsets[e.name] = ts
		}
	}
}

// headers reads a mapping of HTTP headers; values may name environment
// variables as ${NAME}, so that secrets stay out of the file.
func (p *parser) headers(n *yaml.Node, what string) map[string]string {
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: headers: want a mapping from header name to value, got %s", what, describe(n))
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || isNull(k) || k.Value == "" || strings.ContainsAny(k.Value, " :\r\n") {
			p.errf(k, "%s: headers: invalid header name %s", what, describe(k))
			continue
		}
		out[k.Value] = os.Expand(p.str(v, what, "headers: "+k.Value), os.Getenv)
	}
	return out
}

// toolsetRefs reads the toolsets field of an agent or swarm.
func (p *parser) toolsetRefs(n *yaml.Node, what string) []string {
	names := p.strList(n, what, "toolsets")
	seen := map[string]bool{}
	var out []string
	for i, name := range names {
		at := n
		if i < len(n.Content) {
			at = n.Content[i]
		}
		if seen[name] {
			p.errf(at, "%s: toolset %q is listed twice", what, name)
			continue
		}
		seen[name] = true
		ts, ok := p.toolsets[name]
		switch {
		case !ok:
			p.errf(at, "%s: unknown toolset %q (%s)", what, name, known(p.toolsetNames, "mcp_servers"))
		case ts != nil:
			out = append(out, name)
		}
	}
	return out
}

// ToolsetNames returns the names of the file's MCP servers, in the order of
// the file.
func (f *File) ToolsetNames() []string { return slices.Clone(f.toolsetNames) }

// connectToolsets connects to the MCP servers that agents or swarms use and
// lists their tools, once per file.
func (f *File) connectToolsets() error {
	f.mcpMu.Lock()
	defer f.mcpMu.Unlock()
	var used []string
	for _, a := range f.agents {
		used = append(used, a.toolsets...)
		used = append(used, a.absorb.names...)
	}
	for _, s := range f.swarms {
		used = append(used, s.toolsets...)
		used = append(used, s.absorb.names...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	for _, name := range f.toolsetNames {
		if !slices.Contains(used, name) || f.mcpTools[name] != nil {
			continue
		}
		tools, err := f.toolsets[name].Tools(ctx)
		if err != nil {
			return err
		}
		if f.mcpTools == nil {
			f.mcpTools = map[string][]swarm.Tool{}
		}
		f.mcpTools[name] = tools
	}
	return nil
}

// withToolsets appends the tools of the named toolsets to tools.
func (f *File) withToolsets(tools []swarm.Tool, names []string) []swarm.Tool {
	f.mcpMu.Lock()
	defer f.mcpMu.Unlock()
	for _, n := range names {
		tools = append(tools, f.mcpTools[n]...)
	}
	return tools
}

// Close ends the sessions with the file's MCP servers (stopping the
// commands it started). Call it after closing the runtimes the file was
// registered with; a later Register connects again.
func (f *File) Close() error {
	f.mcpMu.Lock()
	defer f.mcpMu.Unlock()
	var errs []error
	for _, name := range f.toolsetNames {
		if ts := f.toolsets[name]; ts != nil {
			errs = append(errs, ts.Close())
		}
	}
	f.mcpTools = nil
	if n := f.Network(); n != nil {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}
