package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/store"
)

// TestMemoryRoutes lists banks and entries, reads one entry, and deletes
// an entry and a bank over HTTP; a token limited to some swarms may not.
func TestMemoryRoutes(t *testing.T) {
	a, err := auth.New([]auth.Token{{Name: "all", Secret: "all"}, {Name: "echo", Secret: "echo", Swarms: []string{"echo"}}})
	if err != nil {
		t.Fatal(err)
	}
	ts, _, rt := newTest(t, Options{Auth: a})
	ms := rt.Store().(store.Memories)
	for _, w := range []struct{ bank, key, text string }{
		{"user:alice", "preferences/seat", "Prefers an aisle seat"},
		{"user:alice", "notes/1", "Called about a refund"},
		{"user:bob", "preferences/seat", "Window"},
	} {
		if _, _, err := ms.PutMemory(t.Context(), w.bank, store.MemoryWrite{Entry: store.MemoryEntry{Key: w.key, Text: w.text}}); err != nil {
			t.Fatal(err)
		}
	}
	c := client{t: t, base: ts.URL, token: "all"}
	var banks BankList
	res := c.get("/v1/memory?prefix=user:")
	res.decode(t, &banks)
	if res.status != http.StatusOK || len(banks.Banks) != 2 || banks.Banks[0].Name != "user:alice" || banks.Banks[0].Entries != 2 {
		t.Fatalf("GET /v1/memory: %d %s", res.status, res.body)
	}
	var entries BankEntries
	res = c.get("/v1/memory/user:alice?limit=1")
	res.decode(t, &entries)
	if res.status != http.StatusOK || entries.Bank.Entries != 2 || len(entries.Entries) != 1 || entries.Entries[0].Key != "notes/1" {
		t.Fatalf("GET /v1/memory/user:alice: %d %s", res.status, res.body)
	}
	var e store.MemoryEntry
	res = c.get("/v1/memory/user:alice/preferences/seat")
	res.decode(t, &e)
	if res.status != http.StatusOK || e.Text != "Prefers an aisle seat" {
		t.Fatalf("GET an entry: %d %s", res.status, res.body)
	}
	for _, bad := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/memory/user:alice/nothing", http.StatusNotFound},
		{"GET", "/v1/memory/bad%20bank", http.StatusBadRequest},
		{"GET", "/v1/memory/user:alice?limit=0", http.StatusBadRequest},
		{"DELETE", "/v1/memory/user:alice/nothing", http.StatusNotFound},
	} {
		if res := c.do(bad.method, bad.path, "", ""); res.status != bad.status {
			t.Errorf("%s %s: %d %s, want %d", bad.method, bad.path, res.status, res.body, bad.status)
		}
	}
	// A token limited to some swarms sees no bank, and deletes nothing;
	// nor does a request without a token.
	for _, tok := range []string{"echo", ""} {
		lim := client{t: t, base: ts.URL, token: tok}
		for _, m := range []string{"GET", "DELETE"} {
			if res := lim.do(m, "/v1/memory/user:alice/preferences/seat", "", ""); res.status != http.StatusForbidden && res.status != http.StatusUnauthorized {
				t.Fatalf("%s with token %q: %d %s", m, tok, res.status, res.body)
			}
		}
		if res := lim.get("/v1/memory"); res.status == http.StatusOK {
			t.Fatalf("GET /v1/memory with token %q: %d", tok, res.status)
		}
	}
	if res := c.do("DELETE", "/v1/memory/user:alice/preferences/seat", "", ""); res.status != http.StatusNoContent {
		t.Fatalf("DELETE an entry: %d %s", res.status, res.body)
	}
	if _, err := ms.GetMemory(t.Context(), "user:alice", "preferences/seat"); err == nil {
		t.Fatal("the deleted entry is still there")
	}
	res = c.do("DELETE", "/v1/memory/user:bob", "", "")
	if res.status != http.StatusOK || !strings.Contains(string(res.body), `"deleted":1`) {
		t.Fatalf("DELETE a bank: %d %s", res.status, res.body)
	}
	if b, _ := ms.Bank(t.Context(), "user:bob"); b.Version != 0 {
		t.Fatalf("deleted bank: %+v", b)
	}
}
