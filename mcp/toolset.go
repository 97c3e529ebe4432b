package mcp

import (
	"github.com/swarmrt/swarm/internal/traceprop"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/absorb"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/model"
)

// Defaults of a Toolset.
const (
	// DefaultCallTimeout bounds a tool call of a toolset that sets none.
	DefaultCallTimeout = 60 * time.Second
	// DefaultConnectTimeout bounds connecting to a server and listing its
	// tools when the caller's context has no deadline.
	DefaultConnectTimeout = 30 * time.Second
)

// Separator joins a toolset's name and a tool's name: the tool "echo" of the
// toolset "everything" is offered to models as "everything__echo".
const Separator = "__"

// maxToolName is the longest tool name a model may be offered.
const maxToolName = 64

// Toolset is an MCP server whose tools agents may use: a command that speaks
// MCP on its standard input and output, or a streamable HTTP endpoint.
//
// [Toolset.Tools] connects, lists the server's tools and wraps each as a
// [swarm.Tool] named "<Name>__<tool>". Calls share one session; a call on a
// session that died (the server exited or the connection broke) fails with
// an error tool result, and the next call connects again. Close ends the
// session (and stops the command); whoever makes a Toolset closes it, after
// the runtimes that use its tools are closed.
type Toolset struct {
	// Name namespaces the tools; it must match [a-zA-Z0-9_-]+.
	Name string
	// Command is the argv of a server spoken to over stdio.
	Command []string
	// Dir is the working directory of Command ("" for the current one).
	Dir string
	// Env holds extra environment variables of Command.
	Env map[string]string
	// URL is the endpoint of a streamable HTTP server (instead of Command).
	URL string
	// Headers are sent with every HTTP request (Authorization, say).
	Headers map[string]string
	// OAuth, when set, adds its access tokens to every HTTP request: a
	// server that needs OAuth is reached with tokens the client gets
	// (client credentials) or refreshes (a person's login), and a call
	// that needs a person's consent fails with an error saying how to
	// give it ([auth.ConsentError]).
	OAuth *auth.Client
	// Allow, when not empty, keeps only the tools whose name matches one of
	// its patterns ([path.Match] syntax: "get_*"); Deny drops the tools that
	// match one of its patterns. Patterns match the server's tool names.
	Allow, Deny []string
	// Timeout bounds each tool call (default DefaultCallTimeout).
	Timeout time.Duration

	mu      sync.Mutex
	session *sdk.ClientSession
	tools   []swarm.Tool
	stderr  *tail // of the current command
}

// Validate checks the toolset's configuration without connecting.
func (ts *Toolset) Validate() error {
	switch {
	case ts.Name == "":
		return errors.New("mcp toolset: empty name")
	case strings.ContainsFunc(ts.Name, func(r rune) bool { return !model.NameChar(r) }):
		return fmt.Errorf("mcp toolset %q: a name may contain only letters, digits, '_' and '-'", ts.Name)
	case len(ts.Name)+len(Separator) >= maxToolName-8:
		return fmt.Errorf("mcp toolset %q: the name is too long to prefix tool names", ts.Name)
	case len(ts.Command) == 0 && ts.URL == "":
		return fmt.Errorf("mcp toolset %s: set a command or a url", ts.Name)
	case len(ts.Command) > 0 && ts.URL != "":
		return fmt.Errorf("mcp toolset %s: set a command or a url, not both", ts.Name)
	case len(ts.Command) > 0 && ts.Command[0] == "":
		return fmt.Errorf("mcp toolset %s: the command's program name is empty", ts.Name)
	}
	for _, p := range slices.Concat(ts.Allow, ts.Deny) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("mcp toolset %s: bad pattern %q: %w", ts.Name, p, err)
		}
	}
	return nil
}

func (ts *Toolset) String() string {
	if ts.URL != "" {
		return fmt.Sprintf("MCP server %s (%s)", ts.Name, ts.URL)
	}
	return fmt.Sprintf("MCP server %s (%s)", ts.Name, strings.Join(ts.Command, " "))
}

