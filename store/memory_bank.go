package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// MemoryEntry is one entry of a memory bank: what an agent remembers
// across runs (see package memory). A bank holds at most one entry per
// Key; writing a Key again replaces its entry.
type MemoryEntry struct {
	// Key names the entry within its bank (1 byte to 1 KiB).
	Key string `json:"key"`
	// Text is what is remembered (at most MaxMemoryBytes).
	Text string `json:"text"`
	// Tags are optional labels (at most 32, each at most 1 KiB).
	Tags []string `json:"tags,omitempty"`
	// Vector is the text's embedding, if one was made (at most
	// MaxMemoryDims finite numbers); ListMemories returns it only when
	// asked (MemoryFilter.Vectors).
	Vector []float32 `json:"vector,omitempty"`
	// Version is the bank's version after the write that made the entry
	// as it is, set by the store.
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Size is what e counts against its bank's byte limit: the bytes of its
// key, text and tags (vectors are not counted).
func (e MemoryEntry) Size() int64 {
	n := len(e.Key) + len(e.Text)
	for _, t := range e.Tags {
		n += len(t)
	}
	return int64(n)
}

// Bounds of memory entries and bank names.
const (
	// MaxMemoryBytes bounds an entry's Text.
	MaxMemoryBytes = 64 << 10
	// MaxMemoryDims bounds an entry's Vector.
	MaxMemoryDims = 8192
	// maxBankName bounds a bank's name.
	maxBankName = 256
	// maxMemoryTags bounds an entry's Tags.
	maxMemoryTags = 32
)

// BankLimits bound a bank; a write that would take the bank past one
// is refused with ErrTooLarge. Zero fields mean no limit.
type BankLimits struct {
	// MaxEntries is the most entries the bank may hold.
	MaxEntries int64 `json:"max_entries,omitempty"`
	// MaxBytes is the most bytes (see MemoryEntry.Size) the bank's
	// entries may hold together.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// MemoryWrite is a write of one entry to a bank.
type MemoryWrite struct {
	// Entry is written (its Version and times are set by the store).
	Entry MemoryEntry
	// WriteKey makes the write idempotent: a bank remembers the write
	// keys of the writes it applied, and a write whose key it has seen
	// changes nothing, even if the entry was changed or deleted since.
	// A tool passes its call's idempotency key, so that a call run again
	// after a crash does not write twice. Empty: no deduplication.
	WriteKey string
	// Limits bound the bank after the write.
	Limits BankLimits
}

// MemoryFilter selects entries for ListMemories. Zero fields match
// everything.
type MemoryFilter struct {
	// Prefix selects the entries whose key starts with it.
	Prefix string
	// After selects the entries whose key sorts after it: pass the last
	// key of a page for the next page.
	After string
	// Limit caps the entries returned (<= 0: no cap).
	Limit int
	// Since selects the entries written after the bank's version Since
	// (Version > Since): what changed since a reader last looked,
	// deletions aside (a reader tells those by the bank's count).
	Since int64
	// Vectors asks for the entries' vectors too.
	Vectors bool
}

// BankInfo summarises a memory bank.
type BankInfo struct {
	Name string `json:"name"`
	// Entries and Bytes are what the bank holds now.
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// Version grows by one with every write or deletion in the bank, so
	// that a reader can tell whether the bank changed (0: never written).
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Memories is implemented by stores that keep agents' memory banks. It is
// optional: memory needs it; plain runs do not. A bank is named by its
// user (package memory names them by scope: "agent:support",
// "user:alice"); its entries are independent of every other bank's, and
// of runs: deleting a run leaves the banks it wrote.
type Memories interface {
	// PutMemory writes w.Entry to bank, replacing the entry of that key,
	// atomically with the bank's version, counts and write keys: of any
	// number of concurrent writes, from any number of processes, each
	// is applied whole or not at all, and the bank's limits hold after
	// every one. It returns the entry as stored and whether the write
	// was applied: a write whose WriteKey the bank has seen returns the
	// entry of that key as it is now (zero if it is gone) and false. Bad
	// input (see CheckMemoryWrite) and a write past the limits
	// (ErrTooLarge) change nothing.
	PutMemory(ctx context.Context, bank string, w MemoryWrite) (MemoryEntry, bool, error)

	// GetMemory returns the entry of key in bank, with its vector, or
	// ErrNotFound.
	GetMemory(ctx context.Context, bank, key string) (MemoryEntry, error)

	// ListMemories returns bank's entries matching f in key order (none
	// for an unknown bank).
	ListMemories(ctx context.Context, bank string, f MemoryFilter) ([]MemoryEntry, error)

	// DeleteMemory deletes the entry of key in bank, or gives
	// ErrNotFound. The bank's write keys stay, so a write applied before
	// is not applied again.
	DeleteMemory(ctx context.Context, bank, key string) error

	// DeleteBank deletes bank: its entries, write keys and summary, and
	// returns how many entries it held (0 for an unknown bank).
	DeleteBank(ctx context.Context, bank string) (int, error)

	// Bank returns bank's summary (only its name for an unknown bank).
	Bank(ctx context.Context, bank string) (BankInfo, error)

	// Banks returns the summaries of the banks whose name starts with
	// prefix, by name.
	Banks(ctx context.Context, prefix string) ([]BankInfo, error)
}

// CheckBank reports an error if name is not a bank name: 1 to 256 bytes
// of letters, digits and the characters . _ : @ + = - ~ (the characters
// of the run ids the runtime makes: a teammate's holds a ~).
func CheckBank(name string) error {
	if name == "" {
		return fmt.Errorf("memory bank: empty name")
	}
	if len(name) > maxBankName {
		return fmt.Errorf("memory bank %q...: name is %d bytes, the limit is %d: %w", name[:32], len(name), maxBankName, ErrTooLarge)
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.' || c == '_' || c == ':' || c == '@' || c == '+' || c == '=' || c == '-' || c == '~':
		default:
			return fmt.Errorf("memory bank %q: character %q is not allowed (letters, digits and . _ : @ + = - ~ are)", name, c)
		}
	}
	return nil
}

// CheckMemoryKey reports an error if key is not an entry key: 1 byte to
// 1 KiB of valid UTF-8 without control characters.
func CheckMemoryKey(bank, key string) error {
	switch {
	case key == "":
		return fmt.Errorf("memory bank %q: empty key", bank)
	case len(key) > maxMailHeaderBytes:
		return fmt.Errorf("memory bank %q: key is %d bytes, the limit is %d: %w", bank, len(key), maxMailHeaderBytes, ErrTooLarge)
	case !utf8.ValidString(key):
		return fmt.Errorf("memory bank %q: key is not valid UTF-8", bank)
	}
	for _, c := range key {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("memory bank %q: key %q holds a control character", bank, key)
		}
	}
	return nil
}

// CheckMemoryWrite reports an error if writing w to bank is bad input,
// before anything is written: a bad bank name or key, text over
// MaxMemoryBytes, a tag or write key over 1 KiB, more than 32 tags, a
// vector over MaxMemoryDims or with a number that is not finite, negative
// limits. Stores call it first in PutMemory.
func CheckMemoryWrite(bank string, w MemoryWrite) error {
	if err := CheckBank(bank); err != nil {
		return err
	}
	e := w.Entry
	if err := CheckMemoryKey(bank, e.Key); err != nil {
		return err
	}
	if len(e.Text) > MaxMemoryBytes {
		return fmt.Errorf("memory bank %q: entry %q is %d bytes, the limit is %d: %w", bank, e.Key, len(e.Text), MaxMemoryBytes, ErrTooLarge)
	}
	if !utf8.ValidString(e.Text) || strings.IndexByte(e.Text, 0) >= 0 {
		return fmt.Errorf("memory bank %q: entry %q is not valid UTF-8 or holds a NUL byte", bank, e.Key)
	}
	if len(e.Tags) > maxMemoryTags {
		return fmt.Errorf("memory bank %q: entry %q has %d tags, the limit is %d: %w", bank, e.Key, len(e.Tags), maxMemoryTags, ErrTooLarge)
	}
	for _, t := range e.Tags {
		if len(t) > maxMailHeaderBytes || !utf8.ValidString(t) || strings.IndexByte(t, 0) >= 0 {
			return fmt.Errorf("memory bank %q: entry %q has a tag over %d bytes or not UTF-8: %w", bank, e.Key, maxMailHeaderBytes, ErrTooLarge)
		}
	}
	if len(w.WriteKey) > maxMailHeaderBytes {
		return fmt.Errorf("memory bank %q: write key is %d bytes, the limit is %d: %w", bank, len(w.WriteKey), maxMailHeaderBytes, ErrTooLarge)
	}
	if len(e.Vector) > MaxMemoryDims {
		return fmt.Errorf("memory bank %q: entry %q has %d dimensions, the limit is %d: %w", bank, e.Key, len(e.Vector), MaxMemoryDims, ErrTooLarge)
	}
	for _, x := range e.Vector {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("memory bank %q: entry %q has a vector component that is not finite", bank, e.Key)
		}
	}
	if w.Limits.MaxEntries < 0 || w.Limits.MaxBytes < 0 {
		return fmt.Errorf("memory bank %q: negative limits", bank)
	}
	return nil
}

