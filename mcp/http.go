package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
)

// SessionTimeout is how long an HTTP session may stay idle before the
// server closes it.
const SessionTimeout = time.Hour

// maxBody bounds the request bodies the HTTP handler reads.
const maxBody = sdk.DefaultMaxRequestBodyBytes

// principalKey is where the caller's principal travels in the token info of
// an MCP request.
const principalKey = "swarm/principal"

// principalOf returns the principal the HTTP handler attached to a request,
// or nil (stdio, in-process, or anonymous callers).
func principalOf(extra *sdk.RequestExtra) *auth.Principal {
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	p, _ := extra.TokenInfo.Extra[principalKey].(*auth.Principal)
	return p
}

// NewHTTPHandler serves [NewServer]'s server over the streamable HTTP
// transport, for mounting at /mcp, in both revisions of the protocol: a
// request whose MCP-Protocol-Version header names 2026-07-28 (or later) is
// served statelessly, each request standing alone with its version and
// capabilities in its _meta; any other request is served in the session
// that an initialize request opened (2025-11-25 and before).
//
// A stateless client that declares the Tasks extension ([TasksExtension])
// in a tools/call's capabilities gets the run as a task (see [Task]) when
// it has not ended within [Options.TaskWait], and follows it with
// tasks/get, tasks/update (the answer to a pause) and tasks/cancel. A task
// is its run: the store holds its state, so it survives the server's
// restart and any server on the same store answers for it.
//
// The handler does not authenticate: mount it behind
// (*auth.Authenticator).Middleware, whose principal it passes on to every
// MCP request (an MCP session stays bound to the token that opened it). A
// tools/call or prompts/get of a swarm the caller's token is not allowed
// is answered 403 (with an insufficient_scope challenge) before it reaches
// the server, and a tasks/* request for such a swarm's run as one for a
// task that does not exist; every handler checks again. Idle sessions are
// closed after [SessionTimeout]. A request whose Host is not a name of the
// server or whose Origin is another site's gets 403 (DNS rebinding
// protection, [auth.GuardHosts]): behind the server of package server,
// with its names. Transport errors are JSON-RPC errors: 413 for a body
// over 4 MiB (or the server's limit), -32700 for a body that is not JSON,
// -32022 for an MCP-Protocol-Version this server does not speak. If the
// server cannot be built, every request is answered 500 with the reason.
func NewHTTPHandler(rt *swarm.Runtime, opts Options) http.Handler {
	srv, s, err := newServer(rt, opts, true)
	if err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		})
	}
	opts = opts.withDefaults()
	ids := map[string]bool{}
	for _, d := range rt.Swarms() {
		ids[d.ID()] = true
	}
	get := func(*http.Request) *sdk.Server { return srv }
	// The Host and Origin are checked once, by auth.GuardHosts (or the
	// guard of the server in front), with the server's names.
	legacy := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{
		Logger:                     opts.Logger,
		SessionTimeout:             SessionTimeout,
		DisableLocalhostProtection: true,
	})
	modern := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{
		Logger:                     opts.Logger,
		Stateless:                  true,
		DisableLocalhostProtection: true,
	})
	h := &eraHandler{legacy: legacy, modern: modern, s: s}
	verify := func(ctx context.Context, _ string, r *http.Request) (*sdkauth.TokenInfo, error) {
		p := auth.FromContext(r.Context())
		if p == nil {
			return nil, sdkauth.ErrInvalidToken
		}
		return &sdkauth.TokenInfo{UserID: p.Name, Extra: map[string]any{principalKey: p}}, nil
	}
	withToken := sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return auth.GuardHosts(&httpHandler{plain: h, withToken: withToken, swarms: ids})
}

// eraHandler sends each request to the transport of its protocol
// revision, and answers the Tasks extension's requests itself.
type eraHandler struct {
	legacy, modern http.Handler
	s              *server
}

func (h *eraHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !protocolVersionModern(r.Header.Get("MCP-Protocol-Version")) {
		h.legacy.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost {
		// transportChecks read the body into memory.
		body, _ := io.ReadAll(r.Body)
		if h.serveTask(w, r, body) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	h.modern.ServeHTTP(w, r)
}

// serveTask answers body if it is a tasks/get, tasks/update or
// tasks/cancel request (which the SDK does not know), and reports whether
// it did.
func (h *eraHandler) serveTask(w http.ResponseWriter, r *http.Request, body []byte) bool {
	var req struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || !isTaskMethod(req.Method) {
		return false
	}
	fail := func(status int, e *jsonrpc.Error) bool {
		writeRPC(w, status, req.ID, nil, e)
		return true
	}
	if len(req.ID) == 0 || string(req.ID) == "null" || req.JSONRPC != "2.0" {
		return fail(http.StatusBadRequest, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: req.Method + ": not a JSON-RPC 2.0 request with an id"})
	}
	var p taskParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return fail(http.StatusBadRequest, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: req.Method + ": invalid params: " + err.Error()})
	}
	if e := taskMetaError(req.Method, p.Meta); e != nil {
		return fail(http.StatusBadRequest, e)
	}
	version, _ := p.Meta[sdk.MetaKeyProtocolVersion].(string)
	switch header := r.Header.Get("MCP-Protocol-Version"); {
	case version != header:
		return fail(http.StatusBadRequest, &jsonrpc.Error{Code: codeHeaderMismatch, Message: fmt.Sprintf("MCP-Protocol-Version header %q does not match the request's %q", header, version)})
	case r.Header.Get("Mcp-Method") != req.Method:
		return fail(http.StatusBadRequest, &jsonrpc.Error{Code: codeHeaderMismatch, Message: fmt.Sprintf("Mcp-Method header %q does not match the method %q", r.Header.Get("Mcp-Method"), req.Method)})
	case r.Header.Get("Mcp-Name") != p.TaskID:
		return fail(http.StatusBadRequest, &jsonrpc.Error{Code: codeHeaderMismatch, Message: fmt.Sprintf("Mcp-Name header %q does not match the taskId %q", r.Header.Get("Mcp-Name"), p.TaskID)})
	}
	ctx := r.Context()
	res, terr := h.s.handleTask(ctx, req.Method, p)
	if terr != nil {
		return fail(terr.status, terr.err)
	}
	writeRPC(w, http.StatusOK, req.ID, withServerInfo(res, h.s.impl), nil)
	return true
}

