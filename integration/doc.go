// Package integration holds whole-topology tests: one Linux network namespace
// per switch and per host, veth links between them, and the real daemons
// started inside. Its sub-packages are the test helpers the whole module
// shares: netns builds namespaces and veth links for privileged tests, and
// selfexec runs the test binary again as a child process that a test can
// kill. Its own test guards the dependency direction of DESIGN §2.
package integration
