package memory_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/swarmrt/swarm/memory"
	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/postgres"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
	"github.com/swarmrt/swarm/store/sqlite"
)

// benchText returns a deterministic sentence of 12 words drawn from a
// vocabulary of 5,000 with a Zipf-like skew, so that term frequencies look
// like text's.
func benchText(r *rand.Rand) string {
	z := rand.NewZipf(r, 1.1, 8, 4999)
	words := make([]string, 12)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", z.Uint64())
	}
	return strings.Join(words, " ")
}

// fillSQLite adds n entries to bank in one transaction, through SQL: the
// benchmark measures the operations after, not the filling.
func fillSQLite(b *testing.B, path, bank string, n int) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO memories (bank, key, text, tags, version, created_at, updated_at) VALUES (?, ?, ?, '[]', ?, 1, 1)`)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var bytes int64
	for i := range n {
		key, text := fmt.Sprintf("fill/%07d", i), benchText(r)
		bytes += int64(len(key) + len(text))
		if _, err := st.Exec(bank, key, text, i+1); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := tx.Exec(`INSERT INTO memory_banks (bank, version, entries, bytes, updated_at) VALUES (?, ?, ?, ?, 1)`, bank, n, n, bytes); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// fillPostgres adds n entries to bank with one statement.
func fillPostgres(b *testing.B, s *postgres.Store, bank string, n int) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([][]any, n)
	var bytes int64
	for i := range rows {
		key, text := fmt.Sprintf("fill/%07d", i), benchText(r)
		bytes += int64(len(key) + len(text))
		rows[i] = []any{bank, key, text, []string{}, int64(i + 1), int64(1), int64(1)}
	}
	if _, err := s.Pool().CopyFrom(ctx, pgx.Identifier{"swarm_memories"}, []string{"bank", "key", "text", "tags", "version", "created_at", "updated_at"},
		pgx.CopyFromRows(rows)); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO swarm_memory_banks (bank, version, entries, bytes, updated_at) VALUES ($1, $2, $2, $3, 1)`,
		bank, n, bytes); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE swarm_memories`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMemory measures, on SQLite and PostgreSQL, with a bank of 10,000
// and 100,000 entries: a write (a new entry, with a write key and limits,
// as memory_write makes it), a search of the bank as it is (its index
// cached by version), and a search right after a write (the index rebuilt
// from the store).
//
//	go test ./memory -run '^$' -bench Memory -benchtime 100x
func BenchmarkMemory(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("sqlite/%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.db")
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			fillSQLite(b, path, "user:bench", n)
			benchBank(b, s, n)
		})
		b.Run(fmt.Sprintf("postgres/%d", n), func(b *testing.B) {
			s, err := postgres.Open(context.Background(), pgtest.URL(b, "pool_max_conns=4"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			fillPostgres(b, s, "user:bench", n)
			benchBank(b, s, n)
		})
	}
}

func benchBank(b *testing.B, st store.Store, n int) {
	ctx := context.Background()
	mem := &memory.Memory{Store: st, Limits: store.BankLimits{MaxEntries: 10_000_000}}
	if info, err := st.(store.Memories).Bank(ctx, "user:bench"); err != nil || info.Entries != int64(n) {
		b.Fatalf("filled bank = %+v, %v", info, err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	writes := 0
	write := func() {
		writes++
		e := store.MemoryEntry{Key: fmt.Sprintf("bench/%d", writes), Text: benchText(r)}
		if _, _, err := st.(store.Memories).PutMemory(ctx, "user:bench", store.MemoryWrite{Entry: e, WriteKey: fmt.Sprintf("run/t%d/tool/c", writes), Limits: mem.Limits}); err != nil {
			b.Fatal(err)
		}
	}
	query := func() string { return fmt.Sprintf("w%d w%d w%d", 8+r.IntN(40), 8+r.IntN(400), 8+r.IntN(4000)) }
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			write()
		}
	})
	b.Run("search", func(b *testing.B) {
		if _, err := mem.Search(ctx, "user:bench", query(), 5); err != nil { // builds the index
			b.Fatal(err)
		}
		for b.Loop() {
			hits, err := mem.Search(ctx, "user:bench", query(), 5)
			if err != nil || len(hits) == 0 {
				b.Fatalf("search: %d hits, %v", len(hits), err)
			}
		}
	})
	b.Run("search_after_write", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			write()
			b.StartTimer()
			if _, err := mem.Search(ctx, "user:bench", query(), 5); err != nil {
				b.Fatal(err)
			}
		}
	})
}
