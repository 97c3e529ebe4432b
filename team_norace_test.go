//go:build !race

package swarm_test

const raceEnabled = false
