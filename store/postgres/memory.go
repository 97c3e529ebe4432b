package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/internal/sqlval"
)

var _ store.Memories = (*Store)(nil)

const (
	memoryCols = `key, text, tags, vector, version, created_at, updated_at`
	bankCols   = `bank, entries, bytes, version, updated_at`
	// lockBankSQL makes bank $1's row if it has none and locks it: the
	// writes of a bank wait for each other here.
	lockBankSQL = `INSERT INTO swarm_memory_banks AS b (bank, version, entries, bytes, updated_at) VALUES ($1, 0, 0, 0, 0)
		ON CONFLICT (bank) DO UPDATE SET bank = b.bank
		RETURNING version, entries, bytes`
	upsertMemorySQL = `WITH t AS (SELECT ` + nowNS + ` AS now)
		INSERT INTO swarm_memories (bank, key, text, tags, vector, version, created_at, updated_at)
		SELECT $1, $2, $3, $4, $5, $6, t.now, t.now FROM t
		ON CONFLICT (bank, key) DO UPDATE SET text = $3, tags = $4, vector = $5, version = $6, updated_at = excluded.updated_at
		RETURNING ` + memoryCols
	setBankSQL = `UPDATE swarm_memory_banks SET version = $2, entries = $3, bytes = $4, updated_at = ` + nowNS + ` WHERE bank = $1`
)

func scanMemory(row rowScanner) (store.MemoryEntry, error) {
	var (
		e            store.MemoryEntry
		vec          []byte
		created, upd int64
	)
	if err := row.Scan(&e.Key, &e.Text, &e.Tags, &vec, &e.Version, &created, &upd); err != nil {
		return store.MemoryEntry{}, err
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

func scanBank(row rowScanner) (store.BankInfo, error) {
	var (
		b   store.BankInfo
		upd int64
	)
	if err := row.Scan(&b.Name, &b.Entries, &b.Bytes, &b.Version, &upd); err != nil {
		return store.BankInfo{}, err
	}
	b.UpdatedAt = sqlval.FromNanos(upd)
	return b, nil
}

// PutMemory implements store.Memories in one transaction that first locks
// the bank's row, so that a bank's writes, from any node, are serialized.
// A write with a write key is tried again when its connection broke: the
// key makes that safe.
func (s *Store) PutMemory(ctx context.Context, bank string, w store.MemoryWrite) (store.MemoryEntry, bool, error) {
	if err := s.check(); err != nil {
		return store.MemoryEntry{}, false, err
	}
	if err := store.CheckMemoryWrite(bank, w); err != nil {
		return store.MemoryEntry{}, false, err
	}
	type result struct {
		e       store.MemoryEntry
		applied bool
	}
	put := func() (result, error) {
		var r result
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			e, applied, err := putMemory(ctx, tx, bank, w)
			r = result{e, applied}
			return err
		})
		return r, err
	}
	var (
		r   result
		err error
	)
	if w.WriteKey != "" {
		r, err = again(ctx, put)
	} else {
		r, err = put()
	}
	if err != nil {
		if errors.Is(err, store.ErrTooLarge) {
			return store.MemoryEntry{}, false, err
		}
		return store.MemoryEntry{}, false, s.wrap(fmt.Sprintf("write memory %q to bank %q", w.Entry.Key, bank), err)
	}
	return r.e, r.applied, nil
}

func putMemory(ctx context.Context, tx pgx.Tx, bank string, w store.MemoryWrite) (store.MemoryEntry, bool, error) {
	var version, entries, bytes int64
	if err := tx.QueryRow(ctx, lockBankSQL, bank).Scan(&version, &entries, &bytes); err != nil {
		return store.MemoryEntry{}, false, err
	}
	e := w.Entry
	cur, err := scanMemory(tx.QueryRow(ctx, `SELECT `+memoryCols+` FROM swarm_memories WHERE bank = $1 AND key = $2`, bank, e.Key))
	exists := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return store.MemoryEntry{}, false, err
	}
	if w.WriteKey != "" {
		tag, err := tx.Exec(ctx, `INSERT INTO swarm_memory_writes (bank, write_key) VALUES ($1, $2) ON CONFLICT DO NOTHING`, bank, w.WriteKey)
		if err != nil {
			return store.MemoryEntry{}, false, err
		}
		if tag.RowsAffected() == 0 {
			return cur, false, nil
		}
	}
	entries, bytes, err = store.CheckBankLimits(bank, w.Limits, entries, bytes, exists, cur.Size(), e.Size())
	if err != nil {
		return store.MemoryEntry{}, false, err
	}
	version++
	tags := e.Tags
	if tags == nil {
		tags = []string{}
	}
	out, err := scanMemory(tx.QueryRow(ctx, upsertMemorySQL, bank, e.Key, e.Text, tags, store.EncodeVector(e.Vector), version))
	if err != nil {
		return store.MemoryEntry{}, false, err
	}
	if _, err := tx.Exec(ctx, setBankSQL, bank, version, entries, bytes); err != nil {
		return store.MemoryEntry{}, false, err
	}
	return out, true, nil
}

