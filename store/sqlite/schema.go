package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// ApplicationID is the value of PRAGMA application_id in every swarm store
// ("SWRM" in ASCII). A database with any other non-zero application_id, or
// with tables but no application_id, is someone else's and is never touched.
const ApplicationID = 0x5357524D

// SchemaVersion is the version of the schema this package writes. A store
// with a newer version is refused.
const SchemaVersion = 13

// upgrades[v-2] brings a schema from version v-1 to version v. A new store
// is created at version 1 and upgraded like an old one.
var upgrades = [][]string{
	// 2: the budget pool of a run tree, on its root run's row.
	{
		`ALTER TABLE runs ADD COLUMN pool_calls INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE runs ADD COLUMN pool_tokens INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE runs ADD COLUMN pool_cost REAL NOT NULL DEFAULT 0`,
		`ALTER TABLE runs ADD COLUMN pool_lifted INTEGER NOT NULL DEFAULT 0`,
	},
	// 3: mailboxes (mail.go).
	mailSchema,
	// 4: listing by state, newest first, without walking every run (the
	// index ends with the rowid, rid, so it is in List's order).
	{
		`CREATE INDEX IF NOT EXISTS runs_state ON runs (state)`,
	},
	// 5: teams' task boards and protocol requests (team.go).
	teamSchema,
	// 6: runs' snapshots (snapshot.go).
	snapshotSchema,
	// 7: the tool calls of a run tree's budget pool.
	{
		`ALTER TABLE runs ADD COLUMN pool_tools INTEGER NOT NULL DEFAULT 0`,
	},
	// 8: agents' memory banks (memory.go).
	memorySchema,
	// 9: named secrets, encrypted by their callers (secrets.go).
	secretSchema,
	// 10: blobs and their references (blob.go).
	blobSchema,
	// 11: fewer pages written per step. The journal becomes a rowid table
	// keyed by its position (rid, seq), so that a run's records are
	// appended at the end of the table's b-tree, which SQLite splits
	// without rebalancing, and fills; runs_owner goes (a node's runs are
	// found among the running runs by runs_claim).
	journalV11,
	// 12: the parts of a mail (store.Mail.Parts), as JSON.
	{
		`ALTER TABLE mail ADD COLUMN parts TEXT NOT NULL DEFAULT ''`,
	},
	// 13: the parts of an inbox message (store.Message.Parts), as JSON.
	{
		`ALTER TABLE inbox ADD COLUMN parts TEXT NOT NULL DEFAULT ''`,
	},
}

// journalV11 is schema step 11: the journal in a rowid table keyed by pos
// (see journalPos), and no runs_owner.
var journalV11 = []string{
	`DROP INDEX IF EXISTS runs_owner`,
	`CREATE TABLE journal_v11 (` + journalColumns + `)`,
	`INSERT INTO journal_v11 (pos, rid, seq, key, type, data, time)
		SELECT (rid << 24) | seq, rid, seq, key, type, data, time FROM journal ORDER BY rid, seq`,
	`DROP TABLE journal`,
	`ALTER TABLE journal_v11 RENAME TO journal`,
}

// journalColumns are the journal's columns and constraints since schema
// version 11. pos is (rid << 24) | seq: a run's records are contiguous and
// in seq order in the table itself, so that reading a run's journal is a
// range of the table, and the records of one step go at one place, the
// end of the table when runs do not overlap. The packing bounds a run to
// maxSeq records and a store to maxRid runs; the CHECK keeps it honest.
const journalColumns = `
		pos  INTEGER PRIMARY KEY,
		rid  INTEGER NOT NULL,
		seq  INTEGER NOT NULL,
		key  TEXT NOT NULL,
		type TEXT NOT NULL,
		data BLOB,
		time INTEGER NOT NULL,
		UNIQUE (rid, key),
		CHECK (seq BETWEEN 1 AND 16777215 AND rid BETWEEN 1 AND 549755813887 AND pos = (rid << 24) | seq)`

