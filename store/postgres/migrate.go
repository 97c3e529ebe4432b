package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNewerSchema is returned by Open for a database whose swarm schema was
// written by a newer version of this package.
var ErrNewerSchema = errors.New("swarm store has a newer schema version")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema change: migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) { return readMigrations(migrationFiles) }

// readMigrations reads the migrations in directory migrations of fsys, in
// version order. Versions start at 1 and grow, but may skip a number: a
// number may be taken by a change that another line of development adds
// later. Each applied version is recorded, and migrate applies every
// known one a database lacks, in order, so the migrations must not depend
// on the order of versions that are applied separately.
func readMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration file %q: want NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version < 1 || i > 0 && m.version == out[i-1].version {
			return nil, fmt.Errorf("migrations: version %d is not positive or not unique", m.version)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("migrations: none")
	}
	return out, nil
}

// SchemaVersion is the newest schema version this package knows.
var SchemaVersion = func() int {
	ms, err := migrations()
	if err != nil {
		panic("postgres store: " + err.Error()) // the embedded files are broken: a build error
	}
	return ms[len(ms)-1].version
}()

// migrationLock is the first key of the advisory lock taken while
// migrating; the second is a hash of the schema, so that stores in
// different schemas of one database migrate independently.
const migrationLock = 0x5357524d // "SWRM"

// version returns the schema version recorded in the database, 0 if none.
func version(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('swarm_schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var n int
	if err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM swarm_schema_migrations`).Scan(&n); err != nil {
		return 0, err
	}
	return n, nil
}

// applied returns the migrations recorded in the database, none if it has
// no schema yet.
func applied(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) (map[int]bool, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('swarm_schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, err
	}
	out := map[int]bool{}
	if !exists {
		return out, nil
	}
	rows, err := q.Query(ctx, `SELECT version FROM swarm_schema_migrations`)
	if err != nil {
		return nil, err
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	for _, v := range vs {
		out[v] = true
	}
	return out, err
}

// pending returns the migrations of ms that done lacks, or ErrNewerSchema
// if done holds one that ms does not know.
func pending(ms []migration, done map[int]bool) ([]migration, error) {
	known := map[int]bool{}
	var out []migration
	for _, m := range ms {
		known[m.version] = true
		if !done[m.version] {
			out = append(out, m)
		}
	}
	for v := range done {
		if !known[v] {
			return nil, fmt.Errorf("%w: the database has schema version %d, which this program does not know (it knows up to %d); upgrade the program", ErrNewerSchema, v, ms[len(ms)-1].version)
		}
	}
	return out, nil
}

// migrate brings the schema up to SchemaVersion. Nodes that start at once
// serialise on an advisory lock held for the migrating transaction; the
// ones that wait find the work done. A database with a newer schema is
// refused and left alone.
func migrate(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	ms, err := migrations()
	if err != nil {
		return 0, err
	}
	return migrateTo(ctx, pool, ms)
}

// migrateTo applies the migrations of ms that the database lacks and
// returns its schema version after that.
func migrateTo(ctx context.Context, pool *pgxpool.Pool, ms []migration) (int, error) {
	done, err := applied(ctx, pool)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	todo, err := pending(ms, done)
	if err != nil {
		return 0, err
	}
	if len(todo) == 0 {
		return ms[len(ms)-1].version, nil
	}
	var v int
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(coalesce(current_schema(), '')))`, migrationLock); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS swarm_schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create swarm_schema_migrations: %w", err)
		}
		// Look again under the lock: another node may have migrated.
		done, err := applied(ctx, tx)
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		todo, err := pending(ms, done)
		if err != nil {
			return err
		}
		for _, m := range todo {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO swarm_schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("record migration %d: %w", m.version, err)
			}
		}
		v, err = version(ctx, tx)
		return err
	})
	if err != nil {
		return 0, err
	}
	return v, nil
}
