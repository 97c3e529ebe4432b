//go:build race

package storetest

// raceEnabled: the race detector slows the SQL stores' drivers down many
// times, so the largest cases run smaller under it.
const raceEnabled = true
