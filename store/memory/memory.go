// Package memory is an in-memory [store.Store], for tests, benchmarks and
// single-process use where durability does not matter.
//
// Importing the package registers the "memory:" URL scheme with
// [store.Register]; every [store.Open] of "memory:" returns a new, empty
// store.
package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swarmrt/swarm/store"
)

func init() {
	store.Register("memory", func(context.Context, string) (store.Store, error) {
		return New(), nil
	})
}

// ErrClosed is returned by every method of a closed Store.
var ErrClosed = errors.New("memory store is closed")

const numShards = 64

// Store is an in-memory store.Store. The zero value is not usable; call New.
//
// Runs live in a sharded map; each run has its own mutex, so appends to
// different runs do not contend. Records, messages and byte slices are copied
// on the way in and on the way out, so callers never alias internal state.
type Store struct {
	seed   maphash.Seed
	shards [numShards]shard
	// order numbers runs in creation order (for newest/oldest first).
	order atomic.Uint64
	// msgID numbers inbox messages; IDs are never reused.
	msgID  atomic.Int64
	closed atomic.Bool
	hub    store.Hub
	// deleteMu serializes deletions (see DeleteRun).
	deleteMu sync.Mutex
	teamMap
	bankMap
	secretMap
	blobMap
}

var (
	_ store.Reserver  = (*Store)(nil)
	_ store.Store     = (*Store)(nil)
	_ store.Watcher   = (*Store)(nil)
	_ store.Mailboxes = (*Store)(nil)
)

type shard struct {
	mu   sync.RWMutex
	runs map[string]*run
}

type run struct {
	mu      sync.Mutex
	order   uint64
	row     store.Run
	journal []store.Record
	keys    map[string]struct{}
	inbox   []store.Message
	pool    store.Pool
	mbox    *mailbox // nil until the first mail
	snap    *store.Snapshot
}

// New returns an empty in-memory store.
func New() *Store {
	s := &Store{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].runs = make(map[string]*run)
	}
	return s
}

func (s *Store) shard(id string) *shard {
	return &s.shards[maphash.String(s.seed, id)%numShards]
}

func (s *Store) lookup(id string) (*run, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	sh := s.shard(id)
	sh.mu.RLock()
	r := sh.runs[id]
	sh.mu.RUnlock()
	if r == nil {
		return nil, fmt.Errorf("run %q: %w", id, store.ErrNotFound)
	}
	return r, nil
}

// all returns every run, in no particular order.
func (s *Store) all() []*run {
	var out []*run
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		for _, r := range sh.runs {
			out = append(out, r)
		}
		sh.mu.RUnlock()
	}
	return out
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, r store.Run, owner string, lease time.Duration, records []store.Record) (store.Lease, error) {
	l, _, err := s.CreateReserving(ctx, r, owner, lease, records, store.Pool{})
	return l, err
}