// writeRPC writes a JSON-RPC response: res, or e.
func writeRPC(w http.ResponseWriter, status int, id json.RawMessage, res any, e *jsonrpc.Error) {
	if len(id) == 0 {
		id = json.RawMessage(`null`)
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		msg["error"] = e
	} else {
		msg["result"] = res
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(msg)
}

type httpHandler struct {
	plain, withToken http.Handler
	swarms           map[string]bool
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !transportChecks(w, r) {
		return
	}
	p := auth.FromContext(r.Context())
	if p == nil || r.Header.Get("Authorization") == "" {
		// In-process use, or an anonymous caller of a server that needs no
		// token: nothing to restrict.
		h.plain.ServeHTTP(w, r)
		return
	}
	if !p.All() && r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body) // in memory: see transportChecks
		r.Body = io.NopCloser(bytes.NewReader(body))
		if id, name, forbidden := h.forbidden(p, body); forbidden {
			writeForbidden(w, id, name, p.ScopeChallenge(r.URL.Path, name))
			return
		}
	}
	h.withToken.ServeHTTP(w, r)
}

// transportChecks answers, as JSON-RPC errors, the transport errors that
// the SDK would answer in plain text or not at all, and reports whether
// the request may go on (its body then read and replaced): a POST body
// over maxBody (or the limit of a server in front) gets 413, one that is
// not JSON -32700 (Parse error), and an MCP-Protocol-Version header naming
// a version this server does not speak -32022 (UnsupportedProtocolVersion)
// listing those it speaks, all with 400 but the first.
func transportChecks(w http.ResponseWriter, r *http.Request) bool {
	var id json.RawMessage
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge) || int64(len(body)) > maxBody:
			limit := int64(maxBody)
			if tooLarge != nil {
				limit = tooLarge.Limit
			}
			writeRPC(w, http.StatusRequestEntityTooLarge, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("request body exceeds %d bytes", limit)})
			return false
		case err != nil:
			writeRPC(w, http.StatusBadRequest, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "Parse error: reading the request body: " + err.Error()})
			return false
		case !json.Valid(body):
			writeRPC(w, http.StatusBadRequest, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "Parse error: the request body is not JSON"})
			return false
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(body, &req) == nil {
			id = req.ID
		}
	}
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" && !slices.Contains(sdk.SupportedProtocolVersions(), v) {
		writeRPC(w, http.StatusBadRequest, id, nil, unsupportedVersion(v))
		return false
	}
	return true
}

// unsupportedVersion is the error of a request in a protocol version this
// server does not speak: its data lists those it speaks.
func unsupportedVersion(v string) *jsonrpc.Error {
	data, _ := json.Marshal(sdk.UnsupportedProtocolVersionData{Supported: sdk.SupportedProtocolVersions(), Requested: v})
	return &jsonrpc.Error{Code: sdk.CodeUnsupportedProtocolVersion, Message: fmt.Sprintf("Unsupported protocol version %q (supported: %s)", v, strings.Join(sdk.SupportedProtocolVersions(), ", ")), Data: data}
}

// forbidden reports a tools/call or prompts/get in body (a JSON-RPC message
// or batch) of a swarm p may not use.
func (h *httpHandler) forbidden(p *auth.Principal, body []byte) (json.RawMessage, string, bool) {
	type call struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	var calls []call
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &calls) != nil {
			return nil, "", false
		}
	} else {
		var c call
		if json.Unmarshal(body, &c) != nil {
			return nil, "", false
		}
		calls = []call{c}
	}
	for _, c := range calls {
		if (c.Method == "tools/call" || c.Method == "prompts/get") && h.swarms[c.Params.Name] && !p.Allows(c.Params.Name) {
			return c.ID, c.Params.Name, true
		}
	}
	return nil, "", false
}

func writeForbidden(w http.ResponseWriter, id json.RawMessage, name, challenge string) {
	if len(id) == 0 {
		id = json.RawMessage(`null`)
	}
	msg, _ := json.Marshal("swarm " + name + ": " + auth.ErrForbidden.Error())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("WWW-Authenticate", challenge)
	w.WriteHeader(http.StatusForbidden)
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":`+strconv.Itoa(CodeForbidden)+`,"message":`+string(msg)+`}}`+"\n")
}
