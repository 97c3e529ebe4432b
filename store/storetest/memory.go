package storetest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/swarmrt/swarm/store"
)

// memoryTests are the cases of store.Memories; a store without memory
// banks skips them.
var memoryTests = []struct {
	name string
	fn   func(t *testing.T, s store.Store)
}{
	{"MemoryPut", testMemoryPut},
	{"MemoryWriteKey", testMemoryWriteKey},
	{"MemoryLimits", testMemoryLimits},
	{"MemoryList", testMemoryList},
	{"MemoryDelete", testMemoryDelete},
	{"MemoryBadInput", testMemoryBadInput},
	{"MemoryConcurrent", testMemoryConcurrent},
	{"MemoryConcurrentLimit", testMemoryConcurrentLimit},
	{"MemoryConcurrentWriteKey", testMemoryConcurrentWriteKey},
}

// memories returns s as store.Memories, skipping t if it is not one.
func memories(t testing.TB, s store.Store) store.Memories {
	t.Helper()
	ms, ok := s.(store.Memories)
	if !ok {
		t.Skipf("%T does not implement store.Memories: memory cases skipped", s)
	}
	return ms
}

func put(t testing.TB, ms store.Memories, bank string, w store.MemoryWrite) (store.MemoryEntry, bool) {
	t.Helper()
	e, applied, err := ms.PutMemory(t.Context(), bank, w)
	if err != nil {
		t.Fatalf("PutMemory(%q, %q): %v", bank, w.Entry.Key, err)
	}
	return e, applied
}

func bankInfo(t testing.TB, ms store.Memories, bank string) store.BankInfo {
	t.Helper()
	b, err := ms.Bank(t.Context(), bank)
	if err != nil {
		t.Fatalf("Bank(%q): %v", bank, err)
	}
	return b
}

func entry(key, text string) store.MemoryWrite {
	return store.MemoryWrite{Entry: store.MemoryEntry{Key: key, Text: text}}
}

func testMemoryPut(t *testing.T, s store.Store) {
	ms := memories(t, s)
	ctx := t.Context()
	if b := bankInfo(t, ms, "agent:support"); b != (store.BankInfo{Name: "agent:support"}) {
		t.Fatalf("unknown bank = %+v, want only its name", b)
	}
	w := store.MemoryWrite{Entry: store.MemoryEntry{Key: "pref/seat", Text: "aisle seat, never middle", Tags: []string{"travel", "seat"},
		Vector: []float32{0.5, -1.25, 3}}}
	got, applied := put(t, ms, "agent:support", w)
	if !applied || got.Key != "pref/seat" || got.Text != w.Entry.Text || !slices.Equal(got.Tags, w.Entry.Tags) ||
		!slices.Equal(got.Vector, w.Entry.Vector) || got.Version != 1 || got.CreatedAt.IsZero() || !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Fatalf("PutMemory = %+v, %v; want the entry at version 1, applied", got, applied)
	}
	read, err := ms.GetMemory(ctx, "agent:support", "pref/seat")
	if err != nil || read.Text != w.Entry.Text || !slices.Equal(read.Vector, w.Entry.Vector) || !slices.Equal(read.Tags, w.Entry.Tags) ||
		read.Version != 1 || !read.CreatedAt.Equal(got.CreatedAt) {
		t.Fatalf("GetMemory = %+v, %v; want %+v", read, err, got)
	}
	// Replacing keeps the creation time and takes the next version.
	again, _ := put(t, ms, "agent:support", entry("pref/seat", "window seat"))
	if again.Version != 2 || again.Text != "window seat" || again.Tags != nil || again.Vector != nil || !again.CreatedAt.Equal(got.CreatedAt) {
		t.Fatalf("replacing PutMemory = %+v; want version 2, no tags or vector, created %v", again, got.CreatedAt)
	}
	put(t, ms, "agent:support", entry("pref/meal", "vegetarian"))
	b := bankInfo(t, ms, "agent:support")
	if b.Name != "agent:support" || b.Entries != 2 || b.Version != 3 || b.UpdatedAt.IsZero() ||
		b.Bytes != int64(len("pref/seat")+len("window seat")+len("pref/meal")+len("vegetarian")) {
		t.Fatalf("Bank = %+v; want 2 entries at version 3 and their bytes", b)
	}
	// Banks are independent.
	if _, err := ms.GetMemory(ctx, "agent:other", "pref/seat"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetMemory of another bank: %v, want ErrNotFound", err)
	}
}

