package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
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
// transport, for mounting at /mcp. It does not authenticate: mount it
// behind (*auth.Authenticator).Middleware, whose principal it passes on to
// every MCP request (an MCP session stays bound to the token that opened
// it). A tools/call or prompts/get of a swarm the caller's token is not
// allowed is answered 403 before it reaches the server; every handler
// checks again. Idle sessions are closed after [SessionTimeout]. Requests
// to a localhost address with another Host header are refused (DNS
// rebinding protection). If the server cannot be built, every request is
// answered 500 with the reason.
func NewHTTPHandler(rt *swarm.Runtime, opts Options) http.Handler {
	srv, err := NewServer(rt, opts)
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
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Logger:         opts.Logger,
		SessionTimeout: SessionTimeout,
	})
	verify := func(ctx context.Context, _ string, r *http.Request) (*sdkauth.TokenInfo, error) {
		p := auth.FromContext(r.Context())
		if p == nil {
			return nil, sdkauth.ErrInvalidToken
		}
		return &sdkauth.TokenInfo{UserID: p.Name, Extra: map[string]any{principalKey: p}}, nil
	}
	withToken := sdkauth.RequireBearerToken(verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return &httpHandler{plain: h, withToken: withToken, swarms: ids}
}

type httpHandler struct {
	plain, withToken http.Handler
	swarms           map[string]bool
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := auth.FromContext(r.Context())
	if p == nil || r.Header.Get("Authorization") == "" {
		// In-process use, or an anonymous caller of a server that needs no
		// token: nothing to restrict.
		h.plain.ServeHTTP(w, r)
		return
	}
	if !p.All() && r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
		if id, name, forbidden := h.forbidden(p, body); forbidden {
			writeForbidden(w, id, name, p.ScopeChallenge(r.URL.Path, name))
			return
		}
	}
	h.withToken.ServeHTTP(w, r)
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
