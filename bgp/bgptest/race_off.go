//go:build !race

package bgptest

// raceEnabled: the race detector is on (see SkipUnderRace).
const raceEnabled = false
