package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/swarmrt/swarm/store"
)

var _ store.Blobs = (*Store)(nil)

// lockRun returns the rid of run id, holding a share lock on its row for
// the rest of tx, so that the run cannot be deleted before tx commits
// (deletion deletes the row first and the references after it).
func lockRun(ctx context.Context, tx pgx.Tx, id string) (int64, error) {
	var rid int64
	err := tx.QueryRow(ctx, `SELECT rid FROM swarm_runs WHERE id = $1 FOR SHARE`, id).Scan(&rid)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("run %q: %w", id, store.ErrNotFound)
	}
	return rid, err
}

// PutBlob implements store.Blobs in one transaction (see putBlob).
func (s *Store) PutBlob(ctx context.Context, id string, data []byte) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	if err := store.CheckBlob(id, data); err != nil {
		return "", err
	}
	hash := store.BlobHash(data)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rid, err := lockRun(ctx, tx, id)
		if err != nil {
			return err
		}
		return putBlob(ctx, tx, rid, store.BlobRef{Data: data})
	})
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("put blob: %w", err)
	}
	if err != nil {
		return "", s.wrap("put blob for run "+id, err)
	}
	return hash, nil
}

// RefBlob implements store.Blobs.
func (s *Store) RefBlob(ctx context.Context, id, hash string) error {
	if err := s.check(); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rid, err := lockRun(ctx, tx, id)
		if err != nil {
			return err
		}
		return putBlob(ctx, tx, rid, store.BlobRef{Hash: hash})
	})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrNoBlob) {
		return fmt.Errorf("refer to blob from run %q: %w", id, err)
	}
	if err != nil {
		return s.wrap("refer to blob from run "+id, err)
	}
	return nil
}

// putBlob keeps b's data (if it has any) and makes run rid refer to it, in
// tx; a reference to a blob not kept gives ErrNoBlob. The blob's row is
// inserted or share-locked before the reference, so that a deletion
// collecting the blob at the same time (which locks it for update first)
// either sees the reference or has deleted the row, which is then
// inserted anew.
func putBlob(ctx context.Context, tx pgx.Tx, rid int64, b store.BlobRef) error {
	hash := b.Sum()
	for range 3 {
		if len(b.Data) > 0 {
			tag, err := tx.Exec(ctx, `INSERT INTO swarm_blobs (hash, data) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING`, hash, b.Data)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				break
			}
		}
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM swarm_blobs WHERE hash = $1 FOR SHARE`, hash).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			if len(b.Data) > 0 {
				continue // collected meanwhile: insert it again
			}
			return fmt.Errorf("blob %q: %w", hash, store.ErrNoBlob)
		}
		if err != nil {
			return err
		}
		break
	}
	_, err := tx.Exec(ctx, `INSERT INTO swarm_blob_refs (rid, hash) VALUES ($1, $2) ON CONFLICT DO NOTHING`, rid, hash)
	return err
}

// Blob implements store.Blobs.
func (s *Store) Blob(ctx context.Context, id, hash string) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return again(ctx, func() ([]byte, error) {
		var data []byte
		err := s.pool.QueryRow(ctx, `SELECT b.data FROM swarm_runs r JOIN swarm_blob_refs f ON f.rid = r.rid
			JOIN swarm_blobs b ON b.hash = f.hash WHERE r.id = $1 AND f.hash = $2`, id, hash).Scan(&data)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil, store.NoBlob(id, hash)
		case err != nil:
			return nil, s.wrap("blob of run "+id, err)
		}
		return data, nil
	})
}
