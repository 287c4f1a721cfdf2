// Package fabric is a test suite: it holds the whole-fabric scenario tests
// of the daemons (issues #10 and #12): real inofd reflectors and switch
// agents and inof-host agents with a fake nvme-cli, brought up in network
// namespaces by integration/topo, with probe devices where a test needs
// exact frames and read times. They are compiled with the build tag
// "privileged", named TestPriv*, and need root; docs/testing.md says how to
// run them. Every scenario that measures notifications logs a line
// "scenario NAME: notify latency p50=… p99=… (n=…)", and TestMain prints
// them all again as a summary after the last test.
package fabric