// GetMemory implements store.Memories.
func (s *Store) GetMemory(ctx context.Context, bank, key string) (store.MemoryEntry, error) {
	if err := s.check(); err != nil {
		return store.MemoryEntry{}, err
	}
	e, err := scanMemory(s.pool.QueryRow(ctx, `SELECT `+memoryCols+` FROM swarm_memories WHERE bank = $1 AND key = $2`, bank, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.MemoryEntry{}, store.NoMemory(bank, key)
	}
	if err != nil {
		return store.MemoryEntry{}, s.wrap(fmt.Sprintf("read memory %q of bank %q", key, bank), err)
	}
	return e, nil
}

// ListMemories implements store.Memories.
func (s *Store) ListMemories(ctx context.Context, bank string, f store.MemoryFilter) ([]store.MemoryEntry, error) {
	cols := `key, text, tags, NULL::bytea, version, created_at, updated_at`
	if f.Vectors {
		cols = memoryCols
	}
	q := `SELECT ` + cols + ` FROM swarm_memories WHERE bank = $1 AND key > $2 AND starts_with(key, $3) AND version > $4 ORDER BY key`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	return queryAll(ctx, s, "memories of bank "+bank, scanMemory, q, bank, f.After, f.Prefix, f.Since)
}

// DeleteMemory implements store.Memories.
func (s *Store) DeleteMemory(ctx context.Context, bank, key string) error {
	if err := s.check(); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var version, entries, bytes int64
		if err := tx.QueryRow(ctx, lockBankSQL, bank).Scan(&version, &entries, &bytes); err != nil {
			return err
		}
		var size int64
		err := tx.QueryRow(ctx, `DELETE FROM swarm_memories WHERE bank = $1 AND key = $2
			RETURNING octet_length(key) + octet_length(text) + coalesce((SELECT sum(octet_length(t)) FROM unnest(tags) t), 0)`,
			bank, key).Scan(&size)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.NoMemory(bank, key)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, setBankSQL, bank, version+1, entries-1, bytes-size)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return err
	}
	if err != nil {
		return s.wrap(fmt.Sprintf("delete memory %q of bank %q", key, bank), err)
	}
	return nil
}

// DeleteBank implements store.Memories.
func (s *Store) DeleteBank(ctx context.Context, bank string) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM swarm_memories WHERE bank = $1`, bank)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		for _, q := range []string{`DELETE FROM swarm_memory_writes WHERE bank = $1`, `DELETE FROM swarm_memory_banks WHERE bank = $1`} {
			if _, err := tx.Exec(ctx, q, bank); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, s.wrap(fmt.Sprintf("delete memory bank %q", bank), err)
	}
	return int(n), nil
}

// Bank implements store.Memories.
func (s *Store) Bank(ctx context.Context, bank string) (store.BankInfo, error) {
	if err := s.check(); err != nil {
		return store.BankInfo{}, err
	}
	b, err := scanBank(s.pool.QueryRow(ctx, `SELECT `+bankCols+` FROM swarm_memory_banks WHERE bank = $1`, bank))
	if errors.Is(err, pgx.ErrNoRows) || err == nil && b.Version == 0 {
		// A bank row with version 0 is one whose first write is under
		// way or was refused.
		return store.BankInfo{Name: bank}, nil
	}
	if err != nil {
		return store.BankInfo{}, s.wrap(fmt.Sprintf("memory bank %q", bank), err)
	}
	return b, nil
}

// Banks implements store.Memories.
func (s *Store) Banks(ctx context.Context, prefix string) ([]store.BankInfo, error) {
	return queryAll(ctx, s, "memory banks", scanBank,
		`SELECT `+bankCols+` FROM swarm_memory_banks WHERE starts_with(bank, $1) AND version > 0 ORDER BY bank`, prefix)
}
