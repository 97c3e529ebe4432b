// Package eval evaluates swarms: eval sets of cases with expectations
// (output, trajectory, forbidden calls, bounds, rubrics for a judge
// model), scorers, durable eval runs, and comparisons between
// configurations.
//
// An eval run is a run of the runtime like any other: each case's run is
// a child run, each judge call a journaled step, so an eval run killed
// halfway continues where it stopped and pays for no finished case or
// judge call again.
package eval
