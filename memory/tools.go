package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
)

// The names of the tools a Memory offers.
const (
	ToolRead   = "memory_read"
	ToolWrite  = "memory_write"
	ToolSearch = "memory_search"
)

// listPage is how many entries memory_read without a key lists.
const listPage = 50

// listTextMax bounds the text of each entry memory_read lists.
const listTextMax = 200

type readArgs struct {
	Key string `json:"key,omitempty" jsonschema:"the key of the entry to read; leave out to list the bank's entries"`
	// After pages a listing.
	After string `json:"after,omitempty" jsonschema:"when listing: list the entries after this key (the last key of the previous page)"`
}

type writeArgs struct {
	Key  string   `json:"key" jsonschema:"a short stable name for what is remembered, such as preferences/seat; writing a key again replaces its entry"`
	Text string   `json:"text" jsonschema:"what to remember"`
	Tags []string `json:"tags,omitempty" jsonschema:"optional labels that help find the entry later"`
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"what to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"the most entries to return (default 5, at most 100)"`
}

// readResult is memory_read's answer.
type readResult struct {
	Bank    string              `json:"bank"`
	Entry   *store.MemoryEntry  `json:"entry,omitempty"`
	Entries []store.MemoryEntry `json:"entries,omitempty"`
	More    bool                `json:"more,omitempty"`
}

// writeResult is memory_write's answer.
type writeResult struct {
	Bank    string `json:"bank"`
	Key     string `json:"key"`
	Version int64  `json:"version"`
}

// searchResult is memory_search's answer.
type searchResult struct {
	Bank string `json:"bank"`
	Hits []Hit  `json:"hits"`
}

// Tools returns the tools memory_read, memory_write and memory_search over
// the bank [Memory.BankFor] names at each call. Give them to an agent
// (append them to its Tools); an agent gets the tools of one Memory.
func (m *Memory) Tools() []swarm.Tool {
	return []swarm.Tool{
		swarm.NewTool(ToolRead, "Read what you remember from earlier conversations: the entry of a key, or, without a key, a list of the entries.",
			func(ctx context.Context, a readArgs) (readResult, error) {
				bank, err := m.BankFor(ctx)
				if err != nil {
					return readResult{}, err
				}
				if a.Key != "" {
					e, err := m.Get(ctx, bank, a.Key)
					if errors.Is(err, store.ErrNotFound) {
						return readResult{}, fmt.Errorf("nothing is remembered under the key %q", a.Key)
					}
					if err != nil {
						return readResult{}, err
					}
					e.Vector = nil
					return readResult{Bank: bank, Entry: &e}, nil
				}
				es, err := m.List(ctx, bank, store.MemoryFilter{After: a.After, Limit: listPage + 1})
				if err != nil {
					return readResult{}, err
				}
				out := readResult{Bank: bank, Entries: es}
				if len(es) > listPage {
					out.Entries, out.More = es[:listPage], true
				}
				for i := range out.Entries {
					if t := out.Entries[i].Text; len(t) > listTextMax {
						out.Entries[i].Text = truncate(t, listTextMax) + "..."
					}
				}
				return out, nil
			}),
		swarm.NewTool(ToolWrite, "Remember something for later conversations, under a key. Writing a key again replaces what it held.",
			func(ctx context.Context, a writeArgs) (writeResult, error) {
				bank, err := m.BankFor(ctx)
				if err != nil {
					return writeResult{}, err
				}
				e, err := m.Put(ctx, bank, store.MemoryEntry{Key: a.Key, Text: a.Text, Tags: a.Tags})
				if err != nil {
					return writeResult{}, err
				}
				return writeResult{Bank: bank, Key: a.Key, Version: e.Version}, nil
			}),
		swarm.NewTool(ToolSearch, "Search what you remember from earlier conversations; returns the most relevant entries, best first.",
			func(ctx context.Context, a searchArgs) (searchResult, error) {
				bank, err := m.BankFor(ctx)
				if err != nil {
					return searchResult{}, err
				}
				hits, err := m.Search(ctx, bank, a.Query, a.Limit)
				if err != nil {
					return searchResult{}, err
				}
				return searchResult{Bank: bank, Hits: hits}, nil
			}),
	}
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
