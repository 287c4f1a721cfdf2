//go:build !race

package main

// raceEnabled: the race detector is on (see skipUnderRace).
const raceEnabled = false