// CreateReserving implements store.Reserver.
func (s *Store) CreateReserving(ctx context.Context, r store.Run, owner string, lease time.Duration, records []store.Record, d store.Pool) (store.Lease, store.Pool, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, store.Pool{}, err
	}
	if s.closed.Load() {
		return store.Lease{}, store.Pool{}, ErrClosed
	}
	if r.ID == "" {
		return store.Lease{}, store.Pool{}, errors.New("create run: empty id")
	}
	if err := store.CheckKeys(r.ID, records); err != nil {
		return store.Lease{}, store.Pool{}, err
	}
	if err := store.CheckSpend(r.ID, d); err != nil {
		return store.Lease{}, store.Pool{}, err
	}
	if len(r.Blobs) > 0 {
		// The run's blobs are kept and referred to with its creation.
		if err := store.CheckRunBlobs(r.ID, r.Blobs); err != nil {
			return store.Lease{}, store.Pool{}, err
		}
		s.deleteMu.Lock()
		defer s.deleteMu.Unlock()
		s.blobsMu.Lock()
		defer s.blobsMu.Unlock()
		for _, b := range r.Blobs {
			if len(b.Data) == 0 && s.blobs[b.Hash] == nil {
				return store.Lease{}, store.Pool{}, fmt.Errorf("create run %q: blob %q: %w", r.ID, b.Hash, store.ErrNoBlob)
			}
		}
	}
	now := time.Now()
	nr := &run{}
	row := r
	row.State = store.Running
	row.Result = cloneBytes(r.Result)
	row.Owner = owner
	row.Epoch = 1
	row.LeaseUntil = time.Time{}
	if owner != "" {
		row.LeaseUntil = now.Add(lease)
	}
	row.LastSeq = 0
	row.CreatedAt = now
	row.UpdatedAt = now
	nr.row = row
	nr.keys = make(map[string]struct{}, len(records))
	nr.appendRecords(records)
	nr.pool = store.Pool{Calls: max(d.Calls, 0), Tools: max(d.Tools, 0), Tokens: d.Tokens, Cost: d.Cost, Lifted: d.Lifted}
	pool := nr.pool

	sh := s.shard(r.ID)
	sh.mu.Lock()
	if _, dup := sh.runs[r.ID]; dup {
		sh.mu.Unlock()
		return store.Lease{}, store.Pool{}, fmt.Errorf("create run %q: %w", r.ID, store.ErrExists)
	}
	nr.order = s.order.Add(1)
	sh.runs[r.ID] = nr
	sh.mu.Unlock()
	for _, b := range r.Blobs {
		s.keepBlob(r.ID, b)
	}
	s.hub.PublishCreate(r.ID, owner)
	return store.Lease{RunID: r.ID, Owner: owner, Epoch: 1}, pool, nil
}

// appendRecords copies records into the journal, numbering them. The caller
// holds r.mu (or owns r exclusively) and has checked the keys.
func (r *run) appendRecords(records []store.Record) {
	if len(records) == 0 {
		return
	}
	// One allocation for all payloads of the batch.
	n := 0
	for i := range records {
		n += len(records[i].Data)
	}
	var buf []byte
	if n > 0 {
		buf = make([]byte, 0, n)
	}
	r.journal = slices.Grow(r.journal, len(records))
	seq := r.row.LastSeq
	for _, rec := range records {
		seq++
		rec.Seq = seq
		if rec.Data != nil {
			start := len(buf)
			buf = append(buf, rec.Data...)
			rec.Data = buf[start:len(buf):len(buf)]
		}
		r.journal = append(r.journal, rec)
		r.keys[rec.Key] = struct{}{}
	}
	r.row.LastSeq = seq
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Run, error) {
	if err := ctx.Err(); err != nil {
		return store.Run{}, err
	}
	r, err := s.lookup(id)
	if err != nil {
		return store.Run{}, err
	}
	r.mu.Lock()
	row := r.snapshot()
	r.mu.Unlock()
	return row, nil
}

// snapshot copies the row; the caller holds r.mu.
func (r *run) snapshot() store.Run {
	row := r.row
	row.Result = cloneBytes(row.Result)
	return row
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, f store.Filter) ([]store.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	type hit struct {
		order uint64
		r     *run
	}
	var hits []hit
	before := uint64(math.MaxUint64)
	if f.Before != "" {
		b, err := s.lookup(f.Before)
		if err != nil {
			return []store.Run{}, nil // an unknown id matches no run
		}
		before = b.order
	}
	for _, r := range s.all() {
		r.mu.Lock()
		ok := r.order < before && matches(r.row, f)
		r.mu.Unlock()
		if ok {
			hits = append(hits, hit{r.order, r})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(b.order, a.order) })
	off := max(f.Offset, 0)
	if off >= len(hits) {
		return []store.Run{}, nil
	}
	hits = hits[off:]
	if f.Limit > 0 && len(hits) > f.Limit {
		hits = hits[:f.Limit]
	}
	out := make([]store.Run, 0, len(hits))
	for _, h := range hits {
		h.r.mu.Lock()
		out = append(out, h.r.snapshot())
		h.r.mu.Unlock()
	}
	return out, nil
}

