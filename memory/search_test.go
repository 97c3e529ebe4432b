package memory_test

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/memory"
	"github.com/swarmrt/swarm/model/openai"
	"github.com/swarmrt/swarm/store"
	storemem "github.com/swarmrt/swarm/store/memory"
)

// corpus is a small fixed bank of what a support agent remembers about
// customers and policies.
var corpus = map[string]string{
	"pref/seat":        "Prefers an aisle seat on long flights, never the middle seat",
	"pref/meal":        "Vegetarian meals only; allergic to peanuts",
	"pref/contact":     "Contact by email in the morning, never by phone",
	"pref/language":    "Speaks Portuguese; answer in Portuguese when possible",
	"pref/hotel":       "Likes quiet hotel rooms on a high floor away from the elevator",
	"pref/payment":     "Pays with the corporate Amex card ending 4421",
	"pref/loyalty":     "Gold member of the airline loyalty programme, number SW-88231",
	"pref/bags":        "Always travels with one checked bag and a small backpack",
	"pref/car":         "Rents compact electric cars, needs an automatic gearbox",
	"pref/timezone":    "Lives in Lisbon, Western European time",
	"history/refund":   "Asked for a refund of order 1182 after a delayed delivery; refund granted",
	"history/upgrade":  "Was upgraded to business class in March as an apology",
	"history/complain": "Complained about rude staff at the Porto desk",
	"history/lost":     "Lost luggage on flight TP202, found after three days",
	"history/cancel":   "Cancelled the Madrid trip because of a strike",
	"policy/returns":   "Items can be returned within 30 days with the receipt",
	"policy/pets":      "Small pets travel in the cabin in a carrier under 8 kg",
	"policy/wifi":      "Onboard wifi is free for gold members",
	"note/birthday":    "Birthday on 14 June; send a voucher",
	"note/kids":        "Travels with two children aged 6 and 9",
}

// queries map a question to the entry that answers it.
var queries = []struct{ q, want string }{
	{"which seat does she like", "pref/seat"},
	{"dietary restrictions and allergies", "pref/meal"},
	{"how should we contact the customer", "pref/contact"},
	{"what language to answer in", "pref/language"},
	{"hotel room preferences", "pref/hotel"},
	{"which card does she pay with", "pref/payment"},
	{"loyalty number", "pref/loyalty"},
	{"how much luggage does she check", "pref/bags"},
	{"car rental preference", "pref/car"},
	{"refund for the late delivery", "history/refund"},
	{"was she ever upgraded", "history/upgrade"},
	{"lost luggage", "history/lost"},
	{"why was the Madrid trip cancelled", "history/cancel"},
	{"can she return items", "policy/returns"},
	{"can her dog fly in the cabin", "policy/pets"},
	{"is wifi free", "policy/wifi"},
	{"when is her birthday", "note/birthday"},
	{"does she travel with children", "note/kids"},
	{"complaint about staff", "history/complain"},
	{"where does she live", "pref/timezone"},
}

func fill(t testing.TB, mem *memory.Memory, bank string) {
	t.Helper()
	for k, v := range corpus {
		if _, err := mem.Put(t.Context(), bank, store.MemoryEntry{Key: k, Text: v}); err != nil {
			t.Fatal(err)
		}
	}
}

// hitRate returns the share of queries whose entry is among the top 3.
func hitRate(t *testing.T, mem *memory.Memory, bank string) (float64, []string) {
	t.Helper()
	var hits int
	var missed []string
	for _, c := range queries {
		got, err := mem.Search(t.Context(), bank, c.q, 3)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, h := range got {
			found = found || h.Key == c.want
		}
		if found {
			hits++
		} else {
			missed = append(missed, c.q)
		}
	}
	return float64(hits) / float64(len(queries)), missed
}

// TestSearchQuality reports the top-3 hit rate of lexical search on a
// fixed corpus of 20 entries and 20 questions, and holds it at 75% or
// more. (A question misses when it shares no term with its entry, as
// "allergies" and "allergic" do not.)
func TestSearchQuality(t *testing.T) {
	mem := &memory.Memory{Store: storemem.New()}
	fill(t, mem, "user:q")
	rate, missed := hitRate(t, mem, "user:q")
	t.Logf("lexical top-3 hit rate: %.0f%% (%d queries); missed: %q", rate*100, len(queries), missed)
	if rate < 0.75 {
		t.Fatalf("top-3 hit rate %.2f, want at least 0.75; missed %q", rate, missed)
	}
}

