package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// HostGuard refuses the requests a web page of another site could send to
// a server: those whose Host header is not a name of the server (a DNS
// rebinding attack: a page whose name now points at 127.0.0.1) and those
// whose Origin header names another site. A server without tokens on
// loopback would otherwise serve any page the user opens. Create it with
// [NewHostGuard]; the zero value allows the default names only.
type HostGuard struct {
	any       bool
	names     map[string]bool // host names allowed with any port
	hostPorts map[string]bool // host:port allowed as such
}

// NewHostGuard returns a guard that allows, besides the default names,
// each of names: a host name or IP address (any port), a host:port, or "*"
// (any Host; the Origin check stays). The default names are loopback ones
// (localhost, 127.0.0.1 and the rest of 127/8, [::1], with any port), the
// unspecified addresses (0.0.0.0, [::]) and the local address of the
// connection a request came on: none of them is a name a web page can
// point elsewhere.
func NewHostGuard(names []string) (*HostGuard, error) {
	g := &HostGuard{names: map[string]bool{}, hostPorts: map[string]bool{}}
	for _, n := range names {
		n = strings.TrimSpace(n)
		switch {
		case n == "*":
			g.any = true
		case n == "" || strings.ContainsAny(n, "/?#@ ") || strings.Contains(n, "://"):
			return nil, fmt.Errorf("auth: allowed host %q: want a host name, an IP address or host:port (not a URL)", n)
		default:
			host, port := splitHostPort(n)
			if port != "" {
				g.hostPorts[host+":"+port] = true
			} else {
				g.names[host] = true
			}
		}
	}
	return g, nil
}

// splitHostPort splits a Host header or an authority into its lowercased
// host name (without brackets or a trailing dot) and port ("" if none).
func splitHostPort(hostport string) (host, port string) {
	host = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	return host, port
}

// AllowsHost reports whether the Host of r is a name of the server.
func (g *HostGuard) AllowsHost(r *http.Request) bool {
	if g != nil && g.any {
		return true
	}
	host, port := splitHostPort(r.Host)
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return true
		}
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil {
			if lh, _ := splitHostPort(local.String()); net.ParseIP(lh).Equal(ip) {
				return true
			}
		}
	}
	return g != nil && (g.names[host] || g.hostPorts[host+":"+port])
}

// AllowsOrigin reports whether the Origin header of r, if any, is the
// server's own: the origin of the Host the request was sent to, or one of
// the names the guard was given (a public name behind a proxy that
// rewrites the Host). A request without Origin (a command line client, a
// same-origin GET) is allowed; "null" is not.
func (g *HostGuard) AllowsOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	host, port := splitHostPort(u.Host)
	return g != nil && (g.names[host] || g.hostPorts[host+":"+port])
}

type guardedKey struct{}

// Guarded reports whether a [HostGuard]'s middleware let the request of
// ctx through.
func Guarded(ctx context.Context) bool {
	ok, _ := ctx.Value(guardedKey{}).(bool)
	return ok
}

// Middleware refuses, with 403 and a JSON error, a request whose Host is
// not a name of the server (code host_not_allowed) or whose Origin is
// another site's (code origin_not_allowed), and marks the requests it lets
// through (see [Guarded]).
func (g *HostGuard) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !g.AllowsHost(r):
			host, _ := splitHostPort(r.Host)
			writeGuardError(w, "host_not_allowed", fmt.Sprintf("Host %q is not a name of this server, refused against DNS rebinding: allow it with swarm serve --allow-host %s, serve.hosts or serve.public_url in swarm.yaml", r.Host, host))
		case !g.AllowsOrigin(r):
			writeGuardError(w, "origin_not_allowed", fmt.Sprintf("Origin %q is another site: a page of another site may not call this server", r.Header.Get("Origin")))
		default:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), guardedKey{}, true)))
		}
	})
}

func writeGuardError(w http.ResponseWriter, code, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write(append(b, '\n'))
}

// GuardHosts returns h behind the default [HostGuard] (loopback names and
// the connection's address), unless a guard in front of it already let
// the request through: for handlers (MCP endpoints) that may be served on
// their own or behind a server's guard, whose names then rule.
func GuardHosts(h http.Handler) http.Handler {
	guarded := (&HostGuard{}).Middleware(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if Guarded(r.Context()) {
			h.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}