// matches reports whether row passes f's filters other than Before.
func matches(row store.Run, f store.Filter) bool {
	return (f.Swarm == "" || row.Swarm == f.Swarm) &&
		(f.State == "" || row.State == f.State) &&
		(f.Parent == "" || row.Parent == f.Parent) &&
		(f.Parent != "" || !f.TopLevel || row.Parent == "") &&
		strings.HasPrefix(row.ID, f.IDPrefix) &&
		(f.Since.IsZero() || !row.CreatedAt.Before(f.Since)) &&
		(f.Until.IsZero() || row.CreatedAt.Before(f.Until))
}

// Read implements store.Store.
func (s *Store) Read(ctx context.Context, id string, after int64, limit int) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Seq i+1 is at index i.
	start := int(min(max(after, 0), int64(len(r.journal))))
	src := r.journal[start:]
	if limit > 0 && len(src) > limit {
		src = src[:limit]
	}
	out := make([]store.Record, len(src))
	copy(out, src)
	n := 0
	for i := range out {
		n += len(out[i].Data)
	}
	if n > 0 {
		buf := make([]byte, 0, n)
		for i := range out {
			if out[i].Data != nil {
				start := len(buf)
				buf = append(buf, out[i].Data...)
				out[i].Data = buf[start:len(buf):len(buf)]
			}
		}
	}
	return out, nil
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, l store.Lease, records []store.Record, u store.Update) (_ int64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if u.State != "" && !u.State.Valid() {
		return 0, fmt.Errorf("append to run %q: invalid state %q", l.RunID, u.State)
	}
	if err := store.CheckKeys(l.RunID, records); err != nil {
		return 0, err
	}
	r, err := s.lookup(l.RunID)
	if err != nil {
		return 0, err
	}
	woke := false
	defer func() { // after the unlock below
		if err == nil {
			s.hub.PublishAppend(l.RunID, u)
			if woke {
				s.hub.Publish(store.Change{RunID: l.RunID, Kind: store.ChangeRunnable})
			}
		}
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.holds(l) {
		return 0, fmt.Errorf("append to run %q (owner %q, epoch %d): %w", l.RunID, l.Owner, l.Epoch, store.ErrLeaseLost)
	}
	for i := range records {
		if _, dup := r.keys[records[i].Key]; dup {
			return 0, fmt.Errorf("append to run %q: key %q: %w", l.RunID, records[i].Key, store.ErrConflict)
		}
	}
	r.appendRecords(records)
	r.apply(u)
	r.row.UpdatedAt = time.Now()
	if u.AckInbox > 0 {
		r.inbox = slices.DeleteFunc(r.inbox, func(m store.Message) bool { return m.ID <= u.AckInbox })
	}
	r.ackMail(u.AckMail)
	// Idle with mail unread (posted while it worked): runnable instead.
	if store.WaitsForMail(r.row.State, r.row.Reason) && r.mbox != nil && r.mbox.acked < int64(len(r.mbox.mails)) {
		woke = r.deliver(r.row.UpdatedAt, true)
	}
	return r.row.LastSeq, nil
}

// holds reports whether l is the current lease; the caller holds r.mu.
func (r *run) holds(l store.Lease) bool {
	return r.row.Owner != "" && r.row.Owner == l.Owner && r.row.Epoch == l.Epoch
}

// apply applies u to the row; the caller holds r.mu.
func (r *run) apply(u store.Update) {
	row := &r.row
	if u.State != "" {
		row.State = u.State
	}
	if u.Turn != 0 {
		row.Turn = u.Turn
	}
	if u.MaxTurns != 0 {
		row.MaxTurns = u.MaxTurns
	}
	if u.Agent != "" {
		row.Agent = u.Agent
	}
	if len(u.Result) > 0 {
		row.Result = cloneBytes(u.Result)
	}
	if reason, ok := u.NewReason(); ok {
		row.Reason = reason
	}
	if u.Usage != nil {
		row.Usage = *u.Usage
	}
	if u.Release || row.State.Terminal() || row.State == store.Paused {
		row.Owner = ""
		row.LeaseUntil = time.Time{}
	}
}

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, id, owner string, lease time.Duration) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, err
	}
	if owner == "" {
		return store.Lease{}, fmt.Errorf("claim run %q: empty owner", id)
	}
	r, err := s.lookup(id)
	if err != nil {
		return store.Lease{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	row := &r.row
	if row.State != store.Running {
		return store.Lease{}, fmt.Errorf("claim run %q in state %s: %w", id, row.State, store.ErrInvalidState)
	}
	if row.Owner != "" && row.Owner != owner && row.LeaseUntil.After(now) {
		return store.Lease{}, fmt.Errorf("claim run %q: held by %q: %w", id, row.Owner, store.ErrLeased)
	}
	return r.claim(owner, now, lease), nil
}

// claim leases the run to owner; the caller holds r.mu.
func (r *run) claim(owner string, now time.Time, lease time.Duration) store.Lease {
	row := &r.row
	var from string
	var until time.Time
	if row.Owner != "" && row.Owner != owner {
		from, until = row.Owner, row.LeaseUntil
	}
	row.Owner = owner
	row.Epoch++
	row.LeaseUntil = now.Add(lease)
	row.UpdatedAt = now
	return store.Lease{RunID: row.ID, Owner: owner, Epoch: row.Epoch, From: from, FromUntil: until}
}

// ClaimExpired implements store.Store. A limit <= 0 means no limit.
func (s *Store) ClaimExpired(ctx context.Context, owner string, lease time.Duration, limit int) ([]store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if owner == "" {
		return nil, errors.New("claim expired runs: empty owner")
	}
	// The claimable runs, by lease expiry (zero when unowned), then age.
	type due struct {
		until time.Time
		r     *run
	}
	var dues []due
	for _, r := range s.all() {
		r.mu.Lock()
		if r.row.State == store.Running && (r.row.Owner == "" || !r.row.LeaseUntil.After(time.Now())) {
			dues = append(dues, due{r.row.LeaseUntil, r})
		}
		r.mu.Unlock()
	}
	slices.SortFunc(dues, func(a, b due) int {
		return cmp.Or(a.until.Compare(b.until), cmp.Compare(a.r.order, b.r.order))
	})
	if limit > 0 && len(dues) > limit {
		dues = dues[:limit]
	}
	slices.SortFunc(dues, func(a, b due) int { return cmp.Compare(a.r.order, b.r.order) })
	var out []store.Lease
	for _, d := range dues {
		r := d.r
		r.mu.Lock()
		now := time.Now()
		// Checked again: the run may have changed since.
		if r.row.State == store.Running && (r.row.Owner == "" || !r.row.LeaseUntil.After(now)) {
			out = append(out, r.claim(owner, now, lease))
		}
		r.mu.Unlock()
	}
	return out, nil
}

// Renew implements store.Store.
func (s *Store) Renew(ctx context.Context, owner string, lease time.Duration) (store.Renewal, error) {
	if err := ctx.Err(); err != nil {
		return store.Renewal{}, err
	}
	if s.closed.Load() {
		return store.Renewal{}, ErrClosed
	}
	var out store.Renewal
	if owner == "" {
		return out, nil
	}
	now := time.Now()
	for _, r := range s.all() {
		r.mu.Lock()
		if r.row.Owner == owner && r.row.State == store.Running {
			r.row.LeaseUntil = now.Add(lease)
			out.Held = append(out.Held, r.row.ID)
			if len(r.inbox) > 0 {
				out.Pending = append(out.Pending, r.row.ID)
			}
		}
		r.mu.Unlock()
	}
	slices.Sort(out.Held)
	slices.Sort(out.Pending)
	return out, nil
}

// Release implements store.Store. Releasing a lease that is no longer
// current fails with store.ErrLeaseLost and changes nothing.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := s.lookup(l.RunID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if !r.holds(l) {
		r.mu.Unlock()
		return fmt.Errorf("release run %q (owner %q, epoch %d): %w", l.RunID, l.Owner, l.Epoch, store.ErrLeaseLost)
	}
	r.row.Owner = ""
	r.row.LeaseUntil = time.Time{}
	r.row.UpdatedAt = time.Now()
	r.mu.Unlock()
	s.hub.Publish(store.Change{RunID: l.RunID, Kind: store.ChangeRunnable})
	return nil
}

