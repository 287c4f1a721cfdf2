//go:build race

package bgp

// raceEnabled: the race detector is on (see skipUnderRace).
const raceEnabled = true