// The bounds of journalColumns' packing.
const (
	seqBits = 24
	maxSeq  = 1<<seqBits - 1 // records in one run
	maxRid  = 1<<39 - 1      // runs created in a store
)

// journalPos is the journal's key of record seq of run rid.
func journalPos(rid, seq int64) int64 { return rid<<seqBits | seq }

// ErrNotStore is returned by Open for a file that is not a swarm store: not a
// SQLite database at all, or a database that belongs to another program.
var ErrNotStore = errors.New("not a swarm store")

// ErrNewerSchema is returned by Open for a swarm store written by a newer
// version of this package.
var ErrNewerSchema = errors.New("swarm store has a newer schema version")

// The schema. Invariants kept by the code, relied on by the queries:
//   - runs.owner is empty exactly when runs.lease_until is 0, so that
//     "unowned or expired" is the index range lease_until <= now;
//   - runs.last_seq is the largest journal.seq of the run (0 if none);
//   - journal.pos is journalPos(rid, seq);
//   - runs.rid grows with creation, giving the newest/oldest-first order.
//
// The journal and the inbox refer to a run by its rid, not its (random)
// text id: rows of runs created at about the same time then share b-tree
// pages, so that a group commit of many runs' appends writes few pages.
//
// Times are Unix nanoseconds (0 for the zero time); result and data are JSON
// stored as blobs, usage is JSON text.
var schema = []string{
	`CREATE TABLE runs (
		rid         INTEGER PRIMARY KEY,
		id          TEXT NOT NULL UNIQUE,
		swarm       TEXT NOT NULL,
		parent      TEXT NOT NULL DEFAULT '',
		state       TEXT NOT NULL,
		turn        INTEGER NOT NULL DEFAULT 0,
		max_turns   INTEGER NOT NULL DEFAULT 0,
		agent       TEXT NOT NULL DEFAULT '',
		result      BLOB,
		reason      TEXT NOT NULL DEFAULT '',
		usage       TEXT,
		owner       TEXT NOT NULL DEFAULT '',
		epoch       INTEGER NOT NULL,
		lease_until INTEGER NOT NULL DEFAULT 0,
		last_seq    INTEGER NOT NULL DEFAULT 0,
		created_at  INTEGER NOT NULL,
		updated_at  INTEGER NOT NULL
	)`,
	// Claimable runs: running, by lease expiry.
	`CREATE INDEX runs_claim ON runs (lease_until) WHERE state = 'running'`,
	`CREATE INDEX runs_owner ON runs (owner) WHERE owner <> ''`,
	`CREATE INDEX runs_swarm ON runs (swarm)`,
	`CREATE INDEX runs_parent ON runs (parent) WHERE parent <> ''`,
	// Replaced in step 11 (journalV11).
	`CREATE TABLE journal (
		rid  INTEGER NOT NULL,
		seq  INTEGER NOT NULL,
		key  TEXT NOT NULL,
		type TEXT NOT NULL,
		data BLOB,
		time INTEGER NOT NULL,
		PRIMARY KEY (rid, seq),
		UNIQUE (rid, key)
	) WITHOUT ROWID`,
	// AUTOINCREMENT: message IDs are never reused, even after every
	// message has been acknowledged and deleted.
	`CREATE TABLE inbox (
		id   INTEGER PRIMARY KEY AUTOINCREMENT,
		rid  INTEGER NOT NULL,
		kind TEXT NOT NULL,
		text TEXT NOT NULL DEFAULT '',
		time INTEGER NOT NULL
	)`,
	`CREATE INDEX inbox_run ON inbox (rid, id)`,
	`CREATE TABLE meta (
		key   TEXT PRIMARY KEY,
		value TEXT NOT NULL
	)`,
}

var sqliteHeader = []byte("SQLite format 3\x00")

