// Package sqlite is a [store.Store] in an embedded SQLite database, using the
// pure-Go driver modernc.org/sqlite.
//
// Importing the package registers the "sqlite:PATH" URL scheme with
// [store.Register].
//
// The database runs in WAL mode. Reads use a pool of read-only connections.
// All writes go through one connection owned by a single writer goroutine,
// which commits in groups: it takes every write request waiting for it (up to
// a cap), runs them in one BEGIN IMMEDIATE transaction, each inside its own
// SAVEPOINT so that a failed request (a conflict, a lost lease) is rolled back
// alone, commits once and then answers every request. Thousands of
// concurrent appends thus share a handful of transactions and fsyncs.
//
// Other processes may open the same file at the same time, to read (a status
// command) or to write (recovery); SQLite's locking and the busy timeout
// serialise them. Every write re-reads what it depends on inside its
// transaction, so nothing is cached between transactions.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlitedrv "modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"github.com/swarmrt/swarm/store"
)

func init() {
	store.Register("sqlite", func(ctx context.Context, path string) (store.Store, error) {
		return Open(ctx, path)
	})
}

// ErrClosed is returned by the methods of a closed Store.
var ErrClosed = errors.New("sqlite store is closed")

// DefaultMaxBatch is the default cap on the number of write requests
// committed in one transaction.
const DefaultMaxBatch = 1024

// Store is a store.Store in a SQLite database file. Open it with Open; it is
// safe for concurrent use.
type Store struct {
	path string
	cfg  config

	wdb  *sql.DB   // holds the single writer connection
	conn *sql.Conn // the writer connection, used only by the writer goroutine
	ckpt *sql.Conn // the checkpointer's connection
	w    *writer
	rdb  *sql.DB // read-only pool
	rd   readStmts

	reqs    chan *request
	closeMu sync.RWMutex // guards closed and sends on reqs
	closed  bool
	done    chan struct{} // closed when the writer goroutine exits

	kick     chan struct{} // the writer wakes the checkpointer after commits
	stop     chan struct{} // closed by Close to stop the checkpointer
	ckptDone chan struct{} // closed when the checkpointer exits
	once     sync.Once
	cerr     error
	hub      store.Hub     // changes made through this Store
	pollMu   sync.Mutex    // guards pollDone
	pollDone chan struct{} // closed when the inbox poller exits; nil before the first Watch
	polling  atomic.Bool   // the inbox poller runs
	own      ownMessages   // messages sent here, which the poller skips
	ownMail  ownMessages   // mails (mail.mid) posted here, likewise

	transactions atomic.Int64
	writes       atomic.Int64
	maxBatch     atomic.Int64
	pages        atomic.Int64
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Watcher = (*Store)(nil)
)

type config struct {
	fullSync    bool
	busyTimeout time.Duration
	readConns   int
	maxBatch    int
	inboxPoll   time.Duration
}

// Option configures Open.
type Option func(*config)

// WithFullSync sets PRAGMA synchronous=FULL: a commit survives power loss,
// at the cost of an fsync per transaction. The default, NORMAL, is safe
// against process crashes and keeps the database consistent after power
// loss, but may lose the last transactions.
func WithFullSync() Option { return func(c *config) { c.fullSync = true } }

// WithBusyTimeout sets how long a connection waits for a lock held by
// another connection or process before failing (default 10s).
func WithBusyTimeout(d time.Duration) Option { return func(c *config) { c.busyTimeout = d } }

// WithReadConns sets the size of the read connection pool (default: the
// larger of 4 and GOMAXPROCS).
func WithReadConns(n int) Option { return func(c *config) { c.readConns = n } }

// WithMaxBatch caps the number of write requests committed in one
// transaction (default DefaultMaxBatch). 1 disables group commit.
func WithMaxBatch(n int) Option { return func(c *config) { c.maxBatch = n } }

// Stats counts the work of a Store's writer.
type Stats struct {
	// Transactions is the number of write transactions run.
	Transactions int64
	// Writes is the number of write requests executed in them.
	Writes int64
	// MaxBatch is the largest number of requests in one transaction.
	MaxBatch int64
	// PagesWritten counts the database pages the writer wrote to the WAL.
	PagesWritten int64
}