// Tools connects to the server if needed and returns its tools (those that
// pass Allow and Deny) as swarm tools. The list is read once; later calls
// return the same tools.
func (ts *Toolset) Tools(ctx context.Context) ([]swarm.Tool, error) {
	if err := ts.Validate(); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultConnectTimeout)
		defer cancel()
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.tools != nil {
		return slices.Clone(ts.tools), nil
	}
	s, err := ts.connectLocked(ctx)
	if err != nil {
		return nil, err
	}
	stderr := ts.stderr
	var tools []swarm.Tool
	used := map[string]bool{}
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("%s: list tools: %w%s", ts, err, stderr.tail())
		}
		if !ts.allowed(t.Name) {
			continue
		}
		tools = append(tools, ts.wrap(t, used))
	}
	if tools == nil {
		tools = []swarm.Tool{}
	}
	ts.tools = tools
	return slices.Clone(tools), nil
}

// Sibling returns the tools of the toolset's server as an agent named name
// that a captain can absorb ([absorb.Into]) like a local one: each
// tool is a skill of the agent, named after the tool, whose input is the
// tool's input schema. Absorbed, a server with one tool gives the captain a
// tool named name; a server with more gives one tool per skill, named
// "<name>__<tool>". The server runs in its own process (or behind its URL):
// it may be another swarm, served by swarm mcp, written in any language.
// Sibling connects to list the tools; calls go through the toolset's
// session.
func (ts *Toolset) Sibling(ctx context.Context, name, description string) (absorb.Sibling, error) {
	tools, err := ts.Tools(ctx)
	if err != nil {
		return absorb.Sibling{}, err
	}
	if len(tools) == 0 {
		return absorb.Sibling{}, fmt.Errorf("%s: no tools to absorb", ts)
	}
	a := absorb.Sibling{Agent: &swarm.Agent{Name: name, Description: description}}
	for _, t := range tools {
		a.Skills = append(a.Skills, absorb.Skill{Name: strings.TrimPrefix(t.Name(), ts.Name+Separator), Description: t.Description(), Remote: t})
	}
	return a, nil
}

func (ts *Toolset) allowed(name string) bool {
	match := func(patterns []string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool {
			ok, _ := path.Match(p, name)
			return ok
		})
	}
	return (len(ts.Allow) == 0 || match(ts.Allow)) && !match(ts.Deny)
}

// Close ends the session and stops the server's command. A later call
// connects again.
func (ts *Toolset) Close() error {
	ts.mu.Lock()
	s := ts.session
	ts.session = nil
	ts.mu.Unlock()
	if s == nil {
		return nil
	}
	if err := s.Close(); err != nil && !errors.Is(err, sdk.ErrConnectionClosed) {
		return fmt.Errorf("%s: close: %w", ts, err)
	}
	return nil
}

// connectLocked returns the live session, connecting first if there is
// none. ts.mu is held.
func (ts *Toolset) connectLocked(ctx context.Context) (*sdk.ClientSession, error) {
	if ts.session != nil {
		return ts.session, nil
	}
	var transport sdk.Transport
	if ts.URL != "" {
		var next http.RoundTripper = traceprop.Transport(nil)
		if ts.OAuth != nil {
			next = ts.OAuth.Transport(next)
		}
		client := &http.Client{Transport: headerTransport{headers: ts.Headers, next: next}}
		transport = &sdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: client, DisableStandaloneSSE: true}
	} else {
		ts.stderr = &tail{max: 2 << 10}
		cmd := exec.Command(ts.Command[0], ts.Command[1:]...)
		cmd.Dir = ts.Dir
		cmd.Env = os.Environ()
		for k, v := range ts.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = ts.stderr
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "swarm", Version: "dev"}, nil)
	s, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w%s", ts, err, ts.stderr.tail())
	}
	ts.session = s
	// Forget the session as soon as it ends, so that the next call
	// connects again.
	go func() {
		_ = s.Wait()
		ts.mu.Lock()
		if ts.session == s {
			ts.session = nil
		}
		ts.mu.Unlock()
	}()
	return s, nil
}

