//go:build race

package conn

// raceEnabled reports a -race build. The race runtime makes sync.Pool
// drop items at random, and x/net's sendmmsg scratch lives in one, so the
// zero-allocation assertions only hold without it.
const raceEnabled = true
