package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

var _ store.Memories = (*Store)(nil)

// memorySchema is schema version 8: agents' memory banks. memory_banks
// holds each bank's summary (its version grows with every change, so a
// reader can cache an index of the bank); memories its entries (tags a
// JSON array, vector little-endian float32s or NULL); memory_writes the
// write keys a bank applied, so a write retried after a crash is not
// applied twice.
var memorySchema = []string{
	`CREATE TABLE IF NOT EXISTS memory_banks (
		bank       TEXT PRIMARY KEY,
		version    INTEGER NOT NULL,
		entries    INTEGER NOT NULL,
		bytes      INTEGER NOT NULL,
		updated_at INTEGER NOT NULL
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS memories (
		bank       TEXT NOT NULL,
		key        TEXT NOT NULL,
		text       TEXT NOT NULL,
		tags       TEXT NOT NULL DEFAULT '[]',
		vector     BLOB,
		version    INTEGER NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		UNIQUE (bank, key)
	)`,
	`CREATE INDEX IF NOT EXISTS memories_version ON memories (bank, version)`,
	`CREATE TABLE IF NOT EXISTS memory_writes (
		bank      TEXT NOT NULL,
		write_key TEXT NOT NULL,
		PRIMARY KEY (bank, write_key)
	) WITHOUT ROWID`,
}

const memoryCols = `key, text, tags, vector, version, created_at, updated_at`

// memoryStmts are the writer's statements for memory banks.
type memoryStmts struct {
	bank, entry, seen, addWrite, upsert, setBank *sql.Stmt
}

// memoryStmts prepares the memory statements on first use.
func (w *writer) memoryStmts() (*memoryStmts, error) {
	if w.memory != nil {
		return w.memory, nil
	}
	m := &memoryStmts{}
	for _, p := range []struct {
		s **sql.Stmt
		q string
	}{
		{&m.bank, `SELECT version, entries, bytes FROM memory_banks WHERE bank = ?`},
		{&m.entry, `SELECT ` + memoryCols + ` FROM memories WHERE bank = ? AND key = ?`},
		{&m.seen, `SELECT 1 FROM memory_writes WHERE bank = ? AND write_key = ?`},
		{&m.addWrite, `INSERT INTO memory_writes (bank, write_key) VALUES (?, ?)`},
		{&m.upsert, `INSERT INTO memories (bank, key, text, tags, vector, version, created_at, updated_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
			ON CONFLICT (bank, key) DO UPDATE SET text = ?3, tags = ?4, vector = ?5, version = ?6, updated_at = ?7`},
		{&m.setBank, `INSERT INTO memory_banks (bank, version, entries, bytes, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
			ON CONFLICT (bank) DO UPDATE SET version = ?2, entries = ?3, bytes = ?4, updated_at = ?5`},
	} {
		st, err := w.conn.PrepareContext(context.Background(), p.q)
		if err != nil {
			return nil, fmt.Errorf("prepare %q: %w", p.q, err)
		}
		*p.s = st
		w.all = append(w.all, st)
	}
	w.memory = m
	return m, nil
}

func scanMemory(sc scanner) (store.MemoryEntry, error) {
	var (
		e            store.MemoryEntry
		tags         string
		vec          []byte
		created, upd int64
	)
	if err := sc.Scan(&e.Key, &e.Text, &tags, &vec, &e.Version, &created, &upd); err != nil {
		return store.MemoryEntry{}, err
	}
	if err := json.Unmarshal([]byte(tags), &e.Tags); err != nil {
		return store.MemoryEntry{}, fmt.Errorf("memory %q: decode tags: %w", e.Key, err)
	}
	if len(e.Tags) == 0 {
		e.Tags = nil
	}
	v, err := store.DecodeVector(vec)
	if err != nil {
		return store.MemoryEntry{}, fmt.Errorf("memory %q: %w", e.Key, err)
	}
	e.Vector, e.CreatedAt, e.UpdatedAt = v, sqlval.FromNanos(created), sqlval.FromNanos(upd)
	return e, nil
}