func testMemoryWriteKey(t *testing.T, s store.Store) {
	ms := memories(t, s)
	ctx := t.Context()
	w := entry("k", "first")
	w.WriteKey = "run-1/t1/tool/call_1"
	if _, applied := put(t, ms, "b", w); !applied {
		t.Fatal("first write with a write key not applied")
	}
	put(t, ms, "b", entry("k", "second"))
	// The first write, retried, changes nothing: the later value stays.
	got, applied := put(t, ms, "b", w)
	if applied || got.Text != "second" || got.Version != 2 {
		t.Fatalf("retried write = %+v, applied %v; want the entry as it is (second, version 2), not applied", got, applied)
	}
	if b := bankInfo(t, ms, "b"); b.Version != 2 || b.Entries != 1 {
		t.Fatalf("Bank after a retried write = %+v, want version 2 and 1 entry", b)
	}
	// Nor after the entry was deleted.
	if err := ms.DeleteMemory(ctx, "b", "k"); err != nil {
		t.Fatal(err)
	}
	got, applied = put(t, ms, "b", w)
	if applied || got.Key != "" {
		t.Fatalf("write retried after a deletion = %+v, applied %v; want nothing", got, applied)
	}
	if _, err := ms.GetMemory(ctx, "b", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("entry came back after a retried write: %v", err)
	}
	// Write keys are per bank.
	if _, applied := put(t, ms, "other", w); !applied {
		t.Fatal("a write key of bank b blocked a write to bank other")
	}
}

func testMemoryLimits(t *testing.T, s store.Store) {
	ms := memories(t, s)
	ctx := t.Context()
	lim := store.BankLimits{MaxEntries: 2, MaxBytes: 20}
	w := func(key, text string) store.MemoryWrite {
		return store.MemoryWrite{Entry: store.MemoryEntry{Key: key, Text: text}, Limits: lim, WriteKey: "w-" + key + text}
	}
	put(t, ms, "b", w("a", "12345"))   // 6 bytes
	put(t, ms, "b", w("b", "1234567")) // 8 bytes: 14
	if _, _, err := ms.PutMemory(ctx, "b", w("c", "1")); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("third entry past MaxEntries 2: %v, want ErrTooLarge", err)
	}
	if _, _, err := ms.PutMemory(ctx, "b", w("a", "1234567890123")); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("replacement past MaxBytes 20: %v, want ErrTooLarge", err)
	}
	b := bankInfo(t, ms, "b")
	if b.Entries != 2 || b.Bytes != 14 || b.Version != 2 {
		t.Fatalf("Bank after refused writes = %+v; want 2 entries, 14 bytes, version 2", b)
	}
	// A refused write does not use up its write key.
	lim.MaxEntries = 3
	if _, applied := put(t, ms, "b", w("c", "1")); !applied {
		t.Fatal("a write refused for the limits, then allowed, was not applied")
	}
	// A replacement within the limits is fine.
	if got, _ := put(t, ms, "b", w("a", "1234")); got.Text != "1234" {
		t.Fatalf("replacement = %+v", got)
	}
}

