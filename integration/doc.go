// Package integration holds whole-topology tests: one Linux network namespace
// per switch and per host, veth links between them, and the real daemons
// started inside. Its sub-package netns is the one helper every privileged
// test in the module uses to build such topologies.
package integration
