package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/swarmrt/swarm/compact"
	"github.com/swarmrt/swarm/model"
	"github.com/swarmrt/swarm/store"
)

// Snapshots bound replay (design guideline 6). A run is recovered by
// replaying its journal: load reads every record, and the strategy walks
// from its first step, taking recorded outcomes, to the first step without
// one. For a run that lives long (a conversation of thousands of messages,
// a teammate woken thousands of times, a loop of many rounds) both grow
// with the journal. So at the boundaries where a strategy's state is small
// and complete (the start of a round of the simple loop, of a user message
// of a conversation, of a piece of work of a team member) the runner
// snapshots that state, at most every Config.SnapshotEvery records, in a
// store that implements store.Snapshots. Recovery then reads the run's start
// record, its newest snapshot and the records after it, and the strategy
// continues from the snapshot's boundary.
//
// A snapshot is taken at a record S that ends a boundary: every record the
// strategy looks up after the boundary has a sequence number above S, so it
// is in the suffix that load reads. What load derives from records (model
// calls per agent, a lifted budget, child runs) is split at S exactly: the
// snapshot counts the records up to S, load the ones after. What the
// strategy derives as it replays (its messages, a registry search's
// findings, compaction summaries) is taken from the runner as it stands at
// the boundary. A compacted history is snapshotted without what its
// summary replaces (compact.Stream.Drop), so it stays bounded.

// snapshotVersion is the layout of runSnap; a snapshot of another layout is
// ignored and the journal replayed from the start. Version 2 holds the
// histories without what their compaction dropped (compact.Stream.Off); a
// snapshot of version 1 is one whose compactions dropped nothing, so it is
// read too. Version 3 holds the state of a Strategy in State (a team
// member's was at the top level before); a snapshot of version 2 is read
// as one whose State is its top level.
const snapshotVersion = 3

// The strategies that snapshot, as runSnap.Kind.
const (
	snapSimple = "simple"
)

// runSnap is a run's state at a boundary (see above), journal records up
// to Seq included.
type runSnap struct {
	V    int    `json:"v"`
	Kind string `json:"kind"`
	Seq  int64  `json:"seq"`

	// The runner's.
	Calls     map[string]int             `json:"calls,omitempty"`
	Lifted    bool                       `json:"lifted,omitempty"`
	Spawned   bool                       `json:"spawned,omitempty"`
	Found     []string                   `json:"found,omitempty"`
	Compacted map[string]*compact.Stream `json:"compacted,omitempty"`
	// OutParts are the parts tools added to the run's result.
	OutParts []keyedParts `json:"out_parts,omitempty"`

	// The strategy's: the next round (simple) or message / piece of work
	// (conversation, member), and its history.
	Next int             `json:"next"`
	Msgs []model.Message `json:"msgs,omitempty"`
	// Log is a conversation's (version 2; its strategy keeps it in
	// State since).
	Log    json.RawMessage `json:"log,omitempty"`
	Active string          `json:"active,omitempty"`
	Shared json.RawMessage `json:"shared,omitempty"`
	// Claims are the tasks a team member's journal says it claimed
	// (version 2; a member keeps them in State since).
	Claims []int64 `json:"claims,omitempty"`
	// State is a Strategy's (Driver.Checkpoint).
	State json.RawMessage `json:"state,omitempty"`
}

// readJournal reads what load needs of run's journal: all of it, or, when
// the run has a usable snapshot, its start record and the records after
// the snapshot (r.snap is then set).
func (r *runner) readJournal(ctx context.Context, run store.Run) ([]store.Record, error) {
	if sn := r.loadSnapshot(ctx, run); sn != nil {
		head, err := r.rt.store.Read(ctx, r.id, 0, 1)
		if err != nil {
			return nil, err
		}
		tail, err := r.rt.store.Read(ctx, r.id, sn.Seq, 0)
		if err != nil {
			return nil, err
		}
		r.snap, r.base, r.snapSeq = sn, sn, sn.Seq
		return append(head, tail...), nil
	}
	return r.rt.store.Read(ctx, r.id, 0, 0)
}

// loadSnapshot returns run's newest snapshot, or nil if it has none that
// this runtime can use. A snapshot that cannot be read only costs a full
// replay, so any failure is nil.
func (r *runner) loadSnapshot(ctx context.Context, run store.Run) *runSnap {
	ss, ok := r.rt.store.(store.Snapshots)
	if !ok || r.rt.cfg.SnapshotEvery < 0 || r.noSnap {
		return nil
	}
	sn, err := ss.Snapshot(ctx, r.id)
	if err != nil {
		if !errors.Is(err, store.ErrNoSnapshot) {
			r.rt.log.Warn("snapshot not read; replaying the whole journal", "run", r.id, "err", err)
		}
		return nil
	}
	var s runSnap
	if err := json.Unmarshal(sn.Data, &s); err != nil || s.V < 1 || s.V > snapshotVersion || s.Seq != sn.Seq || s.Seq < 2 || s.Seq > run.LastSeq {
		r.rt.log.Warn("snapshot not usable; replaying the whole journal", "run", r.id, "err", err)
		return nil
	}
	return &s
}

// restoreRunner applies the runner's part of r.snap, before load counts
// the records after it.
func (r *runner) restoreRunner() {
	s := r.snap
	maps.Copy(r.calls, s.Calls)
	if s.Lifted {
		r.lifted.Store(true)
	}
	if s.Spawned {
		r.spawned.Store(true)
	}
	if len(s.Found) > 0 {
		r.found = map[string]bool{}
		for _, id := range s.Found {
			r.found[id] = true
		}
	}
	r.outParts = slices.Clone(s.OutParts)
	if len(s.Compacted) > 0 {
		r.compacted = map[string]*compact.Stream{}
		for k, c := range s.Compacted {
			if c != nil {
				r.compacted[k] = &compact.Stream{State: c.State, Off: c.Off}
			}
		}
	}
}