// memoryWrite runs fn with the memory statements in one write request
// (one transaction).
func (s *Store) memoryWrite(ctx context.Context, fn func(w *writer, st *memoryStmts) error) error {
	return s.write(ctx, func(w *writer) error {
		st, err := w.memoryStmts()
		if err != nil {
			return err
		}
		return fn(w, st)
	})
}

// readBank reads bank's version and counts in the writer's transaction
// (zeros for a new bank).
func (st *memoryStmts) readBank(bank string) (version, entries, bytes int64, err error) {
	err = st.bank.QueryRow(bank).Scan(&version, &entries, &bytes)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return
}

// PutMemory implements store.Memories: the checks and the changes are one
// write request, hence one transaction, and writes are serialized across
// processes.
func (s *Store) PutMemory(ctx context.Context, bank string, mw store.MemoryWrite) (store.MemoryEntry, bool, error) {
	if err := store.CheckMemoryWrite(bank, mw); err != nil {
		return store.MemoryEntry{}, false, err
	}
	e := mw.Entry
	tags, err := json.Marshal(e.Tags)
	if err != nil {
		return store.MemoryEntry{}, false, err
	}
	if e.Tags == nil {
		tags = []byte("[]")
	}
	var (
		out     store.MemoryEntry
		applied bool
	)
	err = s.memoryWrite(ctx, func(w *writer, st *memoryStmts) error {
		cur, err := scanMemory(st.entry.QueryRow(bank, e.Key))
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if mw.WriteKey != "" {
			var one int
			err := st.seen.QueryRow(bank, mw.WriteKey).Scan(&one)
			if err == nil {
				out = cur
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		version, entries, bytes, err := st.readBank(bank)
		if err != nil {
			return err
		}
		entries, bytes, err = store.CheckBankLimits(bank, mw.Limits, entries, bytes, exists, cur.Size(), e.Size())
		if err != nil {
			return err
		}
		now := sqlval.Nanos(w.now)
		version++
		if _, err := st.upsert.Exec(bank, e.Key, e.Text, string(tags), store.EncodeVector(e.Vector), version, now); err != nil {
			return err
		}
		if _, err := st.setBank.Exec(bank, version, entries, bytes, now); err != nil {
			return err
		}
		if mw.WriteKey != "" {
			if _, err := st.addWrite.Exec(bank, mw.WriteKey); err != nil {
				return err
			}
		}
		created := now
		if exists {
			created = sqlval.Nanos(cur.CreatedAt)
		}
		out = store.MemoryEntry{Key: e.Key, Text: e.Text, Tags: append([]string(nil), e.Tags...), Version: version,
			CreatedAt: sqlval.FromNanos(created), UpdatedAt: sqlval.FromNanos(now)}
		if len(e.Vector) > 0 {
			out.Vector = append([]float32(nil), e.Vector...)
		}
		if len(out.Tags) == 0 {
			out.Tags = nil
		}
		applied = true
		return nil
	})
	if err != nil {
		return store.MemoryEntry{}, false, fmt.Errorf("write memory %q to bank %q: %w", e.Key, bank, err)
	}
	return out, applied, nil
}

// GetMemory implements store.Memories.
func (s *Store) GetMemory(ctx context.Context, bank, key string) (store.MemoryEntry, error) {
	if err := s.checkOpen(); err != nil {
		return store.MemoryEntry{}, err
	}
	e, err := scanMemory(s.rdb.QueryRowContext(ctx, `SELECT `+memoryCols+` FROM memories WHERE bank = ? AND key = ?`, bank, key))
	if errors.Is(err, sql.ErrNoRows) {
		return store.MemoryEntry{}, store.NoMemory(bank, key)
	}
	if err != nil {
		return store.MemoryEntry{}, fmt.Errorf("read memory %q of bank %q: %w", key, bank, err)
	}
	return e, nil
}

// ListMemories implements store.Memories.
func (s *Store) ListMemories(ctx context.Context, bank string, f store.MemoryFilter) ([]store.MemoryEntry, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	cols := memoryCols
	if !f.Vectors {
		cols = strings.Replace(cols, "vector", "NULL", 1)
	}
	q := `SELECT ` + cols + ` FROM memories WHERE bank = ? AND key > ?`
	args := []any{bank, f.After}
	if f.Since > 0 {
		q += ` AND version > ?`
		args = append(args, f.Since)
	}
	if f.Prefix != "" {
		// A range on the key, which the (bank, key) index serves;
		// substr keeps the comparison exact for any prefix.
		q += ` AND substr(key, 1, length(?)) = ?`
		args = append(args, f.Prefix, f.Prefix)
	}
	q += ` ORDER BY key`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("memories of bank %q: %w", bank, err)
	}
	defer rows.Close()
	out := []store.MemoryEntry{}
	for rows.Next() {
		e, err := scanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("memories of bank %q: %w", bank, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memories of bank %q: %w", bank, err)
	}
	return out, nil
}

// DeleteMemory implements store.Memories.
func (s *Store) DeleteMemory(ctx context.Context, bank, key string) error {
	err := s.memoryWrite(ctx, func(w *writer, st *memoryStmts) error {
		cur, err := scanMemory(st.entry.QueryRow(bank, key))
		if errors.Is(err, sql.ErrNoRows) {
			return store.NoMemory(bank, key)
		}
		if err != nil {
			return err
		}
		version, entries, bytes, err := st.readBank(bank)
		if err != nil {
			return err
		}
		if _, err := w.conn.ExecContext(context.Background(), `DELETE FROM memories WHERE bank = ? AND key = ?`, bank, key); err != nil {
			return err
		}
		_, err = st.setBank.Exec(bank, version+1, entries-1, bytes-cur.Size(), sqlval.Nanos(w.now))
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete memory %q of bank %q: %w", key, bank, err)
	}
	return err
}

// DeleteBank implements store.Memories.
func (s *Store) DeleteBank(ctx context.Context, bank string) (int, error) {
	var n int64
	err := s.write(ctx, func(w *writer) error {
		res, err := w.conn.ExecContext(context.Background(), `DELETE FROM memories WHERE bank = ?`, bank)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		for _, q := range []string{`DELETE FROM memory_writes WHERE bank = ?`, `DELETE FROM memory_banks WHERE bank = ?`} {
			if _, err := w.conn.ExecContext(context.Background(), q, bank); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete memory bank %q: %w", bank, err)
	}
	return int(n), nil
}

const bankCols = `bank, entries, bytes, version, updated_at`

func scanBank(sc scanner) (store.BankInfo, error) {
	var (
		b   store.BankInfo
		upd int64
	)
	if err := sc.Scan(&b.Name, &b.Entries, &b.Bytes, &b.Version, &upd); err != nil {
		return store.BankInfo{}, err
	}
	b.UpdatedAt = sqlval.FromNanos(upd)
	return b, nil
}

// Bank implements store.Memories.
func (s *Store) Bank(ctx context.Context, bank string) (store.BankInfo, error) {
	if err := s.checkOpen(); err != nil {
		return store.BankInfo{}, err
	}
	b, err := scanBank(s.rdb.QueryRowContext(ctx, `SELECT `+bankCols+` FROM memory_banks WHERE bank = ?`, bank))
	if errors.Is(err, sql.ErrNoRows) {
		return store.BankInfo{Name: bank}, nil
	}
	if err != nil {
		return store.BankInfo{}, fmt.Errorf("memory bank %q: %w", bank, err)
	}
	return b, nil
}

// Banks implements store.Memories.
func (s *Store) Banks(ctx context.Context, prefix string) ([]store.BankInfo, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+bankCols+` FROM memory_banks
		WHERE substr(bank, 1, length(?1)) = ?1 ORDER BY bank`, prefix)
	if err != nil {
		return nil, fmt.Errorf("memory banks: %w", err)
	}
	defer rows.Close()
	out := []store.BankInfo{}
	for rows.Next() {
		b, err := scanBank(rows)
		if err != nil {
			return nil, fmt.Errorf("memory banks: %w", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory banks: %w", err)
	}
	return out, nil
}