// Stats reports the writer's counters. Writes/Transactions is the average
// group-commit batch size.
func (s *Store) Stats() Stats {
	return Stats{
		Transactions: s.transactions.Load(),
		Writes:       s.writes.Load(),
		MaxBatch:     s.maxBatch.Load(),
		PagesWritten: s.pages.Load(),
	}
}

// Open opens the swarm store in the SQLite file at path, creating the file
// and its schema if the file does not exist or is empty. It fails with
// ErrNotStore, without modifying the file, if the file is not a SQLite
// database or belongs to another program, and with ErrNewerSchema if it was
// written by a newer version of this package.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := config{
		busyTimeout: 10 * time.Second,
		readConns:   max(4, runtime.GOMAXPROCS(0)),
		maxBatch:    DefaultMaxBatch,
		inboxPoll:   DefaultInboxPoll,
	}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.readConns = max(cfg.readConns, 1)
	cfg.maxBatch = max(cfg.maxBatch, 1)
	cfg.busyTimeout = max(cfg.busyTimeout, 0)
	if cfg.inboxPoll <= 0 {
		cfg.inboxPoll = DefaultInboxPoll
	}
	if path == "" {
		return nil, errors.New("open sqlite store: empty path")
	}
	if strings.HasPrefix(path, "file:") || strings.Contains(path, ":memory:") {
		return nil, fmt.Errorf("open sqlite store %q: want a file path, not a URI or in-memory name", path)
	}
	s, err := open(ctx, path, cfg)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	return s, nil
}

// dsn turns a path into a SQLite URI with the given query parameters, so
// that characters such as '?' and '#' in the path are taken literally. The
// path is absolute, so that it cannot be mistaken for a URI authority.
func dsn(path string, params ...string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	u := "file:" + r.Replace(path)
	if len(params) > 0 {
		u += "?" + strings.Join(params, "&")
	}
	return u
}

func open(ctx context.Context, path string, cfg config) (_ *Store, err error) {
	if err := checkFile(path); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", cfg.busyTimeout.Milliseconds())
	s := &Store{path: path, cfg: cfg}
	defer func() {
		if err != nil {
			s.closeDBs()
		}
	}()

	s.wdb, err = sql.Open("sqlite", dsn(abs, busy))
	if err != nil {
		return nil, err
	}
	s.wdb.SetMaxOpenConns(2) // the writer and the checkpointer
	s.wdb.SetMaxIdleConns(2)
	s.wdb.SetConnMaxLifetime(0)
	s.conn, err = s.wdb.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Look before touching anything: journal_mode=WAL rewrites the header.
	empty, err := inspect(ctx, s.conn, path)
	if err != nil {
		return nil, err
	}
	mode, err := setWAL(ctx, s.conn, cfg.busyTimeout)
	if err != nil {
		return nil, fmt.Errorf("%s: set WAL mode: %w", path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return nil, fmt.Errorf("%s: cannot use WAL mode (journal mode is %q)", path, mode)
	}
	sync := "NORMAL"
	if cfg.fullSync {
		sync = "FULL"
	}
	if _, err := s.conn.ExecContext(ctx, "PRAGMA synchronous = "+sync); err != nil {
		return nil, fmt.Errorf("%s: set synchronous: %w", path, err)
	}
	// Savepoint journals in memory, not in temporary files: every request
	// in a group commit has its own savepoint.
	if _, err := s.conn.ExecContext(ctx, "PRAGMA temp_store = MEMORY"); err != nil {
		return nil, fmt.Errorf("%s: set temp_store: %w", path, err)
	}
	if _, err := s.conn.ExecContext(ctx, "PRAGMA cache_size = -65536"); err != nil {
		return nil, fmt.Errorf("%s: set cache_size: %w", path, err)
	}
	// Checkpoints run in the background (see checkpointLoop) so that the
	// writer does not wait for them; this is only a backstop.
	if _, err := s.conn.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 20000"); err != nil {
		return nil, fmt.Errorf("%s: set wal_autocheckpoint: %w", path, err)
	}
	if empty {
		if err := createSchema(ctx, s.conn, path); err != nil {
			return nil, err
		}
	}
	if err := upgradeSchema(ctx, s.conn, path); err != nil {
		return nil, err
	}
	if s.w, err = prepareWriter(ctx, s.conn); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}

	s.rdb, err = sql.Open("sqlite", dsn(abs, busy, "_pragma=query_only(1)"))
	if err != nil {
		return nil, err
	}
	s.rdb.SetMaxOpenConns(cfg.readConns)
	s.rdb.SetMaxIdleConns(cfg.readConns)
	if err := s.rdb.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("%s: open read pool: %w", path, err)
	}
	if err := s.rd.prepare(ctx, s.rdb); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}

	s.ckpt, err = s.wdb.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: open checkpoint connection: %w", path, err)
	}

	s.reqs = make(chan *request, cfg.maxBatch)
	s.done = make(chan struct{})
	s.kick = make(chan struct{}, 1)
	s.stop = make(chan struct{})
	s.ckptDone = make(chan struct{})
	go s.writeLoop()
	go s.checkpointLoop()
	return s, nil
}