func testMemoryList(t *testing.T, s store.Store) {
	ms := memories(t, s)
	ctx := t.Context()
	for _, k := range []string{"pref/b", "note/1", "pref/a", "pref/c", "préf", "pref"} {
		w := entry(k, "text of "+k)
		w.Entry.Vector = []float32{1, 2}
		put(t, ms, "b", w)
	}
	keys := func(f store.MemoryFilter) []string {
		t.Helper()
		es, err := ms.ListMemories(ctx, "b", f)
		if err != nil {
			t.Fatalf("ListMemories(%+v): %v", f, err)
		}
		var out []string
		for _, e := range es {
			if (e.Vector != nil) != f.Vectors {
				t.Fatalf("ListMemories(%+v): entry %q has vector %v", f, e.Key, e.Vector)
			}
			if e.Text != "text of "+e.Key {
				t.Fatalf("ListMemories: entry %q has text %q", e.Key, e.Text)
			}
			out = append(out, e.Key)
		}
		return out
	}
	for _, c := range []struct {
		f    store.MemoryFilter
		want []string
	}{
		{store.MemoryFilter{}, []string{"note/1", "pref", "pref/a", "pref/b", "pref/c", "préf"}},
		{store.MemoryFilter{Vectors: true}, []string{"note/1", "pref", "pref/a", "pref/b", "pref/c", "préf"}},
		{store.MemoryFilter{Prefix: "pref/"}, []string{"pref/a", "pref/b", "pref/c"}},
		{store.MemoryFilter{Prefix: "pref", Limit: 2}, []string{"pref", "pref/a"}},
		{store.MemoryFilter{Prefix: "pref", After: "pref/a", Limit: 2}, []string{"pref/b", "pref/c"}},
		{store.MemoryFilter{After: "pref/c"}, []string{"préf"}},
		{store.MemoryFilter{Prefix: "x%"}, nil},
		{store.MemoryFilter{Since: 3}, []string{"pref", "pref/c", "préf"}},
		{store.MemoryFilter{Since: 3, Prefix: "pref/", Limit: 1}, []string{"pref/c"}},
		{store.MemoryFilter{Since: 6}, nil},
	} {
		if got := keys(c.f); !slices.Equal(got, c.want) {
			t.Errorf("ListMemories(%+v) = %q, want %q", c.f, got, c.want)
		}
	}
	if es, err := ms.ListMemories(ctx, "unknown", store.MemoryFilter{}); err != nil || len(es) != 0 {
		t.Fatalf("ListMemories of an unknown bank = %v, %v; want none", es, err)
	}
}

func testMemoryDelete(t *testing.T, s store.Store) {
	ms := memories(t, s)
	ctx := t.Context()
	put(t, ms, "user:alice", entry("a", "one"))
	put(t, ms, "user:alice", entry("b", "two"))
	put(t, ms, "user:bob", entry("a", "three"))
	put(t, ms, "agent:x", entry("a", "four"))
	if err := ms.DeleteMemory(ctx, "user:alice", "a"); err != nil {
		t.Fatalf("DeleteMemory: %v", err)
	}
	if err := ms.DeleteMemory(ctx, "user:alice", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteMemory again: %v, want ErrNotFound", err)
	}
	if err := ms.DeleteMemory(ctx, "nobank", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteMemory of an unknown bank: %v, want ErrNotFound", err)
	}
	if b := bankInfo(t, ms, "user:alice"); b.Entries != 1 || b.Bytes != 4 || b.Version != 3 {
		t.Fatalf("Bank after a deletion = %+v, want 1 entry of 4 bytes at version 3", b)
	}
	banks, err := ms.Banks(ctx, "user:")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range banks {
		names = append(names, b.Name)
	}
	if !slices.Equal(names, []string{"user:alice", "user:bob"}) {
		t.Fatalf("Banks(user:) = %q", names)
	}
	n, err := ms.DeleteBank(ctx, "user:alice")
	if err != nil || n != 1 {
		t.Fatalf("DeleteBank = %d, %v; want 1", n, err)
	}
	if n, err := ms.DeleteBank(ctx, "user:alice"); err != nil || n != 0 {
		t.Fatalf("DeleteBank again = %d, %v; want 0", n, err)
	}
	if b := bankInfo(t, ms, "user:alice"); b.Version != 0 || b.Entries != 0 {
		t.Fatalf("deleted bank = %+v, want none", b)
	}
	if all, _ := ms.Banks(ctx, ""); len(all) != 2 {
		t.Fatalf("Banks after DeleteBank = %+v, want user:bob and agent:x", all)
	}
	if _, err := ms.GetMemory(ctx, "user:bob", "a"); err != nil {
		t.Fatalf("another bank's entry after DeleteBank: %v", err)
	}
}

