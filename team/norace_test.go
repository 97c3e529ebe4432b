//go:build !race

package team_test

const raceEnabled = false