// checkpointInterval is the shortest time between two background
// checkpoints.
const checkpointInterval = 100 * time.Millisecond

// checkpointLoop copies committed WAL frames back into the database file
// after writes, at most once per checkpointInterval, on its own connection.
// A PASSIVE checkpoint never blocks the writer, and the writer never waits
// for a checkpoint's fsyncs. It ends when stop is closed.
func (s *Store) checkpointLoop() {
	defer close(s.ckptDone)
	t := time.NewTimer(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			return
		}
		_, _ = s.ckpt.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
		t.Reset(checkpointInterval)
		select {
		case <-t.C:
		case <-s.stop:
			return
		}
	}
}

// closeDBs closes statements and databases; it is safe on a partly opened
// Store.
func (s *Store) closeDBs() error {
	var errs []error
	if s.w != nil {
		errs = append(errs, s.w.close())
	}
	errs = append(errs, s.rd.close())
	if s.conn != nil {
		errs = append(errs, s.conn.Close())
	}
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	return errors.Join(errs...)
}

// Close waits for pending writes, stops the writer goroutine and closes the
// database. Later calls fail with ErrClosed; Close itself may be called more
// than once.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.closeMu.Lock()
		s.closed = true
		close(s.reqs)
		s.closeMu.Unlock()
		<-s.done
		s.hub.Close()
		close(s.stop)
		<-s.ckptDone
		s.pollMu.Lock()
		polled := s.pollDone
		s.pollMu.Unlock()
		if polled != nil {
			<-polled
		}
		// Closing the last connection checkpoints and removes the WAL.
		if err := s.closeDBs(); err != nil {
			s.cerr = fmt.Errorf("close sqlite store %s: %w", s.path, err)
		}
	})
	return s.cerr
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// request is one write, run by the writer goroutine inside a savepoint.
type request struct {
	ctx  context.Context
	fn   func(w *writer) error
	done chan error
}

var donePool = sync.Pool{New: func() any { return make(chan error, 1) }}

// write runs fn in the writer goroutine and waits for its transaction to
// commit. fn's results are valid only when write returns nil. Once the request
// is queued, write waits for its outcome even if ctx is cancelled, so that the
// error it returns always tells whether the write happened.
func (s *Store) write(ctx context.Context, fn func(w *writer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := donePool.Get().(chan error)
	req := &request{ctx: ctx, fn: fn, done: done}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		donePool.Put(done)
		return ErrClosed
	}
	select {
	case s.reqs <- req:
	case <-ctx.Done():
		s.closeMu.RUnlock()
		donePool.Put(done)
		return ctx.Err()
	}
	s.closeMu.RUnlock()
	err := <-done
	donePool.Put(done)
	return err
}