// fakeEmbeddings serves POST /embeddings as OpenAI does, with a
// deterministic embedding: a hashed bag of words in which a few words
// stand for their synonyms, so that meaning-level matches exist that BM25
// cannot find.
func fakeEmbeddings(t *testing.T, calls *atomic.Int64) *httptest.Server {
	t.Helper()
	synonyms := map[string]string{"dog": "pets", "pet": "pets", "live": "lisbon", "lives": "lisbon", "home": "lisbon",
		"kids": "children", "corridor": "aisle"}
	const dims = 256
	vec := func(s string) []float64 {
		v := make([]float64, dims)
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
			if s, ok := synonyms[w]; ok {
				w = s
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%dims]++
		}
		return v
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		calls.Add(1)
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "embed-small" {
			http.Error(w, `{"error":{"message":"bad body","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		out := struct {
			Object string  `json:"object"`
			Data   []datum `json:"data"`
			Model  string  `json:"model"`
			Usage  any     `json:"usage"`
		}{Object: "list", Model: req.Model, Usage: map[string]int{"prompt_tokens": 1, "total_tokens": 1}}
		// Answer in reverse order: the client must place vectors by index.
		for i := len(req.Input) - 1; i >= 0; i-- {
			out.Data = append(out.Data, datum{"embedding", i, vec(req.Input[i])})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestEmbeddingSearch embeds entries and queries through the OpenAI
// embeddings endpoint (a wire-level fake): vectors are kept in the store,
// and fused search finds entries by meaning where BM25 alone misses them,
// without losing the lexical hits. One embedding call per write and per
// search.
func TestEmbeddingSearch(t *testing.T) {
	var calls atomic.Int64
	srv := fakeEmbeddings(t, &calls)
	m, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithAPIKey("k"), openai.WithEmbeddingModel("embed-small"))
	if err != nil {
		t.Fatal(err)
	}
	st := storemem.New()
	mem := &memory.Memory{Store: st, Embedder: m}
	fill(t, mem, "user:v")
	if n := calls.Load(); n != int64(len(corpus)) {
		t.Fatalf("%d embedding calls for %d writes", n, len(corpus))
	}
	e, err := st.GetMemory(t.Context(), "user:v", "policy/pets")
	if err != nil || len(e.Vector) != 256 || math.IsNaN(float64(e.Vector[0])) {
		t.Fatalf("stored entry = %d dims, %v; want its 256-dimension vector", len(e.Vector), err)
	}
	lexical := &memory.Memory{Store: st}
	for _, q := range []struct{ q, want string }{{"may I bring my dog", "policy/pets"}, {"where is her home", "pref/timezone"}} {
		if top := keys(t, lexical, "user:v", q.q); contains(top, q.want) {
			t.Fatalf("BM25 alone finds %s for %q (%q): the case shows nothing", q.want, q.q, top)
		}
		if top := keys(t, mem, "user:v", q.q); !contains(top, q.want) {
			t.Errorf("fused search for %q = %q, want %s in the top 3", q.q, top, q.want)
		}
	}
	before := calls.Load()
	rate, missed := hitRate(t, mem, "user:v")
	t.Logf("fused (BM25 + embeddings) top-3 hit rate: %.0f%%; missed: %q", rate*100, missed)
	if rate < 0.9 {
		t.Fatalf("fused hit rate %.2f, want at least 0.9", rate)
	}
	if n := calls.Load() - before; n != int64(len(queries)) {
		t.Fatalf("%d embedding calls for %d searches", n, len(queries))
	}
	// A failing endpoint fails the search with the provider's error.
	broken, _ := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithAPIKey("wrong"), openai.WithEmbeddingModel("embed-small"))
	bad := &memory.Memory{Store: st, Embedder: broken}
	if _, err := bad.Search(context.Background(), "user:v", "seat", 3); err == nil || !strings.Contains(err.Error(), "embed") {
		t.Fatalf("search with a failing embedder: %v", err)
	}
}

func keys(t *testing.T, mem *memory.Memory, bank, q string) []string {
	t.Helper()
	hits, err := mem.Search(t.Context(), bank, q, 3)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.Key)
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestSearchSeesChanges searches, changes the bank (a new entry, a
// replaced one, a deleted one, from another Memory as another process
// would) and searches again: the cached index follows every change.
func TestSearchSeesChanges(t *testing.T) {
	st := storemem.New()
	mem, other := &memory.Memory{Store: st}, &memory.Memory{Store: st}
	ctx := t.Context()
	put := func(m *memory.Memory, k, v string) {
		if _, err := m.Put(ctx, "b", store.MemoryEntry{Key: k, Text: v}); err != nil {
			t.Fatal(err)
		}
	}
	put(mem, "a", "apples are red")
	put(mem, "b", "bananas are yellow")
	check := func(q string, want ...string) {
		t.Helper()
		got := keys(t, mem, "b", q)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("search %q = %q, want %q", q, got, want)
		}
	}
	check("apples", "a")
	put(other, "c", "cherries are dark")
	put(other, "a", "avocados are green")
	check("apples")
	check("avocados", "a")
	check("cherries", "c")
	if err := other.Delete(ctx, "b", "b"); err != nil {
		t.Fatal(err)
	}
	check("bananas")
	put(other, "d", "dates are sweet")
	if err := other.Delete(ctx, "b", "c"); err != nil {
		t.Fatal(err)
	}
	put(other, "e", "elderberries are small")
	check("cherries")
	check("dates", "d")
	check("elderberries", "e")
}

// TestEmbeddingCallsInBudget runs the support agent with an embedder: its
// embedding requests (one per write, one per search) are taken from the
// run tree's budget pool like its model calls.
func TestEmbeddingCallsInBudget(t *testing.T) {
	var calls atomic.Int64
	srv := fakeEmbeddings(t, &calls)
	em, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithAPIKey("k"), openai.WithEmbeddingModel("embed-small"))
	if err != nil {
		t.Fatal(err)
	}
	pool := func(em memory.Embedder) int64 {
		st := storemem.New()
		mem := &memory.Memory{Store: st, Bank: "user:{user}", Embedder: em}
		def := swarm.Define[string, string]("support", "", func(string) swarm.Spec { return swarm.Spec{Tools: mem.Tools()} })
		rt := newRuntime(t, st, supportScript, "A", def)
		id := runFor(t, rt, def, "gil")
		p, err := st.Spend(t.Context(), id, store.Pool{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Calls
	}
	without, with := pool(nil), pool(em)
	if calls.Load() != 2 || with != without+2 {
		t.Fatalf("%d embedding calls; the pool counts %d calls, %d without embeddings: want 2 more", calls.Load(), with, without)
	}
}
