// Package sqlite is a [store.Store] in an embedded SQLite database, using the
// pure-Go driver modernc.org/sqlite.
//
// Importing the package registers the "sqlite:PATH" URL scheme with
// [store.Register].
//
// The database runs in WAL mode. Reads use a pool of read-only connections.
// All writes go through one connection and commit in groups: the caller that
// finds the connection free runs its write at once, in its own goroutine;
// writes that arrive meanwhile queue, and when its transaction has committed
// the first of them takes every queued write (up to a cap) and runs them in
// one BEGIN IMMEDIATE transaction, each inside its own SAVEPOINT so that a
// failed request (a conflict, a lost lease) is rolled back alone, commits
// once and then answers every request. Thousands of concurrent appends thus
// share a handful of transactions and fsyncs, and a write nobody competes
// with costs no switch of goroutines.
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
	conn *sql.Conn // the writer connection, used only by the leader of the writes
	ckpt *sql.Conn // the checkpointer's connection
	w    *writer
	rdb  *sql.DB // read-only pool
	rd   readStmts

	closeMu  sync.RWMutex // guards closed and the start of writes
	closed   bool
	inflight sync.WaitGroup // writes started and not yet answered

	wmu     sync.Mutex // guards leading and queue
	leading bool       // a caller is running transactions (the leader)
	queue   []*request // requests waiting for the next transaction

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
	_ store.Store    = (*Store)(nil)
	_ store.Reserver = (*Store)(nil)
	_ store.Watcher  = (*Store)(nil)
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

	s.kick = make(chan struct{}, 1)
	s.stop = make(chan struct{})
	s.ckptDone = make(chan struct{})
	go s.checkpointLoop()
	return s, nil
}

// checkpointInterval is the shortest time between two background
// checkpoints. Each checkpoint syncs the database file; the pages that many
// commits rewrote are copied back once.
const checkpointInterval = time.Second

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

// Close waits for pending writes, stops the checkpointer and closes the
// database. Later calls fail with ErrClosed; Close itself may be called more
// than once.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.closeMu.Lock()
		s.closed = true
		s.closeMu.Unlock()
		s.inflight.Wait()
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

// request is one write, run inside a savepoint of a group commit.
type request struct {
	ctx  context.Context
	fn   func(w *writer) error
	done chan error // the outcome, or errLead
	// batch is set with errLead: the requests this one's caller commits,
	// itself first.
	batch []*request
}

// errLead tells a waiting request that its caller is now the leader, to
// commit request.batch.
var errLead = errors.New("lead")

var donePool = sync.Pool{New: func() any { return make(chan error, 1) }}

// write runs fn on the writer connection and waits for its transaction to
// commit. fn's results are valid only when write returns nil. Once the
// request is queued, write waits for its outcome even if ctx is cancelled,
// so that the error it returns always tells whether the write happened.
//
// Group commit without a writer goroutine: a caller that finds nobody
// writing becomes the leader and runs its request in its own goroutine, so
// that a write nobody competes with costs no goroutine switch. Requests that
// arrive meanwhile queue; when its transaction has committed, the leader
// answers its batch and hands the queue, as the next batch, to the first
// queued caller, which leads in turn.
func (s *Store) write(ctx context.Context, fn func(w *writer) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return ErrClosed
	}
	s.inflight.Add(1)
	s.closeMu.RUnlock()
	defer s.inflight.Done()
	req := &request{ctx: ctx, fn: fn}
	s.wmu.Lock()
	if s.leading {
		req.done = donePool.Get().(chan error)
		s.queue = append(s.queue, req)
		s.wmu.Unlock()
		err := <-req.done
		if err != errLead {
			donePool.Put(req.done)
			return err
		}
		donePool.Put(req.done)
	} else {
		s.leading = true
		s.wmu.Unlock()
		req.batch = []*request{req}
	}
	return s.lead(req)
}

// lead commits req.batch (req first) in one transaction, answers the other
// requests of the batch, passes the lead on and returns req's outcome.
func (s *Store) lead(req *request) error {
	batch := req.batch
	req.batch = nil
	errs := s.runBatch(batch, make([]error, 0, len(batch)))
	select {
	case s.kick <- struct{}{}:
	default:
	}
	s.wmu.Lock()
	if len(s.queue) == 0 {
		s.leading = false
	} else {
		n := min(len(s.queue), s.cfg.maxBatch)
		next := s.queue[0]
		next.batch = append([]*request(nil), s.queue[:n]...)
		s.queue = append(s.queue[:0], s.queue[n:]...)
		next.done <- errLead
	}
	s.wmu.Unlock()
	for i, r := range batch[1:] {
		r.done <- errs[i+1]
	}
	return errs[0]
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
		s.maxBatch.Store(n) // only the leader stores
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
