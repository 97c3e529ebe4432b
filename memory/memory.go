package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/store"
)

// Memory is an agent's memory bank: where its entries are kept, how the
// bank is named, its limits and how it is searched. Its methods are the Go
// API; [Memory.Tools] offers them to a model. A Memory is safe for
// concurrent use and must not be copied after first use.
type Memory struct {
	// Store keeps the bank; it must implement [store.Memories] (the
	// memory, SQLite and PostgreSQL stores do). Runs' values are read
	// from it too, to fill the bank name's placeholders: give the
	// runtime's store.
	Store store.Store
	// Bank names the bank: a fixed name ("agent:support") or one with
	// placeholders ("user:{user}", "team:{root}"); see the package
	// documentation. After filling, it must be 1 to 256 letters, digits
	// and . _ : @ + = - ~.
	Bank string
	// Limits bound the bank; a write past them is refused (zero: no
	// limit).
	Limits store.BankLimits
	// Embedder, when set, embeds each written entry and every query, and
	// search fuses cosine similarity with BM25. Nil: BM25 only.
	Embedder Embedder
	// CheckWrite, when set, inspects every write before it is stored:
	// an error refuses it (a tool call returns the error to the model).
	// A guardrail on the agent's tool calls (guardrail.ToolCall) sees
	// memory_write calls too.
	CheckWrite func(ctx context.Context, bank string, e store.MemoryEntry) error
	// SearchLimit is the most hits a search returns when the caller asks
	// for none (0: 5).
	SearchLimit int

	cache indexCache
	runs  runValues
}

// ErrNoBank reports a bank name whose placeholders cannot be filled: a
// placeholder other than {run} or {root} outside a run, or a value the run
// was not started with.
var ErrNoBank = errors.New("memory: bank name cannot be filled")

func (m *Memory) memories() (store.Memories, error) {
	if m == nil || m.Store == nil {
		return nil, errors.New("memory: no store")
	}
	ms, ok := m.Store.(store.Memories)
	if !ok {
		return nil, fmt.Errorf("memory: store %T does not keep memory banks (store.Memories)", m.Store)
	}
	return ms, nil
}

// BankFor returns the name of the bank for a call in ctx: Bank with its
// placeholders filled from the run ctx executes in.
func (m *Memory) BankFor(ctx context.Context) (string, error) {
	name, err := m.fill(ctx, m.Bank)
	if err != nil {
		return "", err
	}
	if err := store.CheckBank(name); err != nil {
		return "", fmt.Errorf("memory bank %q filled as %q: %w", m.Bank, name, err)
	}
	return name, nil
}

// fill replaces the {placeholders} of tmpl.
func (m *Memory) fill(ctx context.Context, tmpl string) (string, error) {
	if !strings.Contains(tmpl, "{") {
		return tmpl, nil
	}
	var b strings.Builder
	rest := tmpl
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("memory bank %q: unclosed {", tmpl)
		}
		b.WriteString(rest[:i])
		name := rest[i+1 : i+j]
		v, err := m.value(ctx, name)
		if err != nil {
			return "", fmt.Errorf("memory bank %q: {%s}: %w", tmpl, name, err)
		}
		b.WriteString(v)
		rest = rest[i+j+1:]
	}
}

