package auth_test

import (
	"net/http/httptest"
	"testing"

	"github.com/swarmrt/swarm/auth"
)

func TestCapabilities(t *testing.T) {
	a, err := auth.New([]auth.Token{
		{Name: "all", Secret: "a"},
		{Name: "stock", Secret: "s", Swarms: []string{"trip"}, Capabilities: []string{"check-inventory"}},
		{Name: "star", Secret: "x", Capabilities: []string{"*"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		secret, capability string
		want               bool
	}{
		{"a", "dietary-check", true},
		{"s", "check-inventory", true},
		{"s", "dietary-check", false},
		{"x", "dietary-check", true},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+tc.secret)
		p, err := a.Authenticate(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.AllowsCapability(tc.capability); got != tc.want {
			t.Errorf("token %s, capability %s: %v, want %v", p.Name, tc.capability, got, tc.want)
		}
		if ctx := auth.WithPrincipal(r.Context(), p); auth.CapabilityAllowed(ctx, tc.capability) != tc.want {
			t.Errorf("CapabilityAllowed disagrees for %s", p.Name)
		}
	}
	var none *auth.Principal
	if none.AllowsCapability("x") {
		t.Error("a nil principal allows a capability")
	}
	if !auth.CapabilityAllowed(t.Context(), "x") {
		t.Error("an in-process caller is refused")
	}
}
