package auth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHostGuard checks which Host and Origin headers a guard lets through:
// loopback names, the connection's address and the names it was given;
// an Origin only when it is the server's own or one of those names.
func TestHostGuard(t *testing.T) {
	g, err := NewHostGuard([]string{"swarm.example", "10.0.0.7:8080", "Proxy.Example."})
	if err != nil {
		t.Fatal(err)
	}
	local := &net.TCPAddr{IP: net.ParseIP("192.168.1.5"), Port: 8080}
	req := func(host, origin string) *http.Request {
		r := httptest.NewRequest("POST", "/v1/runs", nil)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(local)))
		r.Host = host
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		return r
	}
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:8080": true, "127.0.0.1": true, "127.0.0.2:1": true, "[::1]:8080": true,
		"0.0.0.0:8080": true, "192.168.1.5:8080": true, "192.168.1.5": true, "swarm.example:443": true, "swarm.example.": true,
		"10.0.0.7:8080": true, "proxy.example": true,
		"evil.example": false, "evil.example:8080": false, "10.0.0.7:9090": false, "10.0.0.7": false, "192.168.1.6:8080": false,
		"localhost.evil.example": false, "": false,
	} {
		if got := g.AllowsHost(req(host, "")); got != want {
			t.Errorf("Host %q: allowed %v, want %v", host, got, want)
		}
	}
	for origin, want := range map[string]bool{
		"": true, "http://127.0.0.1:8080": true, "https://swarm.example": true, "http://proxy.example:3000": true,
		"http://evil.example": false, "null": false, "http://localhost:8080": false, "http://127.0.0.1:3000": false, "file://": false, "%": false,
	} {
		if got := g.AllowsOrigin(req("127.0.0.1:8080", origin)); got != want {
			t.Errorf("Origin %q: allowed %v, want %v", origin, got, want)
		}
	}

	star, _ := NewHostGuard([]string{"*"})
	if !star.AllowsHost(req("evil.example", "")) || star.AllowsOrigin(req("evil.example", "http://other.example")) {
		t.Error(`"*" must allow any Host and still refuse another site's Origin`)
	}
	for _, bad := range []string{"https://swarm.example", "swarm.example/x", "", "a b"} {
		if _, err := NewHostGuard([]string{bad}); err == nil || !strings.Contains(err.Error(), "not a URL") {
			t.Errorf("NewHostGuard(%q): %v", bad, err)
		}
	}

	// The middleware answers 403 in JSON and marks what it lets through;
	// GuardHosts checks only what no guard checked.
	var guarded bool
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { guarded = Guarded(r.Context()) })
	w := httptest.NewRecorder()
	g.Middleware(next).ServeHTTP(w, req("evil.example", ""))
	if w.Code != 403 || !strings.Contains(w.Body.String(), `"code":"host_not_allowed"`) || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("evil Host: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	g.Middleware(next).ServeHTTP(w, req("swarm.example", "http://evil.example"))
	if w.Code != 403 || !strings.Contains(w.Body.String(), `"code":"origin_not_allowed"`) {
		t.Errorf("evil Origin: %d %s", w.Code, w.Body)
	}
	g.Middleware(GuardHosts(next)).ServeHTTP(httptest.NewRecorder(), req("swarm.example", ""))
	if !guarded {
		t.Error("a name of the guard in front was refused by GuardHosts behind it")
	}
	w = httptest.NewRecorder()
	GuardHosts(next).ServeHTTP(w, req("swarm.example", ""))
	if w.Code != 403 {
		t.Errorf("GuardHosts alone let a name it was not given through: %d", w.Code)
	}
}
