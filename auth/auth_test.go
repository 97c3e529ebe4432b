package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAuthenticate(t *testing.T) {
	a, err := New([]Token{
		{Name: "ops", Secret: "s3cret", Swarms: []string{"*"}},
		{Name: "planner-only", Secret: "p1", Swarms: []string{"planner"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		header string
		want   string
		err    error
	}{
		{"", "", ErrUnauthenticated},
		{"Bearer", "", ErrUnauthenticated},
		{"Basic s3cret", "", ErrUnauthenticated},
		{"Bearer wrong", "", ErrUnauthenticated},
		{"Bearer s3cret", "ops", nil},
		{"bearer p1", "planner-only", nil},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		p, err := a.Authenticate(r)
		if !errors.Is(err, c.err) {
			t.Errorf("%q: err %v, want %v", c.header, err, c.err)
		}
		if err == nil && p.Name != c.want {
			t.Errorf("%q: principal %q, want %q", c.header, p.Name, c.want)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer p1")
	p, _ := a.Authenticate(r)
	if !p.Allows("planner") || p.Allows("triage") {
		t.Errorf("planner-only token: allows planner %v, triage %v", p.Allows("planner"), p.Allows("triage"))
	}
	ctx := WithPrincipal(context.Background(), p)
	if err := Check(ctx, "triage"); !errors.Is(err, ErrForbidden) {
		t.Errorf("Check(triage) = %v, want ErrForbidden", err)
	}
	if !Allowed(context.Background(), "anything") {
		t.Error("in-process callers must be allowed")
	}
}

func TestNewRejectsBadTokens(t *testing.T) {
	if _, err := New([]Token{{Name: "x"}}); err == nil {
		t.Error("empty secret accepted")
	}
	if _, err := New([]Token{{Secret: "a"}, {Secret: "a"}}); err == nil {
		t.Error("repeated secret accepted")
	}
}

func TestMiddleware(t *testing.T) {
	a, _ := New([]Token{{Name: "t", Secret: "x"}})
	var got *Principal
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = FromContext(r.Context()) }))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != 401 || w.Header().Get("WWW-Authenticate") == "" {
		t.Errorf("no token: %d %q", w.Code, w.Header().Get("WWW-Authenticate"))
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer x")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || got == nil || got.Name != "t" || !got.All() {
		t.Errorf("token: %d %+v", w.Code, got)
	}
	// No tokens: anonymous, allowed everything.
	var none *Authenticator
	w = httptest.NewRecorder()
	none.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = FromContext(r.Context()) })).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != 200 || !got.All() {
		t.Errorf("anonymous: %d %+v", w.Code, got)
	}
}

func TestRequireForAddr(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:8080": true, "localhost:1": true, "[::1]:9": true, ":8080": false, "0.0.0.0:80": false, "10.0.0.1:80": false} {
		if err := RequireForAddr(nil, addr); (err == nil) != ok {
			t.Errorf("%s: %v", addr, err)
		}
	}
	a, _ := New([]Token{{Secret: "x"}})
	if err := RequireForAddr(a, ":8080"); err != nil {
		t.Error(err)
	}
}

func TestSessionCookie(t *testing.T) {
	a, err := New([]Token{{Name: "ops", Secret: "s3cret", Swarms: []string{"one"}}})
	if err != nil {
		t.Fatal(err)
	}
	req := func(method, cookie, header string) *http.Request {
		r := httptest.NewRequest(method, "/v1/runs", nil)
		if cookie != "" {
			r.AddCookie(&http.Cookie{Name: SessionCookie, Value: cookie})
		}
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		return r
	}
	for _, c := range []struct {
		name    string
		r       *http.Request
		wantErr error
	}{
		{"GET with the cookie", req("GET", "s3cret", ""), nil},
		{"HEAD with the cookie", req("HEAD", "s3cret", ""), nil},
		{"POST with the cookie only", req("POST", "s3cret", ""), ErrUnauthenticated},
		{"GET with a wrong cookie", req("GET", "nope", ""), ErrUnauthenticated},
		{"GET with an empty cookie", req("GET", " ", ""), ErrUnauthenticated},
		{"a bad header wins over a good cookie", req("GET", "s3cret", "Bearer nope"), ErrUnauthenticated},
	} {
		p, err := a.Authenticate(c.r)
		if !errors.Is(err, c.wantErr) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.wantErr)
		}
		if err == nil && (p.Name != "ops" || !p.Allows("one") || p.Allows("two")) {
			t.Errorf("%s: principal %+v", c.name, p)
		}
	}
}
