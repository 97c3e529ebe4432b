package dashboard_test

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/auth"
	"github.com/swarmrt/swarm/dashboard"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// banks returns rt's store as memory banks, with entries written to bank.
func banks(t *testing.T, rt *swarm.Runtime, bank string, entries ...store.MemoryEntry) store.Memories {
	t.Helper()
	ms := rt.Store().(store.Memories)
	for _, e := range entries {
		if _, _, err := ms.PutMemory(swarmtest.Context(t), bank, store.MemoryWrite{Entry: e}); err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

// TestMemoryPages lists the banks, a bank's entries (a long text clipped
// with the whole text beside it, tags), a page at a time and by key prefix.
func TestMemoryPages(t *testing.T) {
	ts, rt := serve(t, false)
	long := strings.Repeat("The customer likes window seats on morning flights. ", 10) + "THE-END"
	banks(t, rt, "user:ida",
		store.MemoryEntry{Key: "preferences/seat", Text: "Prefers an aisle seat <b>", Tags: []string{"seat", "flights"}},
		store.MemoryEntry{Key: "notes/history", Text: long})
	var many []store.MemoryEntry
	for i := range 60 {
		many = append(many, store.MemoryEntry{Key: fmt.Sprintf("k%03d", i), Text: "x"})
	}
	banks(t, rt, "agent:support", many...)
	b := newBrowser(t, ts.URL)
	b.login(adminSecret)

	p := b.get("/ui/memory")
	if p.status != http.StatusOK || !strings.Contains(p.body, `href="/ui/memory/user:ida"`) || !strings.Contains(p.body, `href="/ui/memory/agent:support"`) {
		t.Fatalf("banks page: %d\n%s", p.status, p.body)
	}
	if !strings.Contains(p.body, `href="/ui/memory" aria-current="page"`) {
		t.Errorf("the nav does not mark Memory")
	}
	if p := b.get("/ui/memory?prefix=user:"); strings.Contains(p.body, "agent:support") || !strings.Contains(p.body, "user:ida") {
		t.Errorf("banks filtered by prefix user: show another bank or hide theirs")
	}

	p = b.get("/ui/memory/user:ida")
	if p.status != http.StatusOK {
		t.Fatalf("bank page: %d\n%s", p.status, p.body)
	}
	for _, want := range []string{"<code>preferences/seat</code>", "Prefers an aisle seat &lt;b&gt;", "seat, flights", `<details class="clip">`, "THE-END", "<strong>2</strong> entries"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("bank page lacks %q", want)
		}
	}
	// The clip (in the summary) stops before the end; the whole text is
	// in the details.
	summary := p.body[strings.Index(p.body, `<details class="clip">`):]
	summary = summary[:strings.Index(summary, "</summary>")]
	if strings.Contains(summary, "THE-END") || !strings.Contains(summary, "The customer likes") {
		t.Errorf("the summary of a long text is not clipped: %s", summary)
	}
	if strings.Count(p.body, `<details class="clip">`) != 1 {
		t.Errorf("a short text is clipped too")
	}
	if p := b.get("/ui/memory/user:ida?prefix=notes/"); strings.Contains(p.body, "preferences/seat") || !strings.Contains(p.body, "notes/history") {
		t.Errorf("entries filtered by prefix notes/ show another or hide theirs")
	}

	// Pages of 50, with a "more" link that goes on after the last key.
	p = b.get("/ui/memory/agent:support")
	if !strings.Contains(p.body, "<code>k049</code>") || strings.Contains(p.body, "<code>k050</code>") {
		t.Fatalf("the first page is not k000 to k049")
	}
	const more = `href="/ui/memory/agent:support?prefix=&amp;after=k049"`
	if !strings.Contains(p.body, more) {
		t.Fatalf("the first page has no more link to after k049")
	}
	p = b.get("/ui/memory/agent:support?prefix=&after=k049")
	if !strings.Contains(p.body, "<code>k050</code>") || !strings.Contains(p.body, "<code>k059</code>") || strings.Contains(p.body, "<code>k049</code>") || strings.Contains(p.body, `id="more"`) {
		t.Errorf("the second page is not k050 to k059 without a more link")
	}

	for path, want := range map[string]int{
		"/ui/memory/bad%20name":                              http.StatusBadRequest,
		"/ui/memory/x?prefix=" + strings.Repeat("a", 2000):   http.StatusBadRequest,
		"/ui/memory?prefix=%ff":                              http.StatusBadRequest,
		"/ui/memory/unknown-bank":                            http.StatusOK,
		"/ui/memory/user:ida?after=" + url.QueryEscape("zz"): http.StatusOK,
	} {
		if p := b.get(path); p.status != want {
			t.Errorf("GET %s: %d, want %d", path, p.status, want)
		}
	}
}

// TestMemoryDelete deletes an entry, then the whole bank, from their
// confirmation forms; a form without the CSRF token, with a wrong one or
// from another site deletes nothing.
func TestMemoryDelete(t *testing.T) {
	ctx := swarmtest.Context(t)
	ts, rt := serve(t, false)
	ms := banks(t, rt, "user:ida",
		store.MemoryEntry{Key: "preferences/seat", Text: "aisle"},
		store.MemoryEntry{Key: "preferences/meal", Text: "vegetarian"})
	b := newBrowser(t, ts.URL)
	b.login(adminSecret)
	p := b.get("/ui/memory/user:ida?prefix=preferences/")
	for _, want := range []string{`action="/ui/memory/user:ida/entries/delete"`, `name="key" value="preferences/seat"`, `action="/ui/memory/user:ida/delete"`, `<details class="confirm"`} {
		if !strings.Contains(p.body, want) {
			t.Fatalf("bank page lacks %q", want)
		}
	}
	tok := csrf(t, p)
	entry := url.Values{"key": {"preferences/seat"}, "prefix": {"preferences/"}}
	with := func(v url.Values, csrf string) url.Values {
		out := url.Values{"csrf": {csrf}}
		for k, vs := range v {
			out[k] = vs
		}
		return out
	}
	cross := map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}
	for name, try := range map[string]func() page{
		"no CSRF token": func() page { return b.do("POST", "/ui/memory/user:ida/entries/delete", entry, nil) },
		"wrong CSRF token": func() page {
			return b.do("POST", "/ui/memory/user:ida/entries/delete", with(entry, wrongToken(tok)), nil)
		},
		"another site":     func() page { return b.do("POST", "/ui/memory/user:ida/entries/delete", with(entry, tok), cross) },
		"bank, no token":   func() page { return b.do("POST", "/ui/memory/user:ida/delete", url.Values{}, nil) },
		"bank, other site": func() page { return b.do("POST", "/ui/memory/user:ida/delete", with(nil, tok), cross) },
	} {
		if p := try(); p.status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, p.status)
		}
	}
	if info, _ := ms.Bank(ctx, "user:ida"); info.Entries != 2 {
		t.Fatalf("a refused form deleted something: %d entries left", info.Entries)
	}

	p = b.do("POST", "/ui/memory/user:ida/entries/delete", with(entry, tok), nil)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/memory/user:ida?deleted=preferences%2Fseat&prefix=preferences%2F" {
		t.Fatalf("delete entry: %d %q", p.status, p.header.Get("Location"))
	}
	if _, err := ms.GetMemory(ctx, "user:ida", "preferences/seat"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("after delete: %v, want ErrNotFound", err)
	}
	if _, err := ms.GetMemory(ctx, "user:ida", "preferences/meal"); err != nil {
		t.Errorf("the other entry: %v", err)
	}
	if p := b.get(p.header.Get("Location")); !strings.Contains(p.body, "Entry <code>preferences/seat</code> was deleted.") || strings.Contains(p.body, "<code>preferences/seat</code></td>") {
		t.Errorf("the bank page after delete does not say so, or still lists the entry")
	}
	if p := b.do("POST", "/ui/memory/user:ida/entries/delete", with(entry, tok), nil); p.status != http.StatusNotFound {
		t.Errorf("delete it again: %d, want 404", p.status)
	}
	if p := b.do("POST", "/ui/memory/user:ida/entries/delete", with(url.Values{"key": {""}}, tok), nil); p.status != http.StatusBadRequest {
		t.Errorf("delete an empty key: %d, want 400", p.status)
	}

	p = b.do("POST", "/ui/memory/user:ida/delete", with(nil, tok), nil)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/memory?deleted=user%3Aida&entries=1" {
		t.Fatalf("delete bank: %d %q", p.status, p.header.Get("Location"))
	}
	if list, err := ms.Banks(ctx, ""); err != nil || len(list) != 0 {
		t.Errorf("banks after delete: %v %v", list, err)
	}
	if p := b.get(p.header.Get("Location")); !strings.Contains(p.body, "Bank <code>user:ida</code> was deleted, with its 1 entries.") {
		t.Errorf("the banks page after delete does not say so:\n%s", p.body)
	}
}

