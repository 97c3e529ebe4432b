// Package postgres is a [store.Store] in a PostgreSQL database, shared by
// any number of processes (nodes), using github.com/jackc/pgx/v5.
//
// Importing the package registers the "postgres://" and "postgresql://" URL
// schemes with [store.Register]. The URL is a libpq connection URL; pool
// settings go in its query, as pgxpool reads them:
//
//	postgres://user:pass@db.example:5432/swarm?sslmode=require&pool_max_conns=16
//
// A search_path parameter puts the store's tables in a schema of their own.
//
// Open applies the schema migrations embedded in the package (see
// [SchemaVersion]) and refuses, with [ErrNewerSchema], a database migrated
// by a newer version. Nodes starting at once serialise on an advisory lock.
//
// Every write is one statement (one implicit transaction) or one explicit
// transaction that re-reads what it depends on, so nothing is cached
// between transactions. Appends check the lease (owner and epoch) in the
// same statement that adds the records: a process whose lease was taken
// over writes nothing. Claims use FOR UPDATE SKIP LOCKED, so nodes claiming
// at once never wait for each other nor claim a run twice. Lease times come
// from the database server's clock, which all nodes share. A heartbeat
// (Renew) updates its owner's one row of swarm_leases, not the rows of its
// runs: a run's lease lasts until the later of its own and its owner's
// (migration 0013, leases.go).
//
// Changes are announced with NOTIFY after the transaction that makes them
// commits, several at a time (see notify.go); the Store implements
// [store.Watcher] with a LISTEN connection of its own that reconnects after
// the database restarts. The pool replaces broken
// connections by itself.
package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/swarmrt/swarm/store"
)

func init() {
	for _, scheme := range []string{"postgres", "postgresql"} {
		store.Register(scheme, func(ctx context.Context, rest string) (store.Store, error) {
			return Open(ctx, scheme+":"+rest)
		})
	}
}

// ErrClosed is returned by the methods of a closed Store.
var ErrClosed = errors.New("postgres store is closed")

// ErrNoDatabase is returned by Open for a connection string that names no
// database.
var ErrNoDatabase = errors.New("connection string names no database")

// Store is a store.Store in PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	connCfg *pgx.ConnConfig
	target  string // host:port/db, for messages
	log     *slog.Logger
	q       queries
	channel string // NOTIFY channel of this schema
	version int

	closed atomic.Bool
	once   sync.Once

	hub      store.Hub
	lmu      sync.Mutex // guards lrunning
	lrunning bool
	lctx     context.Context
	lcancel  context.CancelFunc
	ldone    chan struct{}

	nmu     sync.Mutex      // guards pending, waiting and nclosed
	pending []string        // payloads to NOTIFY (notify.go)
	waiting []chan struct{} // closed when pending is sent
	nclosed bool            // the notifier has stopped
	nkick   chan struct{}
	nstop   chan struct{}
	ndone   chan struct{}

	lastSweep atomic.Int64 // Unix nanoseconds of the last sweepLeases

	notifications atomic.Int64
	reconnects    atomic.Int64
	notifyErrors  atomic.Int64
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Watcher = (*Store)(nil)
)

// Option configures Open.
type Option func(*options)

type options struct {
	log *slog.Logger
}

// WithLogger sets where the store reports lost and re-established
// notification connections (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Open connects to the database at url (a postgres:// URL or a key=value
// connection string), applies pending schema migrations and returns the
// store. It fails with a clear error if the database is unreachable, if
// url names no database (ErrNoDatabase), or if the schema is newer than
// this package (ErrNewerSchema).
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres store: bad connection string: %w", err)
	}
	cc := cfg.ConnConfig
	if cc.Database == "" {
		return nil, fmt.Errorf("postgres store: %w: add one, as in postgres://%s:%d/swarm", ErrNoDatabase, cc.Host, cc.Port)
	}
	target := fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store %s: %w", target, err)
	}
	s := &Store{pool: pool, connCfg: cc.Copy(), target: target, log: o.log}
	if err := s.init(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store %s: %w", target, err)
	}
	s.lctx, s.lcancel = context.WithCancel(context.Background())
	s.nkick, s.nstop, s.ndone = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go s.notifyLoop()
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		if unavailable(err) {
			return fmt.Errorf("cannot reach the database: %w (%w)", err, store.ErrUnavailable)
		}
		return fmt.Errorf("cannot reach the database: %w", err)
	}
	var schema *string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	if schema == nil {
		return errors.New("no schema to use: no schema of search_path exists (create it, or fix search_path)")
	}
	v, err := migrate(ctx, s.pool)
	if err != nil {
		return err
	}
	s.version = v
	s.channel = channelName(*schema)
	s.q = newQueries()
	return nil
}