// value returns what placeholder name stands for in ctx's run.
func (m *Memory) value(ctx context.Context, name string) (string, error) {
	run := swarm.RunID(ctx)
	if run == "" {
		return "", fmt.Errorf("%w: not in a run", ErrNoBank)
	}
	if name == "run" {
		return run, nil
	}
	if m.Store == nil {
		return "", errors.New("memory: no store")
	}
	tree, err := m.runs.get(ctx, m.Store, run)
	if err != nil {
		return "", err
	}
	if name == "root" {
		return tree[len(tree)-1].id, nil
	}
	// A child run or a teammate inherits its parent's values.
	for _, sv := range tree {
		if v, ok := sv.values[name]; ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("%w: the run was not started with the value %q", ErrNoBank, name)
}

// maxDepth bounds the walk up a run tree.
const maxDepth = 64

// runValues caches what the started records of runs say (they never
// change), for each run the path up its tree to the root. The cache is
// keyed by the run's instance (see swarm.IdempotencyKey), not its id: a
// run deleted and started again with the same id is another run, whose
// values are read afresh, in every process sharing the store, without
// telling them. (A tree is deleted whole, so a new instance of a run also
// has new ancestors.)
type runValues struct {
	mu   sync.Mutex
	runs map[string][]startedValues
}

type startedValues struct {
	id     string
	values map[string]string
}

// maxCachedRuns bounds the cache of started records.
const maxCachedRuns = 4096

// get returns the started values of run (ctx's) and of its ancestors,
// run first.
func (c *runValues) get(ctx context.Context, st store.Store, run string) ([]startedValues, error) {
	// The idempotency key is "<run id>/<instance>/<step key>".
	key := strings.TrimSuffix(swarm.IdempotencyKey(ctx), swarm.StepKey(ctx))
	c.mu.Lock()
	tree, ok := c.runs[key]
	c.mu.Unlock()
	if ok && key != "" {
		return tree, nil
	}
	for id := run; id != ""; {
		if len(tree) == maxDepth {
			return nil, fmt.Errorf("%w: run tree deeper than %d", ErrNoBank, maxDepth)
		}
		sv, parent, err := readValues(ctx, st, id)
		if err != nil {
			return nil, err
		}
		tree, id = append(tree, sv), parent
	}
	if key == "" {
		return tree, nil
	}
	c.mu.Lock()
	if c.runs == nil || len(c.runs) >= maxCachedRuns {
		c.runs = map[string][]startedValues{}
	}
	c.runs[key] = tree
	c.mu.Unlock()
	return tree, nil
}

// readValues reads the values of run id and its parent from its started
// record.
func readValues(ctx context.Context, st store.Store, id string) (startedValues, string, error) {
	recs, err := st.Read(ctx, id, 0, 1)
	if err != nil {
		return startedValues{}, "", fmt.Errorf("memory: read run %s: %w", id, err)
	}
	if len(recs) == 0 || recs[0].Type != string(swarm.EventStarted) {
		return startedValues{}, "", fmt.Errorf("memory: run %s has no started record", id)
	}
	var ev swarm.Event
	if err := json.Unmarshal(recs[0].Data, &ev); err != nil {
		return startedValues{}, "", fmt.Errorf("memory: decode the started record of run %s: %w", id, err)
	}
	sv := startedValues{id: id, values: map[string]string{}}
	for k, v := range ev.Values {
		if s, ok := v.(string); ok {
			sv.values[k] = s
		} else {
			sv.values[k] = fmt.Sprint(v)
		}
	}
	return sv, ev.Parent, nil
}

// Put writes e to bank (replacing the entry of its key) and returns it as
// stored. In a tool call the write carries the call's idempotency key
// (with e.Key), so a call run again after a crash does not write twice: it
// returns the entry as it is. The entry is embedded first when the Memory has an
// Embedder, and checked by CheckWrite.
func (m *Memory) Put(ctx context.Context, bank string, e store.MemoryEntry) (_ store.MemoryEntry, err error) {
	ctx, end := startSpan(ctx, opUpdate, bank, e.Key)
	defer func() { end(err, -1) }()
	ms, err := m.memories()
	if err != nil {
		return store.MemoryEntry{}, err
	}
	if err := store.CheckMemoryWrite(bank, store.MemoryWrite{Entry: e}); err != nil {
		return store.MemoryEntry{}, err
	}
	if m.CheckWrite != nil {
		if err := m.CheckWrite(ctx, bank, e); err != nil {
			return store.MemoryEntry{}, fmt.Errorf("memory write to %s refused: %w", bank, err)
		}
	}
	if m.Embedder != nil && e.Vector == nil {
		vs, err := m.embed(ctx, []string{embedText(e)})
		if err != nil {
			return store.MemoryEntry{}, err
		}
		e.Vector = vs[0]
	}
	got, _, err := ms.PutMemory(ctx, bank, store.MemoryWrite{Entry: e, WriteKey: writeKey(ctx, e.Key), Limits: m.Limits})
	if err != nil {
		return store.MemoryEntry{}, err
	}
	return got, nil
}

// writeKey is the write key of a write of key in ctx: the tool call's
// idempotency key and the entry's key ("" outside a tool call). One call
// may write several entries, each once.
func writeKey(ctx context.Context, key string) string {
	k := swarm.IdempotencyKey(ctx)
	if k == "" {
		return ""
	}
	if len(k)+1+len(key) > 1024 {
		sum := sha256.Sum256([]byte(key))
		key = hex.EncodeToString(sum[:])
	}
	return k + "#" + key
}

// Get returns the entry of key in bank, or an error wrapping
// store.ErrNotFound.
func (m *Memory) Get(ctx context.Context, bank, key string) (_ store.MemoryEntry, err error) {
	ctx, end := startSpan(ctx, opSearch, bank, key)
	defer func() { end(err, -1) }()
	ms, err := m.memories()
	if err != nil {
		return store.MemoryEntry{}, err
	}
	return ms.GetMemory(ctx, bank, key)
}

// List returns bank's entries matching f, in key order.
func (m *Memory) List(ctx context.Context, bank string, f store.MemoryFilter) ([]store.MemoryEntry, error) {
	ms, err := m.memories()
	if err != nil {
		return nil, err
	}
	return ms.ListMemories(ctx, bank, f)
}

// Delete deletes the entry of key in bank (an error wrapping
// store.ErrNotFound if there is none).
func (m *Memory) Delete(ctx context.Context, bank, key string) (err error) {
	ctx, end := startSpan(ctx, opDelete, bank, key)
	defer func() { end(err, -1) }()
	ms, err := m.memories()
	if err != nil {
		return err
	}
	return ms.DeleteMemory(ctx, bank, key)
}
