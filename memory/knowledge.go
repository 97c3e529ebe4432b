package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/registry"
)

// ToolLookup is the name of the tool a Knowledge offers.
const ToolLookup = "knowledge_lookup"

// DefaultChunkBytes is the size chunks are cut to when Knowledge sets none.
const DefaultChunkBytes = 2000

// maxKnowledgeBytes bounds an entry's text (a file's size).
const maxKnowledgeBytes = 16 << 20

// Knowledge is read-only text attached to an agent: policies, manuals,
// product sheets. Its entries are cut into chunks and offered through one
// tool, knowledge_lookup, which searches them (BM25) or reads an entry
// chunk by chunk; OnUsed fires for every chunk the tool returns. Unlike a
// memory bank it lives in the program, not the store: a recovered run's
// recorded lookups are not run again, and new ones see the knowledge of
// the process that runs them.
type Knowledge struct {
	// Entries are the knowledge; names must be unique and not empty.
	Entries []KnowledgeEntry
	// ChunkBytes is the most bytes of a chunk (0: DefaultChunkBytes).
	// Entries are cut at paragraph, line or word boundaries when they
	// can be.
	ChunkBytes int
	// OnUsed, when set, is called for every chunk a lookup returns,
	// before the tool call's result is journaled (so, like the call, at
	// least once; a replayed run does not call it again).
	OnUsed func(ctx context.Context, u KnowledgeUse)

	once   sync.Once
	chunks []chunk
	index  registry.Index
	err    error
}

// KnowledgeEntry is one piece of knowledge: Text, or the contents of File
// (read once, at the first lookup).
type KnowledgeEntry struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Text        string `json:"text,omitempty"`
	File        string `json:"file,omitempty"`
}

// KnowledgeUse says which chunk of which entry a lookup returned.
type KnowledgeUse struct {
	// RunID is the run whose tool call looked it up ("" outside a run).
	RunID string
	// Entry names the entry; Chunk is the chunk's position in it
	// (0-based) of Chunks.
	Entry         string
	Chunk, Chunks int
	// Query is the lookup's query ("" when an entry was read by name).
	Query string
}

// chunk is one piece of an entry.
type chunk struct {
	entry       string
	n, of       int
	text        string
	description string
}

// Chunk is one chunk knowledge_lookup returns.
type Chunk struct {
	Entry  string  `json:"entry"`
	Chunk  int     `json:"chunk"`
	Chunks int     `json:"chunks"`
	Text   string  `json:"text"`
	Score  float64 `json:"score,omitempty"`
}

// Check reports what is wrong with k's entries without reading files:
// names that are empty or repeated, an entry with both or neither of Text
// and File.
func (k *Knowledge) Check() error {
	seen := map[string]bool{}
	for i, e := range k.Entries {
		switch {
		case strings.TrimSpace(e.Name) == "":
			return fmt.Errorf("knowledge entry %d: empty name", i)
		case seen[e.Name]:
			return fmt.Errorf("knowledge entry %q: name repeated", e.Name)
		case (e.Text == "") == (e.File == ""):
			return fmt.Errorf("knowledge entry %q: give text or file, one of them", e.Name)
		}
		seen[e.Name] = true
	}
	if k.ChunkBytes < 0 {
		return errors.New("knowledge: negative chunk size")
	}
	return nil
}

// load reads files, cuts chunks and indexes them, once.
func (k *Knowledge) load(ctx context.Context) error {
	k.once.Do(func() {
		if k.err = k.Check(); k.err != nil {
			return
		}
		size := cmp.Or(k.ChunkBytes, DefaultChunkBytes)
		var docs []registry.Entry
		for _, e := range k.Entries {
			text := e.Text
			if e.File != "" {
				b, err := readLimited(e.File)
				if err != nil {
					k.err = fmt.Errorf("knowledge entry %q: %w", e.Name, err)
					return
				}
				text = string(b)
			}
			parts := Split(text, size)
			for i, p := range parts {
				k.chunks = append(k.chunks, chunk{entry: e.Name, n: i, of: len(parts), text: p, description: e.Description})
				docs = append(docs, registry.Entry{ID: e.Name, Description: p, Tags: []string{e.Description}})
			}
		}
		k.index, k.err = registry.BM25{}.Index(ctx, docs)
	})
	return k.err
}

