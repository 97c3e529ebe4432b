package scripted

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// tracker records, per run and agent, one more than the highest Call served.
// Runs are spread over shards so that concurrent runs rarely share a lock,
// and a run already known costs one read lock and one atomic operation.
type tracker struct {
	seed   maphash.Seed
	shards [64]shard
}

type shard struct {
	mu   sync.RWMutex
	runs map[string]*runState
	_    [32]byte // keep shards on separate cache lines
}

type runState struct {
	next []atomic.Int64 // indexed by agentScript.index
}

func newTracker() *tracker {
	t := &tracker{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].runs = make(map[string]*runState)
	}
	return t
}

func (t *tracker) shard(runID string) *shard {
	return &t.shards[maphash.String(t.seed, runID)%uint64(len(t.shards))]
}

// record notes that the run served step call of the agent with index agent.
func (t *tracker) record(runID string, agent, agents, call int) {
	sh := t.shard(runID)
	sh.mu.RLock()
	r := sh.runs[runID]
	sh.mu.RUnlock()
	if r == nil {
		sh.mu.Lock()
		if r = sh.runs[runID]; r == nil {
			r = &runState{next: make([]atomic.Int64, agents)}
			sh.runs[runID] = r
		}
		sh.mu.Unlock()
	}
	n := int64(call) + 1
	p := &r.next[agent]
	for {
		old := p.Load()
		if old >= n || p.CompareAndSwap(old, n) {
			return
		}
	}
}

func (t *tracker) get(runID string) *runState {
	sh := t.shard(runID)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.runs[runID]
}

func (t *tracker) forget(runID string) {
	sh := t.shard(runID)
	sh.mu.Lock()
	delete(sh.runs, runID)
	sh.mu.Unlock()
}

// each calls f for every run, one shard at a time.
func (t *tracker) each(f func(runID string, r *runState)) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.RLock()
		for id, r := range sh.runs {
			f(id, r)
		}
		sh.mu.RUnlock()
	}
}
