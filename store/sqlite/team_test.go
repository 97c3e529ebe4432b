package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/swarmrt/swarm/store"
	"github.com/swarmrt/swarm/store/storetest"
)

const teamChildEnv = "SWARM_SQLITE_TEST_TEAM_CHILD_DB"

// TestTaskClaimCrossProcess: two processes race to claim every task of
// one board on one file; each task is won once.
func TestTaskClaimCrossProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	storetest.TaskClaimProcesses(t, open(t, path), "TestTaskClaimChild", teamChildEnv, path)
}

// TestTaskClaimChild is the other process of TestTaskClaimCrossProcess;
// it does nothing unless started by it.
func TestTaskClaimChild(t *testing.T) {
	storetest.TaskClaimChild(t, teamChildEnv, func(t *testing.T, v string) store.Store { return open(t, v) })
}

// TestTeamsFourHandles: claimers through four Stores on one file (four
// processes) race for each task: exactly one wins every time; adders
// through four Stores fill one board: its IDs are dense and unique.
func TestTeamsFourHandles(t *testing.T) {
	hs := handles(t, 4)
	storetest.TeamsAcrossHandles(t, hs)
}

// BenchmarkTaskBoard: four Stores on one file add to one board, then race
// to claim its tasks.
func BenchmarkTaskBoard(b *testing.B) {
	storetest.BenchmarkTaskBoard(b, handles(b, 4))
}

// TestTeamsReopen: boards and requests are in the file, not the handle.
func TestTeamsReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	storetest.TeamsReopen(t, func(t *testing.T) store.Store { return open(t, path) })
}