// channelName is the NOTIFY channel of the store in schema: stores in
// different schemas of one database do not hear each other. Channel names
// are identifiers of at most 63 bytes.
func channelName(schema string) string {
	ch := "swarm_" + schema
	if len(ch) > 63 {
		sum := sha256.Sum256([]byte(schema))
		ch = "swarm_" + hex.EncodeToString(sum[:16])
	}
	return ch
}

// SchemaVersion returns the version of the database's schema, as Open
// found or made it.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	v, err := version(ctx, s.pool)
	if err != nil {
		return 0, fmt.Errorf("postgres store %s: read schema version: %w", s.target, err)
	}
	return v, nil
}

// Pool returns the store's connection pool, for health checks and
// statistics (Pool().Stat()).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that the database answers, for readiness probes.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres store %s: %w", s.target, err)
	}
	return nil
}

// Stats counts the store's notifications.
type Stats struct {
	// Notifications is the number of NOTIFY messages received.
	Notifications int64
	// Reconnects is how often the LISTEN connection was re-established.
	Reconnects int64
	// NotifyErrors counts the batches of notifications that could not be
	// sent (their changes are found by polling).
	NotifyErrors int64
}

// Stats reports the store's counters.
func (s *Store) Stats() Stats {
	return Stats{Notifications: s.notifications.Load(), Reconnects: s.reconnects.Load(), NotifyErrors: s.notifyErrors.Load()}
}

// Close stops the listener, sends the notifications still queued and
// closes the pool. It may be called more
// than once.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		s.lmu.Lock()
		s.lcancel()
		running := s.lrunning
		s.lmu.Unlock()
		if running {
			<-s.ldone
		}
		close(s.nstop)
		<-s.ndone
		s.hub.Close()
		s.pool.Close()
	})
	return nil
}

// Watch implements store.Watcher with LISTEN. The first Watch connects the
// listener and fails if it cannot; later losses of the connection are
// repaired in the background (notifications sent meanwhile are lost).
func (s *Store) Watch(ctx context.Context, fn func(store.Change)) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.startListener(ctx); err != nil {
		return err
	}
	return s.hub.Watch(ctx, fn)
}

func (s *Store) startListener(ctx context.Context) error {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if s.lrunning {
		return nil
	}
	if s.lctx.Err() != nil {
		return ErrClosed
	}
	conn, err := s.listen(ctx)
	if err != nil {
		return fmt.Errorf("postgres store %s: listen: %w", s.target, err)
	}
	s.lrunning = true
	s.ldone = make(chan struct{})
	go s.listenLoop(conn)
	return nil
}

// listen opens a connection of its own and LISTENs on the channel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// listenLoop publishes notifications until the store closes, reconnecting
// with backoff when the connection breaks.
func (s *Store) listenLoop(conn *pgx.Conn) {
	defer close(s.ldone)
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for {
		n, err := conn.WaitForNotification(s.lctx)
		if err == nil {
			s.notifications.Add(1)
			if c, ok := parsePayload(n.Payload); ok {
				s.hub.Publish(c)
			}
			continue
		}
		if s.lctx.Err() != nil {
			return
		}
		s.log.Warn("postgres store: notification connection lost; reconnecting", "db", s.target, "err", err)
		conn.Close(context.Background())
		conn = nil
		for backoff := 50 * time.Millisecond; conn == nil; backoff = min(2*backoff, 5*time.Second) {
			t := time.NewTimer(backoff)
			select {
			case <-s.lctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(s.lctx, 10*time.Second)
			conn, err = s.listen(ctx)
			cancel()
			if err != nil {
				s.log.Warn("postgres store: reconnect failed", "db", s.target, "err", err)
			}
		}
		s.reconnects.Add(1)
		s.log.Info("postgres store: notification connection re-established", "db", s.target)
		// Changes may have been missed: tell watchers to look around.
		s.hub.Publish(store.Change{Kind: store.ChangeRunnable})
	}
}

// Payloads are "<kind letter>:<run id>".
const (
	kindAppended = "a"
	kindInbox    = "i"
	kindRunnable = "r"
)

func parsePayload(p string) (store.Change, bool) {
	k, id, ok := strings.Cut(p, ":")
	if !ok {
		return store.Change{}, false
	}
	switch k {
	case kindAppended:
		return store.Change{RunID: id, Kind: store.ChangeAppended}, true
	case kindInbox:
		return store.Change{RunID: id, Kind: store.ChangeInbox}, true
	case kindRunnable:
		return store.Change{RunID: id, Kind: store.ChangeRunnable}, true
	}
	return store.Change{}, false
}
