//go:build race

package conn

// raceEnabled reports a -race build. The race runtime makes sync.Pool
// drop items at random (the engine's packet buffers live in pools, and
// x/net's batch scratch off Linux), so the zero-allocation assertions only
// hold without it.
const raceEnabled = true