func testMemoryBadInput(t *testing.T, s store.Store) {
	ms := memories(t, s)
	ctx := t.Context()
	nan := float32(math.NaN())
	for _, c := range []struct {
		name, bank string
		w          store.MemoryWrite
		tooLarge   bool
	}{
		{"empty bank", "", entry("k", "x"), false},
		{"slash in bank", "a/b", entry("k", "x"), false},
		{"space in bank", "a b", entry("k", "x"), false},
		{"long bank", strings.Repeat("b", 300), entry("k", "x"), true},
		{"empty key", "b", entry("", "x"), false},
		{"control key", "b", entry("a\nb", "x"), false},
		{"long key", "b", entry(strings.Repeat("k", 2000), "x"), true},
		{"long text", "b", entry("k", strings.Repeat("x", store.MaxMemoryBytes+1)), true},
		{"NUL text", "b", entry("k", "a\x00b"), false},
		{"bad UTF-8", "b", entry("k", "a\xffb"), false},
		{"NaN vector", "b", store.MemoryWrite{Entry: store.MemoryEntry{Key: "k", Text: "x", Vector: []float32{1, nan}}}, false},
		{"big vector", "b", store.MemoryWrite{Entry: store.MemoryEntry{Key: "k", Text: "x", Vector: make([]float32, store.MaxMemoryDims+1)}}, true},
		{"many tags", "b", store.MemoryWrite{Entry: store.MemoryEntry{Key: "k", Text: "x", Tags: make([]string, 33)}}, true},
		{"negative limit", "b", store.MemoryWrite{Entry: store.MemoryEntry{Key: "k", Text: "x"}, Limits: store.BankLimits{MaxEntries: -1}}, false},
	} {
		_, _, err := ms.PutMemory(ctx, c.bank, c.w)
		if err == nil {
			t.Errorf("%s: PutMemory succeeded", c.name)
			continue
		}
		if errors.Is(err, store.ErrTooLarge) != c.tooLarge {
			t.Errorf("%s: PutMemory: %v; ErrTooLarge %v, want %v", c.name, err, errors.Is(err, store.ErrTooLarge), c.tooLarge)
		}
	}
	if all, err := ms.Banks(ctx, ""); err != nil || len(all) != 0 {
		t.Fatalf("Banks after bad writes = %+v, %v; want none", all, err)
	}
}

// testMemoryConcurrent writes one bank from many goroutines: every write
// is applied once, with its own version.
func testMemoryConcurrent(t *testing.T, s store.Store) {
	ms := memories(t, s)
	const writers, each = 8, 15
	var wg sync.WaitGroup
	versions := make(chan int64, writers*each)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e, _, err := ms.PutMemory(t.Context(), "team:x", entry(fmt.Sprintf("g%d/%d", g, i), "note"))
				if err != nil {
					t.Error(err)
					return
				}
				versions <- e.Version
			}
		}()
	}
	wg.Wait()
	close(versions)
	seen := map[int64]bool{}
	for v := range versions {
		if seen[v] {
			t.Fatalf("version %d given to two writes", v)
		}
		seen[v] = true
	}
	if b := bankInfo(t, ms, "team:x"); b.Entries != writers*each || b.Version != writers*each {
		t.Fatalf("Bank after %d concurrent writes = %+v", writers*each, b)
	}
}

// testMemoryConcurrentLimit races writes past a bank's entry limit:
// exactly the limit's number succeed.
func testMemoryConcurrentLimit(t *testing.T, s store.Store) {
	ms := memories(t, s)
	const n, limit = 24, 5
	var ok, full atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := entry(fmt.Sprintf("k%d", i), "x")
			w.Limits.MaxEntries = limit
			_, _, err := ms.PutMemory(t.Context(), "b", w)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrTooLarge):
				full.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != limit || full.Load() != n-limit {
		t.Fatalf("%d writes raced to a bank of at most %d entries: %d applied, %d refused", n, limit, ok.Load(), full.Load())
	}
	if b := bankInfo(t, ms, "b"); b.Entries != limit {
		t.Fatalf("Bank = %+v, want %d entries", b, limit)
	}
}

// testMemoryConcurrentWriteKey races one write, by its write key, from
// many goroutines: it is applied once.
func testMemoryConcurrentWriteKey(t *testing.T, s store.Store) {
	ms := memories(t, s)
	const n = 12
	var applied atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := entry("k", fmt.Sprintf("attempt %d", i))
			w.WriteKey = "run/step"
			_, ok, err := ms.PutMemory(t.Context(), "b", w)
			if err != nil {
				t.Error(err)
			}
			if ok {
				applied.Add(1)
			}
		}()
	}
	wg.Wait()
	if applied.Load() != 1 {
		t.Fatalf("one write retried %d times at once was applied %d times", n, applied.Load())
	}
	if b := bankInfo(t, ms, "b"); b.Version != 1 {
		t.Fatalf("Bank = %+v, want version 1", b)
	}
}
