//go:build race

package verbs_test

// raceEnabled reports a -race build, whose sync.Pool drops items on
// purpose and so allocates.
const raceEnabled = true
