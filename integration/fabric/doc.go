// Package fabric holds the whole-fabric scenario tests of the daemons
// (issue #10): real inofd reflectors and switch agents and inof-host agents
// with a fake nvme-cli, brought up in network namespaces by
// integration/topo. They are compiled with the build tag "privileged", named
// TestPriv*, and need root; docs/testing.md says how to run them.
package fabric
