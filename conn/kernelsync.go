//go:build !race

package conn

// Without the race detector, the kernel's own ordering of send and receive
// needs no annotation (see kernelsync_race.go).
func raceRelease() {}
func raceAcquire() {}
