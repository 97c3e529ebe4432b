package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/swarmrt/swarm/store"
)

var _ store.Blobs = (*Store)(nil)

// blobSchema is schema version 8: content-addressed blobs and the runs
// that refer to them (store.Blobs). A blob's bytes are in a rowid table:
// large rows belong there, not in a WITHOUT ROWID one. Deleting a run
// deletes its references and the blobs left without any (see deletion).
var blobSchema = []string{
	`CREATE TABLE blobs (
		hash TEXT PRIMARY KEY,
		data BLOB NOT NULL
	)`,
	`CREATE TABLE blob_refs (
		rid  INTEGER NOT NULL,
		hash TEXT NOT NULL,
		PRIMARY KEY (rid, hash)
	) WITHOUT ROWID`,
	`CREATE INDEX blob_refs_hash ON blob_refs (hash)`,
}

// rid returns the rid of run id, or ErrNotFound.
func (w *writer) rid(ctx context.Context, id string) (int64, error) {
	var rid int64
	err := w.conn.QueryRowContext(ctx, `SELECT rid FROM runs WHERE id = ?`, id).Scan(&rid)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("run %q: %w", id, store.ErrNotFound)
	}
	return rid, err
}

// PutBlob implements store.Blobs: one write request, so one transaction.
func (s *Store) PutBlob(ctx context.Context, id string, data []byte) (string, error) {
	if err := store.CheckBlob(id, data); err != nil {
		return "", err
	}
	hash := store.BlobHash(data)
	err := s.write(ctx, func(w *writer) error {
		rid, err := w.rid(ctx, id)
		if err != nil {
			return err
		}
		return w.putBlob(ctx, rid, store.BlobRef{Data: data})
	})
	if err != nil {
		return "", fmt.Errorf("put blob: %w", err)
	}
	return hash, nil
}

// RefBlob implements store.Blobs.
func (s *Store) RefBlob(ctx context.Context, id, hash string) error {
	err := s.write(ctx, func(w *writer) error {
		rid, err := w.rid(ctx, id)
		if err != nil {
			return err
		}
		return w.putBlob(ctx, rid, store.BlobRef{Hash: hash})
	})
	if err != nil {
		return fmt.Errorf("refer to blob from run %q: %w", id, err)
	}
	return nil
}

// putBlob keeps b's data (if it has any) and makes run rid refer to it; a
// reference to a blob not kept gives ErrNoBlob.
func (w *writer) putBlob(ctx context.Context, rid int64, b store.BlobRef) error {
	hash := b.Sum()
	if len(b.Data) > 0 {
		if _, err := w.conn.ExecContext(ctx, `INSERT INTO blobs (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING`, hash, b.Data); err != nil {
			return err
		}
	}
	res, err := w.conn.ExecContext(ctx, `INSERT INTO blob_refs (rid, hash) SELECT ?, hash FROM blobs WHERE hash = ?
		ON CONFLICT DO NOTHING`, rid, hash)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	var one int
	err = w.conn.QueryRowContext(ctx, `SELECT 1 FROM blobs WHERE hash = ?`, hash).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("blob %q: %w", hash, store.ErrNoBlob)
	}
	return err
}

// Blob implements store.Blobs.
func (s *Store) Blob(ctx context.Context, id, hash string) ([]byte, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var data []byte
	err := s.rdb.QueryRowContext(ctx, `SELECT b.data FROM runs r JOIN blob_refs f ON f.rid = r.rid JOIN blobs b ON b.hash = f.hash
		WHERE r.id = ? AND f.hash = ?`, id, hash).Scan(&data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, store.NoBlob(id, hash)
	case err != nil:
		return nil, fmt.Errorf("blob %q of run %q: %w", hash, id, err)
	}
	return data, nil
}
