// Package vm is a harness library: it boots real Linux guests under qemu for
// privileged tests. A guest runs a Debian cloud kernel with NVMe/TCP
// (initiator and nvmet target), busybox, nvme-cli and a static inof-host,
// each guest's NICs backed by taps that live in our test namespaces
// (typically a switch agent's access ports).
//
// The image (BuildImage) is made only from Debian packages and this
// module: the kernel package is fetched with apt-get download and unpacked,
// busybox-static and nvme-cli (with the libraries ldd lists) are copied
// from the host, and the guest init (guestinit) and inof-host are built
// with CGO_ENABLED=0. It is cached in $INOF_VM_CACHE (default
// /var/cache/inof-vm) under a hash of its inputs and rebuilt when one
// changes.
//
// A Guest (Boot) is one qemu process, one vCPU, TCG unless $INOF_VM_ACCEL
// says otherwise. The test talks to it over three channels:
//
//   - the control channel, a virtio-serial port served by the guest's init:
//     Run, Sh, WriteFile, Start (background processes whose output streams
//     back), HTTPGet (inside the guest);
//   - QMP: SetLink takes a NIC's link down or up as the guest sees it;
//   - the serial console, written to a file: Console, WaitConsole.
//
// On top of those: SetupTarget (kernel nvmet on null_blk), Controllers,
// Namespaces, Connect, and StartIOStall (the I/O stall meter: O_DIRECT
// reads, longest gap between completions).
//
// Taps (CreateTap) are created from a thread inside the namespace they
// belong to and handed to qemu as file descriptors, so one guest can have
// NICs in several namespaces. integration/topo uses this package for
// devices of kind vm; see docs/realhost.md.
//
// Deterministic mode (Config.Icount) runs a guest in qemu's
// instruction-counted time; PathFabric builds a whole dual-path fabric
// (two switch agents, the target, the host under test) inside one such
// guest, and its Cuts are paced and measured by the guest itself
// (guestinit's cut runner, Guest.Cuts with a CutPlan), so a bound in
// guest time is repeatable on a loaded machine. The parts such a fabric is
// built from (LinkScript, DaemonScript, FabricStart, ZoneCreateScript,
// SetupTargetIn, Guest.Cuts with a CutPlan) also serve integration/topo,
// which realises any topo.Spec inside one guest (topo.Spec.InGuest).
//
// Its own privileged tests (TestPrivGuestNVMeTCP, the scenarios
// TestPrivVMZoneLinkKill and TestPrivVMDualPath, and the deterministic
// TestPrivVMPathFabric) are the VM suite.
package vm