// CheckBankLimits decides a write to a bank that holds entries and bytes
// now, of an entry of size size replacing one of size old (exists: the key
// has an entry): nil if the bank stays within lim, else ErrTooLarge.
// It returns the bank's entries and bytes after the write.
func CheckBankLimits(bank string, lim BankLimits, entries, bytes int64, exists bool, old, size int64) (int64, int64, error) {
	if !exists {
		entries++
		old = 0
	}
	bytes += size - old
	if lim.MaxEntries > 0 && entries > lim.MaxEntries {
		return 0, 0, fmt.Errorf("memory bank %q is full: %d entries, the limit is %d: %w", bank, entries-1, lim.MaxEntries, ErrTooLarge)
	}
	if lim.MaxBytes > 0 && bytes > lim.MaxBytes && size > old {
		return 0, 0, fmt.Errorf("memory bank %q is full: the write takes it to %d bytes, the limit is %d: %w", bank, bytes, lim.MaxBytes, ErrTooLarge)
	}
	return entries, bytes, nil
}

// NoMemory is the error of a lookup of key that bank does not have; it
// matches ErrNotFound (errors.Is).
func NoMemory(bank, key string) error {
	return noMemory{fmt.Sprintf("memory bank %q has no entry %q", bank, key)}
}

// noMemory is ErrNotFound said of a memory entry, not a run.
type noMemory struct{ msg string }

func (e noMemory) Error() string        { return e.msg }
func (e noMemory) Is(target error) bool { return target == ErrNotFound }

// EncodeVector encodes v as little-endian float32s, the form SQL stores
// keep vectors in (nil for an empty v).
func EncodeVector(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector decodes what EncodeVector encoded.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("decode vector: %d bytes is not a multiple of 4", len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