// checkFile fails with ErrNotStore if path exists, is not empty and is not a
// SQLite database. It only reads.
func checkFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrNotStore, path)
	}
	if fi.Size() == 0 {
		return nil
	}
	hdr := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, hdr); err != nil || !bytes.Equal(hdr, sqliteHeader) {
		return fmt.Errorf("%w: %s is not a SQLite database", ErrNotStore, path)
	}
	return nil
}

// inspect reads what the database says about itself, without writing. It
// returns whether the database is empty, so that the schema must be created.
func inspect(ctx context.Context, q querier, path string) (empty bool, err error) {
	// The schema is counted before the application id is read: another
	// process may commit a new schema between the two reads, and in this
	// order that can only look like "ours", never like someone else's file.
	var tables int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&tables); err != nil {
		return false, fmt.Errorf("%w: %s: reading the schema: %w", ErrNotStore, path, err)
	}
	var appID int64
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return false, fmt.Errorf("%w: %s: reading application_id: %w", ErrNotStore, path, err)
	}
	switch {
	case appID == 0 && tables == 0:
		return true, nil
	case appID == 0:
		return false, fmt.Errorf("%w: %s is a SQLite database of another program (no application_id, %d schema objects)", ErrNotStore, path, tables)
	case appID != ApplicationID:
		return false, fmt.Errorf("%w: %s is a SQLite database of another program (application_id 0x%08x)", ErrNotStore, path, uint32(appID))
	}
	n, err := schemaVersion(ctx, q, path)
	if err != nil {
		return false, err
	}
	if n > SchemaVersion {
		return false, fmt.Errorf("%w: %s has schema version %d, this program knows up to %d", ErrNewerSchema, path, n, SchemaVersion)
	}
	return false, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// createSchema creates the schema in one transaction, unless another
// process did so first.
func createSchema(ctx context.Context, c *sql.Conn, path string) (err error) {
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("create schema in %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_, _ = c.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	// Look again under the write lock: another process may have won.
	empty, err := inspect(ctx, c, path)
	if err != nil {
		return err
	}
	if empty {
		for _, stmt := range schema {
			if _, err := c.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("create schema in %s: %w", path, err)
			}
		}
		if _, err := c.ExecContext(ctx, "INSERT INTO meta (key, value) VALUES ('schema_version', '1')"); err != nil {
			return fmt.Errorf("create schema in %s: %w", path, err)
		}
		if _, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
			return fmt.Errorf("create schema in %s: %w", path, err)
		}
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("create schema in %s: %w", path, err)
	}
	return nil
}

// schemaVersion reads the version recorded in the database.
func schemaVersion(ctx context.Context, q querier, path string) (int, error) {
	var v string
	if err := q.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'schema_version'").Scan(&v); err != nil {
		return 0, fmt.Errorf("%w: %s: reading the schema version: %w", ErrNotStore, path, err)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: %s: bad schema version %q", ErrNotStore, path, v)
	}
	return n, nil
}

// upgradeSchema brings an older schema up to SchemaVersion in one
// transaction, unless another process did so first. An up-to-date store is
// only read.
func upgradeSchema(ctx context.Context, c *sql.Conn, path string) (err error) {
	if v, err := schemaVersion(ctx, c, path); err != nil || v >= SchemaVersion {
		return err
	}
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("upgrade schema of %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_, _ = c.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	v, err := schemaVersion(ctx, c, path) // again, under the write lock
	if err != nil {
		return err
	}
	for ; v < SchemaVersion; v++ {
		for _, stmt := range upgrades[v-1] {
			if _, err := c.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("upgrade schema of %s to version %d: %w", path, v+1, err)
			}
		}
	}
	if _, err := c.ExecContext(ctx, "UPDATE meta SET value = ? WHERE key = 'schema_version'", strconv.Itoa(SchemaVersion)); err != nil {
		return fmt.Errorf("upgrade schema of %s: %w", path, err)
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("upgrade schema of %s: %w", path, err)
	}
	return nil
}
