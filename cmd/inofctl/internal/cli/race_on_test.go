//go:build race

package cli_test

// raceEnabled: the race detector is on (GoBGP races inside; see
// skipUnderRace).
const raceEnabled = true