// Send implements store.Store. The store assigns m.ID, and m.Time when it is
// zero.
func (s *Store) Send(ctx context.Context, id string, m store.Message) (_ store.Message, err error) {
	if err := ctx.Err(); err != nil {
		return store.Message{}, err
	}
	if err := store.CheckMessage(id, m); err != nil {
		return store.Message{}, err
	}
	m.Parts = slices.Clone(m.Parts) // the caller's slice is not kept
	r, err := s.lookup(id)
	if err != nil {
		return store.Message{}, err
	}
	woke := false
	defer func() { // after the unlock below
		if err == nil {
			s.hub.PublishSend(id, woke)
		}
	}()
	r.mu.Lock()
	defer r.mu.Unlock()
	row := &r.row
	switch {
	case store.PauseNotCurrent(m, row.State, row.LastSeq):
		return store.Message{}, fmt.Errorf("resume run %q at pause %d (state %s, last record %d): %w", id, m.Pause, row.State, row.LastSeq, store.ErrPauseNotCurrent)
	case m.Kind == store.MsgResume && row.State != store.Paused,
		m.Kind == store.MsgStop && row.State.Terminal():
		return store.Message{}, fmt.Errorf("send %s to run %q in state %s: %w", m.Kind, id, row.State, store.ErrInvalidState)
	}
	now := time.Now()
	if m.Time.IsZero() {
		m.Time = now
	}
	m.ID = s.msgID.Add(1)
	r.inbox = append(r.inbox, m)
	woke = r.deliver(now, row.State == store.Paused)
	return m, nil
}