func readLimited(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxKnowledgeBytes {
		return nil, fmt.Errorf("%s is %d bytes, the limit is %d", path, fi.Size(), maxKnowledgeBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%s is not UTF-8 text", path)
	}
	return b, nil
}

// Split cuts text into chunks of at most size bytes (at least 64), at the
// last paragraph break, else line break, else space before the limit, else
// at a rune boundary. Chunks are trimmed of surrounding white space;
// empty ones are left out.
func Split(text string, size int) []string {
	size = max(size, 64)
	var out []string
	for rest := strings.TrimSpace(text); rest != ""; {
		if len(rest) <= size {
			out = append(out, rest)
			break
		}
		cut := -1
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(rest[:size], sep); i > size/4 {
				cut = i
				break
			}
		}
		if cut < 0 {
			cut = size
			for cut > 0 && !utf8.RuneStart(rest[cut]) {
				cut--
			}
		}
		if c := strings.TrimSpace(rest[:cut]); c != "" {
			out = append(out, c)
		}
		rest = strings.TrimSpace(rest[cut:])
	}
	return out
}

type lookupArgs struct {
	Query string `json:"query,omitempty" jsonschema:"what to look for; the most relevant passages are returned"`
	Entry string `json:"entry,omitempty" jsonschema:"instead of a query: the name of an entry to read"`
	Chunk int    `json:"chunk,omitempty" jsonschema:"with entry: which part of it to read (0 is the first)"`
	Limit int    `json:"limit,omitempty" jsonschema:"with query: the most passages returned (default 3, at most 10)"`
}

type lookupResult struct {
	Chunks []Chunk `json:"chunks"`
}

// maxListed bounds the entries the tool's description names.
const maxListed = 50

// Tool returns the knowledge_lookup tool over k. Its description names the
// entries (the first 50) so the model knows what it may look up.
func (k *Knowledge) Tool() swarm.Tool {
	var desc strings.Builder
	desc.WriteString("Look up reference knowledge: search it with a query, or read an entry by name, part by part. Entries:")
	for i, e := range k.Entries {
		if i == maxListed {
			fmt.Fprintf(&desc, " (and %d more)", len(k.Entries)-maxListed)
			break
		}
		fmt.Fprintf(&desc, " %s", e.Name)
		if e.Description != "" {
			fmt.Fprintf(&desc, " (%s)", e.Description)
		}
		desc.WriteString(";")
	}
	return swarm.NewTool(ToolLookup, strings.TrimSuffix(desc.String(), ";"), func(ctx context.Context, a lookupArgs) (lookupResult, error) {
		cs, err := k.Lookup(ctx, a.Query, a.Entry, a.Chunk, a.Limit)
		return lookupResult{Chunks: cs}, err
	})
}

// Lookup searches k for query (the best limit chunks, 0: 3), or, when
// entry is set, returns chunk n of that entry. OnUsed fires for each chunk
// returned.
func (k *Knowledge) Lookup(ctx context.Context, query, entry string, n, limit int) (_ []Chunk, err error) {
	ctx, end := startSpan(ctx, opSearch, "knowledge", entry)
	var out []Chunk
	defer func() { end(err, len(out)) }()
	if err := k.load(ctx); err != nil {
		return nil, err
	}
	switch {
	case entry != "":
		i := slices.IndexFunc(k.chunks, func(c chunk) bool { return c.entry == entry && c.n == n })
		if i < 0 {
			j := slices.IndexFunc(k.chunks, func(c chunk) bool { return c.entry == entry })
			if j < 0 {
				return nil, fmt.Errorf("no knowledge entry %q", entry)
			}
			return nil, fmt.Errorf("knowledge entry %q has chunks 0 to %d, not %d", entry, k.chunks[j].of-1, n)
		}
		c := k.chunks[i]
		out = []Chunk{{Entry: c.entry, Chunk: c.n, Chunks: c.of, Text: c.text}}
	case strings.TrimSpace(query) != "":
		ms, err := k.index.Search(ctx, query)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(ms, func(a, b registry.Match) int {
			if c := cmp.Compare(b.Score, a.Score); c != 0 {
				return c
			}
			return cmp.Compare(a.Doc, b.Doc)
		})
		limit = min(cmp.Or(limit, 3), 10)
		if limit < 1 {
			limit = 3
		}
		for _, m := range ms[:min(limit, len(ms))] {
			c := k.chunks[m.Doc]
			out = append(out, Chunk{Entry: c.entry, Chunk: c.n, Chunks: c.of, Text: c.text, Score: m.Score})
		}
	default:
		return nil, errors.New("give a query, or the name of an entry")
	}
	if k.OnUsed != nil {
		for _, c := range out {
			k.OnUsed(ctx, KnowledgeUse{RunID: swarm.RunID(ctx), Entry: c.Entry, Chunk: c.Chunk, Chunks: c.Chunks, Query: query})
		}
	}
	return out, nil
}
