// Package topo is a harness library: it brings up whole iNOF fabrics in
// Linux network namespaces for privileged tests, in the style of FRR's
// topotests: a topology is described once as a Spec (route reflectors,
// switch agents, hosts and targets, and which switch each device NIC is
// cabled to), and Start turns it into one namespace per node, veth links,
// generated configuration files and the real binaries (inofd --role
// reflector|switch, inof-host) running inside.
//
// Layout. A "fabric" namespace holds a bridge that every reflector and switch
// namespace joins with a veth; their control addresses are 10.0.0.0/24
// (reflectors from .1, switches from .11) and exist only inside the test's
// namespaces. Each device NIC is a veth pair straight from the device's
// namespace to an access port of its switch, so no bridge sits on the host
// path and the 01:80:C2:00:00:0D/0E groups need no group_fwd_mask
// (docs/design.md §4). A device either runs inof-host, whose nvme-cli is a fake that
// logs its arguments, or is a probe: the test drives its NICs through raw
// l2proto links (exact frames, timestamps).
//
// Every node's configuration and log go into one directory per fabric,
// which is removed when the test passes and kept (and its path and the log
// tails printed) when it fails. Everything is torn down by t.Cleanup, also on
// failure, and namespace names are unique per process (internal/netns),
// so parallel test binaries never collide.
//
// A device with VM set is a qemu guest of its own (integration/vm, wall
// time). With Spec.InGuest the whole spec is realised instead inside one
// guest, every node a namespace of it, in instruction-counted time if
// asked (GuestOptions): one clock for everything a cut sets off, and cuts
// paced and measured by the guest itself (Fabric.GuestCuts).
//
// The binaries are built once per test binary by Main (call it from
// TestMain); the scenario tests live in integration/fabric.
package topo