func (s *Store) writeLoop() {
	defer close(s.done)
	batch := make([]*request, 0, s.cfg.maxBatch)
	errs := make([]error, 0, s.cfg.maxBatch)
	for {
		req, ok := <-s.reqs
		if !ok {
			return
		}
		batch = append(batch[:0], req)
	fill:
		for len(batch) < s.cfg.maxBatch {
			select {
			case req, ok := <-s.reqs:
				if !ok {
					break fill
				}
				batch = append(batch, req)
			default:
				break fill
			}
		}
		errs = s.runBatch(batch, errs[:0])
		select {
		case s.kick <- struct{}{}:
		default:
		}
		for i, req := range batch {
			req.done <- errs[i]
			batch[i] = nil
		}
	}
}

// runBatch runs batch in one transaction and returns each request's error.
func (s *Store) runBatch(batch []*request, errs []error) []error {
	w := s.w
	fail := func(err error) []error {
		errs = errs[:0]
		for range batch {
			errs = append(errs, err)
		}
		return errs
	}
	if _, err := w.begin.Exec(); err != nil {
		// The database is locked by another process past the busy
		// timeout, or cannot be written now: trying again may succeed.
		return fail(fmt.Errorf("begin transaction: %w (%w)", err, store.ErrUnavailable))
	}
	s.transactions.Add(1)
	s.writes.Add(int64(len(batch)))
	if n := int64(len(batch)); n > s.maxBatch.Load() {
		s.maxBatch.Store(n) // only the writer goroutine stores
	}
	if len(batch) == 1 {
		// Alone in its transaction, a request needs no savepoint: its
		// failure rolls the transaction back.
		return s.runOne(batch[0], errs)
	}
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := w.savepoint.Exec(); err != nil {
			w.abort()
			return fail(fmt.Errorf("savepoint: %w", err))
		}
		w.now = time.Now()
		err := w.run(req.fn)
		if err != nil {
			if _, rerr := w.rollbackTo.Exec(); rerr != nil {
				// The transaction itself is gone (I/O error, disk full):
				// nothing in this batch was written.
				w.abort()
				return fail(fmt.Errorf("%w (then rollback: %w)", err, rerr))
			}
		}
		if _, rerr := w.release.Exec(); rerr != nil {
			w.abort()
			return fail(fmt.Errorf("release savepoint: %w", rerr))
		}
		errs = append(errs, err)
	}
	return s.commit(errs, fail)
}

// runOne runs a request alone in the transaction runBatch began.
func (s *Store) runOne(req *request, errs []error) []error {
	err := req.ctx.Err()
	if err == nil {
		s.w.now = time.Now()
		err = s.w.run(req.fn)
	}
	if err != nil {
		s.w.abort()
		return append(errs, err)
	}
	return s.commit(append(errs, nil), func(err error) []error { return append(errs[:0], err) })
}

// commit commits the writer's transaction and returns errs, or fail's
// errors if the commit fails.
func (s *Store) commit(errs []error, fail func(error) []error) []error {
	w := s.w
	if _, err := w.commit.Exec(); err != nil {
		w.abort()
		return fail(fmt.Errorf("commit: %w (%w)", err, store.ErrUnavailable))
	}
	_ = s.conn.Raw(func(dc any) error {
		if st, ok := dc.(sqlitedrv.DBStatus); ok {
			if n, _, err := st.Status(sqlitedrv.DBStatusCacheWrite, true); err == nil {
				s.pages.Add(int64(n))
			}
		}
		return nil
	})
	return errs
}

// setWAL switches the database to WAL mode. The mode persists in the file,
// so usually there is nothing to do. Switching needs an exclusive lock and
// SQLite does not wait for it (the busy timeout does not apply), so when two
// processes open a new file at once the loser retries until the timeout.
func setWAL(ctx context.Context, c *sql.Conn, timeout time.Duration) (string, error) {
	var mode string
	if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return "", err
	}
	if strings.EqualFold(mode, "wal") {
		return mode, nil
	}
	deadline := time.Now().Add(timeout)
	for {
		err := c.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(deadline) {
			return mode, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
