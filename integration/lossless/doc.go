// Package lossless is a test suite: it holds the whole-fabric test of the
// lossless profile's distribution: a profile set with inofctl on a reflector
// travels as a configuration record to the switch agents, inof-host reads it
// from its switch's read-only API and runs the Linux renderer's dcb commands
// (a logging fake dcb here; veths have no DCB ops).
package lossless
