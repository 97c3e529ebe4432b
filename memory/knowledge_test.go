package memory_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/memory"
	"github.com/swarmrt/swarm/model/scripted"
	storemem "github.com/swarmrt/swarm/store/memory"
	"github.com/swarmrt/swarm/swarmtest"
)

// TestSplit cuts at paragraph, line and word boundaries, never inside a
// rune, and loses no word.
func TestSplit(t *testing.T) {
	text := strings.Repeat("Refunds are granted within thirty days. ", 40) + "\n\n" + strings.Repeat("é", 300)
	parts := memory.Split(text, 200)
	var words int
	for _, p := range parts {
		if len(p) > 200 || !utf8.ValidString(p) || p != strings.TrimSpace(p) {
			t.Fatalf("chunk of %d bytes: %q", len(p), p)
		}
		words += len(strings.Fields(p))
	}
	if want := len(strings.Fields(text)); words < want {
		t.Fatalf("%d words in chunks, %d in the text", words, want)
	}
	if len(parts) < 10 || !strings.HasPrefix(parts[len(parts)-1], "é") {
		t.Fatalf("%d chunks, last %q", len(parts), parts[len(parts)-1])
	}
}

// TestKnowledgeLookup gives an agent knowledge (a text and a large file),
// looks it up through the tool in a run, and reads an entry by parts; the
// hook fires for each chunk returned.
func TestKnowledgeLookup(t *testing.T) {
	dir := t.TempDir()
	manual := filepath.Join(dir, "baggage.md")
	var b strings.Builder
	for i := range 30 {
		b.WriteString("Section about seats and meals and upgrades and lounges. ")
		if i == 17 {
			b.WriteString("Checked baggage allowance is 23 kg per bag in economy. ")
		}
		b.WriteString("\n\n")
	}
	if err := os.WriteFile(manual, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var used []memory.KnowledgeUse
	k := &memory.Knowledge{
		ChunkBytes: 300,
		Entries: []memory.KnowledgeEntry{
			{Name: "refunds", Description: "refund policy", Text: "Refunds are granted within 30 days of purchase with the receipt."},
			{Name: "baggage", Description: "the baggage manual", File: manual},
		},
		OnUsed: func(_ context.Context, u memory.KnowledgeUse) {
			mu.Lock()
			used = append(used, u)
			mu.Unlock()
		},
	}
	tool := k.Tool()
	if !strings.Contains(tool.Description(), "baggage (the baggage manual)") {
		t.Fatalf("description %q", tool.Description())
	}
	def := swarm.Define[string, string]("kb", "", func(string) swarm.Spec { return swarm.Spec{Tools: []swarm.Tool{tool}} })
	script := scripted.Script{"kb": {
		scripted.Tools(scripted.CallTool(memory.ToolLookup, map[string]any{"query": "baggage allowance kg", "limit": 1})),
		scripted.Tools(scripted.CallTool(memory.ToolLookup, map[string]any{"entry": "baggage", "chunk": 1})),
		scripted.Tools(scripted.CallTool(memory.ToolLookup, map[string]any{"entry": "nothing"})),
		scripted.Text("23 kg"),
	}}
	rt := newRuntime(t, storemem.New(), script, "A", def)
	_, run, err := def.Run(swarmtest.Context(t), rt, "how heavy may my bag be?")
	if err != nil {
		t.Fatal(err)
	}
	out := toolOutputs(t, rt, run.ID(), memory.ToolLookup)
	if len(out) != 3 || !strings.Contains(out[0], "23 kg per bag") || !strings.Contains(out[0], `"entry":"baggage"`) ||
		!strings.Contains(out[1], `"chunk":1`) || !strings.Contains(out[2], `no knowledge entry "nothing"`) {
		t.Fatalf("lookups = %q", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(used) != 2 || used[0].Entry != "baggage" || used[0].Query != "baggage allowance kg" || used[0].RunID != run.ID() ||
		used[1].Chunk != 1 || used[1].Chunks < 5 {
		t.Fatalf("hook saw %+v", used)
	}
}

func TestKnowledgeCheck(t *testing.T) {
	for _, es := range [][]memory.KnowledgeEntry{
		{{Name: "", Text: "x"}},
		{{Name: "a", Text: "x"}, {Name: "a", Text: "y"}},
		{{Name: "a"}},
		{{Name: "a", Text: "x", File: "f"}},
	} {
		k := &memory.Knowledge{Entries: es}
		if err := k.Check(); err == nil {
			t.Errorf("Check(%+v) = nil", es)
		}
	}
	k := &memory.Knowledge{Entries: []memory.KnowledgeEntry{{Name: "a", File: "/nonexistent/file"}}}
	if _, err := k.Lookup(t.Context(), "x", "", 0, 0); err == nil || !strings.Contains(err.Error(), "knowledge entry \"a\"") {
		t.Fatalf("lookup with a missing file: %v", err)
	}
}