// TestMemoryNeedsAllSwarms refuses a token allowed only some swarms, as
// the HTTP API does: it can neither see the banks nor delete from them.
func TestMemoryNeedsAllSwarms(t *testing.T) {
	ctx := swarmtest.Context(t)
	ts, rt := serve(t, false)
	ms := banks(t, rt, "user:ida", store.MemoryEntry{Key: "k", Text: "secret"})
	b := newBrowser(t, ts.URL)
	b.login(echoSecret)
	tok := csrf(t, b.get("/ui/swarms"))
	for _, path := range []string{"/ui/memory", "/ui/memory/user:ida", "/v1/memory"} {
		if p := b.get(path); p.status != http.StatusForbidden || strings.Contains(p.body, "secret") {
			t.Errorf("GET %s with a token for echo: %d, want 403", path, p.status)
		}
	}
	if p := b.do("POST", "/ui/memory/user:ida/entries/delete", url.Values{"csrf": {tok}, "key": {"k"}}, nil); p.status != http.StatusForbidden {
		t.Errorf("delete entry with a token for echo: %d, want 403", p.status)
	}
	if p := b.do("POST", "/ui/memory/user:ida/delete", url.Values{"csrf": {tok}}, nil); p.status != http.StatusForbidden {
		t.Errorf("delete bank with a token for echo: %d, want 403", p.status)
	}
	if _, err := ms.GetMemory(ctx, "user:ida", "k"); err != nil {
		t.Errorf("a refused delete deleted: %v", err)
	}
}

// plainStore is a store that keeps no memory banks.
type plainStore struct{ store.Store }

// TestMemoryWithoutBanks shows a note, not an error, on a store that keeps
// no memory banks.
func TestMemoryWithoutBanks(t *testing.T) {
	rt, err := swarm.New(swarm.Config{Store: plainStore{memory.New()}, Model: scripted.New(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	a, err := auth.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := serveDashboard(t, rt, dashboard.Options{Auth: a})
	b := newBrowser(t, ts.URL)
	p := b.get("/ui/memory")
	if p.status != http.StatusOK || !strings.Contains(html.UnescapeString(p.body), "keeps no memory banks") || strings.Contains(p.body, `id="banks"`) {
		t.Errorf("banks page on a store without banks: %d\n%s", p.status, p.body)
	}
	if p := b.get("/ui/memory/user:ida"); p.status != http.StatusNotFound || !strings.Contains(p.body, "keeps no memory banks") {
		t.Errorf("bank page on a store without banks: %d", p.status)
	}
}
