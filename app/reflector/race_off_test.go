//go:build !race

package reflector

// raceEnabled: the race detector is on (see skipUnderRace).
const raceEnabled = false
