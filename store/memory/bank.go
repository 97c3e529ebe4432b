package memory

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/swarmrt/swarm/store"
)

var _ store.Memories = (*Store)(nil)

// bank is a memory bank: its entries by key, the write keys it applied
// and its summary.
type bank struct {
	entries map[string]store.MemoryEntry
	writes  map[string]struct{}
	info    store.BankInfo
}

// bankMap holds a Store's memory banks; it is embedded in Store. One
// mutex guards them all: bank operations are short.
type bankMap struct {
	banksMu sync.Mutex
	banks   map[string]*bank
}

func cloneEntry(e store.MemoryEntry, vectors bool) store.MemoryEntry {
	e.Tags = slices.Clone(e.Tags)
	if vectors {
		e.Vector = slices.Clone(e.Vector)
	} else {
		e.Vector = nil
	}
	return e
}

// banksLocked checks the store and takes the banks' mutex.
func (s *Store) banksLocked(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	s.banksMu.Lock()
	return nil
}

// PutMemory implements store.Memories.
func (s *Store) PutMemory(ctx context.Context, name string, w store.MemoryWrite) (store.MemoryEntry, bool, error) {
	if err := store.CheckMemoryWrite(name, w); err != nil {
		return store.MemoryEntry{}, false, err
	}
	if err := s.banksLocked(ctx); err != nil {
		return store.MemoryEntry{}, false, err
	}
	defer s.banksMu.Unlock()
	b := s.banks[name]
	if b == nil {
		b = &bank{entries: map[string]store.MemoryEntry{}, writes: map[string]struct{}{}, info: store.BankInfo{Name: name}}
	}
	e := w.Entry
	if _, seen := b.writes[w.WriteKey]; seen && w.WriteKey != "" {
		cur, ok := b.entries[e.Key]
		if !ok {
			return store.MemoryEntry{}, false, nil
		}
		return cloneEntry(cur, true), false, nil
	}
	old, exists := b.entries[e.Key]
	entries, bytes, err := store.CheckBankLimits(name, w.Limits, b.info.Entries, b.info.Bytes, exists, old.Size(), e.Size())
	if err != nil {
		return store.MemoryEntry{}, false, err
	}
	if s.banks == nil {
		s.banks = map[string]*bank{}
	}
	s.banks[name] = b
	now := time.Now()
	b.info.Version++
	b.info.Entries, b.info.Bytes, b.info.UpdatedAt = entries, bytes, now
	e = cloneEntry(e, true)
	if len(e.Tags) == 0 {
		e.Tags = nil
	}
	if len(e.Vector) == 0 {
		e.Vector = nil
	}
	e.Version, e.CreatedAt, e.UpdatedAt = b.info.Version, now, now
	if exists {
		e.CreatedAt = old.CreatedAt
	}
	b.entries[e.Key] = e
	if w.WriteKey != "" {
		b.writes[w.WriteKey] = struct{}{}
	}
	return cloneEntry(e, true), true, nil
}

// GetMemory implements store.Memories.
func (s *Store) GetMemory(ctx context.Context, name, key string) (store.MemoryEntry, error) {
	if err := s.banksLocked(ctx); err != nil {
		return store.MemoryEntry{}, err
	}
	defer s.banksMu.Unlock()
	if b := s.banks[name]; b != nil {
		if e, ok := b.entries[key]; ok {
			return cloneEntry(e, true), nil
		}
	}
	return store.MemoryEntry{}, store.NoMemory(name, key)
}

// ListMemories implements store.Memories.
func (s *Store) ListMemories(ctx context.Context, name string, f store.MemoryFilter) ([]store.MemoryEntry, error) {
	if err := s.banksLocked(ctx); err != nil {
		return nil, err
	}
	defer s.banksMu.Unlock()
	out := []store.MemoryEntry{}
	b := s.banks[name]
	if b == nil {
		return out, nil
	}
	for _, e := range b.entries {
		if strings.HasPrefix(e.Key, f.Prefix) && e.Key > f.After && e.Version > f.Since {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b store.MemoryEntry) int { return strings.Compare(a.Key, b.Key) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	for i := range out {
		out[i] = cloneEntry(out[i], f.Vectors)
	}
	return out, nil
}

// DeleteMemory implements store.Memories.
func (s *Store) DeleteMemory(ctx context.Context, name, key string) error {
	if err := s.banksLocked(ctx); err != nil {
		return err
	}
	defer s.banksMu.Unlock()
	b := s.banks[name]
	if b == nil {
		return store.NoMemory(name, key)
	}
	e, ok := b.entries[key]
	if !ok {
		return store.NoMemory(name, key)
	}
	delete(b.entries, key)
	b.info.Version++
	b.info.Entries--
	b.info.Bytes -= e.Size()
	b.info.UpdatedAt = time.Now()
	return nil
}

// DeleteBank implements store.Memories.
func (s *Store) DeleteBank(ctx context.Context, name string) (int, error) {
	if err := s.banksLocked(ctx); err != nil {
		return 0, err
	}
	defer s.banksMu.Unlock()
	b := s.banks[name]
	if b == nil {
		return 0, nil
	}
	delete(s.banks, name)
	return len(b.entries), nil
}

// Bank implements store.Memories.
func (s *Store) Bank(ctx context.Context, name string) (store.BankInfo, error) {
	if err := s.banksLocked(ctx); err != nil {
		return store.BankInfo{}, err
	}
	defer s.banksMu.Unlock()
	if b := s.banks[name]; b != nil {
		return b.info, nil
	}
	return store.BankInfo{Name: name}, nil
}

// Banks implements store.Memories.
func (s *Store) Banks(ctx context.Context, prefix string) ([]store.BankInfo, error) {
	if err := s.banksLocked(ctx); err != nil {
		return nil, err
	}
	defer s.banksMu.Unlock()
	out := []store.BankInfo{}
	for name, b := range s.banks {
		if strings.HasPrefix(name, prefix) {
			out = append(out, b.info)
		}
	}
	slices.SortFunc(out, func(a, b store.BankInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
