package postgres_test

import (
	"testing"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/postgres/pgtest"
	"github.com/swarmrt/swarm/store/storetest"
)

const teamChildEnv = "SWARM_POSTGRES_TEST_TEAM_CHILD_URL"

// TestTaskClaimCrossProcess: two processes (two nodes) race to claim
// every task of one board; each task is won once.
func TestTaskClaimCrossProcess(t *testing.T) {
	url := pgtest.URL(t, "pool_max_conns=4")
	s := open(t, url)
	defer s.Close()
	storetest.TaskClaimProcesses(t, s, "TestTaskClaimChild", teamChildEnv, url)
}

// TestTaskClaimChild is the other process of TestTaskClaimCrossProcess;
// it does nothing unless started by it.
func TestTaskClaimChild(t *testing.T) {
	storetest.TaskClaimChild(t, teamChildEnv, func(t *testing.T, v string) store.Store { return open(t, v) })
}

// TestTeamsFourHandles: claimers on four nodes (a pool each) race for
// each task: exactly one wins every time; adders on four nodes fill one
// board: its IDs are dense and unique.
func TestTeamsFourHandles(t *testing.T) {
	hs := handles(t, 4)
	storetest.TeamsAcrossHandles(t, hs)
}

// BenchmarkTaskBoard: four nodes add to one board, then race to claim
// its tasks.
func BenchmarkTaskBoard(b *testing.B) {
	storetest.BenchmarkTaskBoard(b, handles(b, 4))
}

// TestTeamsReopen: boards and requests are in the database, not the
// handle.
func TestTeamsReopen(t *testing.T) {
	url := pgtest.URL(t, "pool_max_conns=4")
	storetest.TeamsReopen(t, func(t *testing.T) store.Store { return open(t, url) })
}