// deliver notes that a message or mail reached the run at now and, if
// wake, makes it Running and unowned (runnable), which it reports. The
// caller holds r.mu.
func (r *run) deliver(now time.Time, wake bool) (woke bool) {
	row := &r.row
	if wake {
		woke = true
		row.State = store.Running
		row.Owner = ""
		row.LeaseUntil = time.Time{}
	}
	row.UpdatedAt = now
	return woke
}

// Inbox implements store.Store.
func (s *Store) Inbox(ctx context.Context, id string) ([]store.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.inbox), nil
}

// Spend implements store.Store.
func (s *Store) Spend(ctx context.Context, id string, d store.Pool) (store.Pool, error) {
	if err := ctx.Err(); err != nil {
		return store.Pool{}, err
	}
	if err := store.CheckSpend(id, d); err != nil {
		return store.Pool{}, err
	}
	r, err := s.lookup(id)
	if err != nil {
		return store.Pool{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pool.Calls = max(r.pool.Calls+d.Calls, 0)
	r.pool.Tools = max(r.pool.Tools+d.Tools, 0)
	r.pool.Tokens += d.Tokens
	r.pool.Cost += d.Cost
	r.pool.Lifted = r.pool.Lifted || d.Lifted
	return r.pool, nil
}

// Close marks the store closed; later calls fail with ErrClosed. The data is
// dropped once the Store is no longer referenced.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.hub.Close()
	return nil
}

// Watch implements store.Watcher: it reports the changes made through this
// Store.
func (s *Store) Watch(ctx context.Context, fn func(store.Change)) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.hub.Watch(ctx, fn)
}

func cloneBytes[T ~[]byte](b T) T {
	if b == nil {
		return nil
	}
	return append(T(make([]byte, 0, len(b))), b...)
}

// PutSnapshot implements store.Snapshots.
func (s *Store) PutSnapshot(ctx context.Context, id string, sn store.Snapshot) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := s.lookup(id)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := store.CheckSnapshot(id, sn, r.row.LastSeq); err != nil {
		return err
	}
	if r.snap == nil || sn.Seq > r.snap.Seq {
		sn.Data = cloneBytes(sn.Data)
		r.snap = &sn
	}
	return nil
}

// Snapshot implements store.Snapshots.
func (s *Store) Snapshot(ctx context.Context, id string) (store.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return store.Snapshot{}, err
	}
	r, err := s.lookup(id)
	if err != nil {
		return store.Snapshot{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.snap == nil {
		return store.Snapshot{}, fmt.Errorf("run %q: %w", id, store.ErrNoSnapshot)
	}
	sn := *r.snap
	sn.Data = cloneBytes(sn.Data)
	return sn, nil
}