// call calls the server's tool name with args.
func (ts *Toolset) call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	timeout := ts.Timeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ts.mu.Lock()
	s, err := ts.connectLocked(ctx)
	stderr := ts.stderr
	ts.mu.Unlock()
	if err != nil {
		return "", err
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		var wire *jsonrpc.Error
		switch {
		case errors.As(err, &wire):
			// The server answered: the session is fine.
		case ctx.Err() != nil:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return "", fmt.Errorf("%s: tool %s timed out after %s: %w", ts, name, timeout, ctx.Err())
			}
		default:
			// The connection broke: drop the session so that the next call
			// starts the server again.
			ts.mu.Lock()
			if ts.session == s {
				ts.session = nil
			}
			ts.mu.Unlock()
			_ = s.Close()
			return "", fmt.Errorf("%s: tool %s: the server is gone: %w%s", ts, name, err, stderr.tail())
		}
		return "", fmt.Errorf("%s: tool %s: %w", ts, name, err)
	}
	text := resultText(res)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error"
		}
		return "", errors.New(text)
	}
	if note := attachMedia(ctx, res); note != "" {
		text += "\n" + note
	}
	return text, nil
}

// attachMedia attaches the images, audio and embedded binary resources of
// a tool result to the result the model sees (swarm.AttachParts), besides
// the text that describes them. It returns a note for the model about any
// it could not attach; outside a run (a toolset called directly) nothing
// is attached.
func attachMedia(ctx context.Context, res *sdk.CallToolResult) string {
	var parts []model.Part
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.ImageContent:
			parts = append(parts, model.Image(c.MIMEType, c.Data))
		case *sdk.AudioContent:
			parts = append(parts, model.Audio(c.MIMEType, c.Data))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil && len(r.Blob) > 0 {
				parts = append(parts, model.Attachment(path.Base(r.URI), r.MIMEType, r.Blob))
			}
		}
	}
	if len(parts) == 0 || swarm.RunID(ctx) == "" {
		return ""
	}
	if err := swarm.AttachParts(ctx, parts...); err != nil {
		return "(its images and files could not be attached: " + err.Error() + ")"
	}
	return ""
}

// resultText renders a tool result for a model: its text content, with
// other content described, or its structured content.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", c.Resource.URI))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// wrap makes a swarm tool of an MCP tool, with a unique valid name.
func (ts *Toolset) wrap(t *sdk.Tool, used map[string]bool) swarm.Tool {
	name := ts.Name + Separator + sanitize(t.Name)
	if len(name) > maxToolName || used[name] {
		sum := sha256.Sum256([]byte(t.Name))
		suffix := "_" + hex.EncodeToString(sum[:3])
		name = name[:min(len(name), maxToolName-len(suffix))] + suffix
	}
	used[name] = true
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return &mcpTool{ts: ts, name: name, remote: t.Name, description: desc, schema: toolSchema(t.InputSchema)}
}

// sanitize maps a tool name onto [a-zA-Z0-9_-].
func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		if model.NameChar(r) {
			return r
		}
		return '_'
	}, name)
}

// toolSchema returns an MCP tool's input schema in a form the runtime can
// check arguments against: as given when it resolves, without its $schema
// (servers often declare draft-07) when that helps, else a plain object.
func toolSchema(in any) json.RawMessage {
	plain := json.RawMessage(`{"type":"object"}`)
	b, err := json.Marshal(in)
	if err != nil || resolves(b) {
		if err != nil {
			return plain
		}
		return b
	}
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		delete(m, "$schema")
		if b2, err := json.Marshal(m); err == nil && resolves(b2) {
			return b2
		}
	}
	return plain
}

func resolves(schema []byte) bool {
	var sc jsonschema.Schema
	if json.Unmarshal(schema, &sc) != nil {
		return false
	}
	_, err := sc.Resolve(nil)
	return err == nil
}

// mcpTool is one tool of a toolset.
type mcpTool struct {
	ts                        *Toolset
	name, remote, description string
	schema                    json.RawMessage
}

func (t *mcpTool) Name() string            { return t.name }
func (t *mcpTool) Description() string     { return t.description }
func (t *mcpTool) Schema() json.RawMessage { return t.schema }

// Call calls the tool on the server.
func (t *mcpTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.ts.call(ctx, t.remote, args)
}

// headerTransport adds headers to every request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// tail returns "; stderr: <the last bytes written>", or "" when nothing
// was written (or t is nil).
func (t *tail) tail() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), ""))
	t.mu.Unlock()
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}
