// Package cdc is a test suite: it holds the privileged tests of the NVMe/TCP
// discovery controller served by inofd --role switch (package discovery): in
// an integration/topo fabric, a scripted discovery host in a host namespace
// that never registers with the fabric sees exactly its zone's targets, and
// its persistent connection gets the discovery log change notice when a
// target's link is cut (the latency is printed).
package cdc
