// Package netns is a harness library: it builds throw-away Linux network
// namespaces joined by veth links for privileged tests, and removes them
// when the test ends, also when it fails. Names are unique per process so
// packages tested in parallel never collide, and every address a test uses
// lives inside a namespace made here.
//
// Privileged tests are compiled only with the build tag "privileged" and are
// named TestPriv*/BenchmarkPriv*; `make test` runs them when it runs as root.
package netns
