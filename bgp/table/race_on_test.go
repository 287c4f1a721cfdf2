//go:build race

package table

// raceEnabled: the race detector is on (see skipUnderRace).
const raceEnabled = true
