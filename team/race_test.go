//go:build race

package team_test

// raceEnabled: the race detector slows the runtime and the SQL drivers down
// many times, so the longest team cases run fewer rounds under it.
const raceEnabled = true