// restored returns the snapshot the strategy of kind continues from, or
// nil to start from the first step.
func (r *runner) restored(kind string) *runSnap {
	if r.snap == nil || r.snap.Kind != kind {
		return nil
	}
	return r.snap
}

// boundary returns the sequence number of the record key that ends a
// boundary, and whether this drive appended it (live): then it is the
// newest record, since nothing else is appended at a boundary, and every
// record of the journal as loaded is older. ok is false when key is not
// journaled.
func (r *runner) boundary(key string, appended bool) (seq int64, live, ok bool) {
	if rec, ok := r.recorded[key]; ok {
		return rec.Seq, false, true
	}
	if appended {
		return r.seq.Load(), true, true
	}
	return 0, false, false
}

// checkpoint snapshots the run at a boundary of its strategy: kind's state
// (filled in by fill) after journal record seq (see boundary). It does
// nothing until Config.SnapshotEvery records were added since the newest
// snapshot; a failure is logged and costs only a longer replay.
func (r *runner) checkpoint(ctx context.Context, kind string, seq int64, live bool, fill func(*runSnap)) {
	ss, ok := r.snapDue(ctx, seq)
	if !ok {
		return
	}
	s := runSnap{V: snapshotVersion, Kind: kind, Seq: seq, Calls: map[string]int{}}
	r.mu.Lock()
	if live {
		// Every record this runner knows of is up to seq.
		maps.Copy(s.Calls, r.calls)
		s.Lifted, s.Spawned = r.lifted.Load(), r.spawned.Load()
	}
	s.Found = slices.Sorted(maps.Keys(r.found))
	s.OutParts = slices.Clone(r.outParts)
	for k, cs := range r.compacted {
		// Only the strategy's own histories (at no handoff's path) go on
		// past a boundary: the handoffs of the rounds before it are over.
		if cs.State == nil || !strings.HasSuffix(k, "@") {
			continue
		}
		if s.Compacted == nil {
			s.Compacted = map[string]*compact.Stream{}
		}
		c := *cs
		s.Compacted[k] = &c
	}
	r.mu.Unlock()
	if !live && !r.countUpTo(&s) {
		return
	}
	fill(&s)
	data, err := json.Marshal(s)
	if err == nil {
		err = ss.PutSnapshot(ctx, r.id, store.Snapshot{Seq: seq, Data: data, Time: time.Now()})
	}
	if err != nil {
		r.rt.log.Warn("snapshot not written", "run", r.id, "seq", seq, "err", err)
		return
	}
	r.base, r.snapSeq = &s, seq
}

// snapDue returns the store's snapshots when a snapshot after record seq
// is due: Config.SnapshotEvery records (fewer for a strategy that
// implements strategy.CheckpointEvery) were added since the newest one.
func (r *runner) snapDue(ctx context.Context, seq int64) (store.Snapshots, bool) {
	every := int64(r.rt.cfg.SnapshotEvery)
	if s, ok := r.plan.strategy.(seamStrategy); ok && every > 0 {
		if n := s.s.CheckpointEvery(); n > 0 {
			every = min(every, int64(n))
		}
	}
	ss, ok := r.rt.store.(store.Snapshots)
	if !ok || every < 0 || seq-r.snapSeq < every || ctx.Err() != nil {
		return nil, false
	}
	return ss, true
}

// countUpTo sets what s counts of the records up to s.Seq: those of the
// newest snapshot, plus the loaded records after it. (load counted every
// loaded record, also those after s.Seq.)
func (r *runner) countUpTo(s *runSnap) bool {
	if b := r.base; b != nil {
		maps.Copy(s.Calls, b.Calls)
		s.Lifted, s.Spawned = b.Lifted, b.Spawned
	}
	for _, rec := range r.recorded {
		if rec.Seq <= r.snapSeq || rec.Seq > s.Seq {
			continue
		}
		switch EventType(rec.Type) {
		case EventModelResponse, EventModelError:
			var ev struct {
				Agent string `json:"agent"`
			}
			if json.Unmarshal(rec.Data, &ev) != nil {
				return false
			}
			s.Calls[ev.Agent]++
		case EventHandoffStarted:
			s.Spawned = s.Spawned || strings.Contains(string(rec.Data), `"child":`)
		default:
			// As when replaying: a strategy's own record may say it
			// started child runs.
			s.Spawned = s.Spawned || !engineEvents[EventType(rec.Type)]
		}
		s.Lifted = s.Lifted || strings.HasSuffix(rec.Key, "/budget/resumed")
	}
	return true
}

// snapKindOf names the snapshots of strategy s ("": it takes none).
func snapKindOf(s strategy) string {
	switch s := s.(type) {
	case simpleLoop:
		return snapSimple
	case seamStrategy:
		return s.s.SnapshotKind()
	}
	return ""
}

// reset forgets what load derived from a snapshot and the records after
// it, to load again from the journal's start.
func (r *runner) reset() {
	r.noSnap = true
	r.snap, r.base, r.snapSeq = nil, nil, 0
	r.calls = map[string]int{}
	r.lifted.Store(false)
	r.spawned.Store(false)
	r.mu.Lock()
	r.found, r.compacted, r.outParts = nil, nil, nil
	r.mu.Unlock()
}
