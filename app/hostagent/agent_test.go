package hostagent

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
)

// TestRegistrationCadence: an LLDPDU and a zone query at start, then (the
// switch answered) one LLDPDU per interval and nothing else; while carrier
// is down nothing is sent; when it returns, an LLDPDU and a zone query at
// once.
func TestRegistrationCadence(t *testing.T) {
	o := testOptions(t)
	o.Interfaces[0].NQN = "nqn.2014-08.org.example:host-a"
	clk := newFakeClock()
	h := start(t, o, clk, newFakeNVMe())

	fs := h.expectRegs("LQ")
	l := fs[0].LLDP
	if !bytes.Equal(fs[0].Source, hostMAC) || l.ChassisSubtype != l2proto.ChassisIDMAC || !bytes.Equal(l.ChassisID, hostMAC) ||
		l.PortSubtype != l2proto.PortIDIfaceName || string(l.PortID) != "inof_eth0_01" || l.TTL != 120 {
		t.Fatalf("LLDPDU %+v from %s", l, fs[0].Source)
	}
	want := l2proto.Registration{Version: 1, Flags: l2proto.FlagSubscribe, Addr: hostIP, Role: inof.RoleHost,
		Protocol: inof.ProtocolTCP, ProtoVer: l2proto.ProtocolVersion1, NQN: "nqn.2014-08.org.example:host-a"}
	if *l.Registration != want {
		t.Fatalf("registration %+v, want %+v", *l.Registration, want)
	}
	if q := fs[1].Message.Queries[0]; q.Host != hostIP {
		t.Fatalf("zone query for %s", q.Host)
	}
	h.notify(inactive("10.0.0.9", 1, inof.ReasonLinkDown)) // the switch answered

	// A ticker drops ticks its reader has not taken, so each interval is
	// advanced only after the previous LLDPDU arrived.
	clk.Advance(29 * time.Second)
	clk.Advance(time.Second)
	h.expectRegs("L")
	clk.Advance(30 * time.Second)
	h.expectRegs("L")
	// Carrier down: the next interval sends nothing.
	h.setCarrier(false)
	clk.Advance(time.Second)
	h.waitCarrier(false)
	clk.Advance(30 * time.Second)
	// Carrier back: LLDPDU and query at once. Had anything been sent while
	// down, or at 29 s, it would come before this pair (one goroutine sends
	// all of them, in order).
	h.setCarrier(true)
	clk.Advance(time.Second)
	h.expectRegs("LQ")
	if err := h.stop(); err != nil { // counters are final once Run returned
		t.Fatal(err)
	}
	if got := h.metric("inof_host_registrations_sent_total", map[string]string{"interface": "eth0"}); got != 4 {
		t.Fatalf("registrations_sent_total %v, want 4", got)
	}
	if got := h.metric("inof_host_zone_queries_sent_total", map[string]string{"interface": "eth0"}); got != 2 {
		t.Fatalf("zone_queries_sent_total %v, want 2", got)
	}
}

// TestQueriesAgainUntilAnswered (docs/realhost.md finding 6): a host
// whose zone query no switch answered (the switch's agent was not
// listening yet) queries again with each LLDPDU until a notification
// arrives, and again after carrier comes back.
func TestQueriesAgainUntilAnswered(t *testing.T) {
	clk := newFakeClock()
	h := start(t, testOptions(t), clk, newFakeNVMe())
	h.expectRegs("LQ")
	clk.Advance(30 * time.Second)
	h.expectRegs("LQ")
	clk.Advance(30 * time.Second)
	h.expectRegs("LQ")
	h.notify(active("10.0.0.9", 1))
	clk.Advance(30 * time.Second)
	h.expectRegs("L")
	h.setCarrier(false)
	clk.Advance(time.Second)
	h.waitCarrier(false)
	h.setCarrier(true)
	clk.Advance(time.Second)
	h.expectRegs("LQ")
	clk.Advance(29 * time.Second)
	clk.Advance(time.Second)
	h.expectRegs("LQ") // nothing heard since the link came back
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if got := h.metric("inof_host_zone_queries_sent_total", map[string]string{"interface": "eth0"}); got != 5 {
		t.Fatalf("zone_queries_sent_total %v, want 5", got)
	}
}

// TestTargetInterfaceQueriesOnce: a target interface, which no switch
// notifies, queries at start only, not with every LLDPDU.
func TestTargetInterfaceQueriesOnce(t *testing.T) {
	clk := newFakeClock()
	o := testOptions(t)
	o.Interfaces[0].Role, o.Interfaces[0].Port, o.Interfaces[0].NQN = "target", 4420, subNQN
	h := start(t, o, clk, newFakeNVMe())
	h.expectRegs("LQ")
	clk.Advance(30 * time.Second)
	h.expectRegs("L")
	clk.Advance(30 * time.Second)
	h.expectRegs("L")
}

// TestShortFlapQueriesAgain: a carrier flap shorter than the poll
// interval (seen only in the kernel's change count) still counts as link
// up: LLDPDU and zone query.
func TestShortFlapQueriesAgain(t *testing.T) {
	clk := newFakeClock()
	h := start(t, testOptions(t), clk, newFakeNVMe())
	h.expectRegs("LQ")
	h.setCarrier(false)
	h.setCarrier(true)
	clk.Advance(time.Second)
	h.expectRegs("LQ")
}

// TestLinkEventRegistersAtOnce: a link event for the interface makes the
// agent read carrier at once (no poll tick: the fake clock stands still),
// so a link that comes back registers and queries at once (an event for
// another interface comes first and changes nothing).
func TestLinkEventRegistersAtOnce(t *testing.T) {
	h := startCarrier(t, testOptions(t), newFakeClock(), newFakeNVMe(), false)
	h.waitCarrier(false)
	h.setCarrier(true)
	h.links <- l2proto.LinkState{Index: 3, Name: "eth1", Running: true}
	h.links <- l2proto.LinkState{Index: 2, Name: "eth0", Running: true}
	h.waitCarrier(true)
	h.expectRegs("LQ")
}

// TestNoRegistrationWhileDownAtStart: an interface without carrier at
// start registers and queries only once carrier comes.
func TestNoRegistrationWhileDownAtStart(t *testing.T) {
	clk := newFakeClock()
	nv := newFakeNVMe()
	o := testOptions(t)
	h := startCarrier(t, o, clk, nv, false)
	h.waitCarrier(false)
	clk.Advance(30 * time.Second)
	h.setCarrier(true)
	clk.Advance(time.Second)
	h.expectRegs("LQ")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if got := h.metric("inof_host_registrations_sent_total", map[string]string{"interface": "eth0"}); got != 1 {
		t.Fatalf("registrations_sent_total %v, want 1", got)
	}
}

// TestAckAndDedupe: one ACK per notification for this host (echoing
// target, host and sequence) in one frame; notifications for another
// address are not ACKed; a retransmit is ACKed again but not acted on.
func TestAckAndDedupe(t *testing.T) {
	nv := newFakeNVMe()
	h := start(t, testOptions(t), newFakeClock(), nv)
	a, b := active("10.0.0.100", 0xdead0001), active("10.0.0.101", 0xdead0002)
	other := active("10.0.0.102", 0xdead0003)
	other.Host = netip.MustParseAddr("10.0.0.9")
	h.send(a, other, b)
	acks := h.expectAck()
	if len(acks) != 2 || acks[0].Key() != a.Key() || acks[1].Key() != b.Key() {
		t.Fatalf("ACKs %+v", acks)
	}
	h.nv.expectUnordered(t, "connect", "connect")
	h.send(a) // retransmit: the switch missed the ACK
	if acks := h.expectAck(); len(acks) != 1 || acks[0].Key() != a.Key() {
		t.Fatalf("ACK of the retransmit %+v", acks)
	}
	// A later notification is handled after the retransmit; had the
	// retransmit reached the worker, its calls would come first.
	h.notify(active("10.0.0.103", 0xdead0004))
	c := h.nv.expect(t, "connect")
	if flagsOf(c[0])["-a"] != "10.0.0.103" {
		t.Fatalf("connect %q, want 10.0.0.103", c[0])
	}
	if err := h.stop(); err != nil { // counters are final once Run returned
		t.Fatal(err)
	}
	if got := h.metric("inof_host_notifications_duplicate_total", map[string]string{"interface": "eth0"}); got != 1 {
		t.Fatalf("duplicates %v", got)
	}
	if got := h.metric("inof_host_notifications_acked_total", map[string]string{"interface": "eth0"}); got != 4 {
		t.Fatalf("acked %v", got)
	}
	if got := h.metric("inof_host_frames_dropped_total", map[string]string{"interface": "eth0", "reason": "host-address"}); got != 1 {
		t.Fatalf("host-address drops %v", got)
	}
}

// TestMalformedFramesDropped: garbage, a wrong destination and an
// incomplete notification are counted and dropped without an ACK; the port
// keeps working.
func TestMalformedFramesDropped(t *testing.T) {
	h := start(t, testOptions(t), newFakeClock(), newFakeNVMe())
	good, err := l2proto.MessageFrame(swMAC, &l2proto.Message{Version: 1, Notifications: []l2proto.Notification{active("10.0.0.100", 7)}})
	if err != nil {
		t.Fatal(err)
	}
	wrongDst := bytes.Clone(good)
	copy(wrongDst, hostMAC)
	incomplete := bytes.Clone(good)
	incomplete = incomplete[:len(incomplete)-10] // cuts the last sub-TLV
	for _, f := range [][]byte{{1, 2, 3}, wrongDst, incomplete, append(bytes.Clone(good[:14]), 9, 0, 0, 4, 0, 0, 0, 0, 1, 2, 3, 4)} {
		if err := h.sw.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.sw.WriteFrame(good); err != nil {
		t.Fatal(err)
	}
	if a := h.expectAck(); len(a) != 1 || a[0].Seq != 7 {
		t.Fatalf("ACK %+v", a)
	}
	for reason, want := range map[string]float64{"short": 1, "destination": 1, "length": 1, "version": 1} {
		if got := h.metric("inof_host_frames_dropped_total", map[string]string{"interface": "eth0", "reason": reason}); got != want {
			t.Errorf("drops %s = %v, want %v", reason, got, want)
		}
	}
}

// TestConnectOnActive: the exact nvme connect command line, with -k/-c/-l
// from the options, and the controller remembered in the state file.
func TestConnectOnActive(t *testing.T) {
	for _, tc := range []struct {
		proto inof.Protocol
		tr    string
	}{{inof.ProtocolTCP, "tcp"}, {inof.ProtocolRoCE, "rdma"}} {
		t.Run(tc.tr, func(t *testing.T) {
			o := testOptions(t)
			o.NVMe.KeepAliveTmo, o.NVMe.ReconnectDelay, o.NVMe.CtrlLossTmo = 5, 2, 600
			nv := newFakeNVMe()
			h := start(t, o, newFakeClock(), nv)
			n := active("10.0.0.100", 1)
			n.Protocol, n.Port = tc.proto, 0 // port 0 means 4420
			h.notify(n)
			c := nv.expect(t, "connect")
			want := []string{"nvme", "connect", "-t", tc.tr, "-a", "10.0.0.100", "-s", "4420", "-w", "10.0.0.2",
				"-n", subNQN, "-q", hostNQN, "-k", "5", "-c", "2", "-l", "600", "-o", "json"}
			if !slices.Equal(c[0], want) {
				t.Fatalf("connect\n got %q\nwant %q", c[0], want)
			}
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			owned, err := loadState(o.StateFile)
			if err != nil {
				t.Fatal(err)
			}
			wantOwned := []ownedController{{Path: Path{Transport: tc.tr, TrAddr: "10.0.0.100", TrSvcID: "4420",
				HostTrAddr: "10.0.0.2", SubNQN: subNQN}, Device: "nvme0", CQTRead: true}}
			if !slices.Equal(owned, wantOwned) {
				t.Fatalf("state %+v, want %+v", owned, wantOwned)
			}
			nv.none(t) // no disconnect on exit by default
		})
	}
}

// TestDiscoverWhenNoNQN: without an NQN the agent asks the target's
// discovery controller (port 8009 for TCP) and connects to each subsystem
// listed for the target's address and port, and nothing else.
func TestDiscoverWhenNoNQN(t *testing.T) {
	nv := newFakeNVMe()
	nv.discovery = []DiscoveryRecord{
		{Transport: "tcp", Subtype: "current discovery subsystem", TrAddr: "10.0.0.100", TrSvcID: "8009", SubNQN: "nqn.2014-08.org.nvmexpress.discovery"},
		{Transport: "tcp", Subtype: "nvme subsystem", TrAddr: "10.0.0.100", TrSvcID: "4420", SubNQN: "nqn.x:a"},
		{Transport: "tcp", Subtype: "nvme subsystem", TrAddr: "10.0.0.200", TrSvcID: "4420", SubNQN: "nqn.x:other-address"},
		{Transport: "tcp", Subtype: "nvme subsystem", TrAddr: "10.0.0.100", TrSvcID: "4421", SubNQN: "nqn.x:other-port"},
		{Transport: "tcp", Subtype: "nvme subsystem", TrAddr: "10.0.0.100", TrSvcID: "4420", SubNQN: "nqn.x:b"},
	}
	h := start(t, testOptions(t), newFakeClock(), nv)
	h.notify(note("10.0.0.100", 1, inof.StateActive, inof.ReasonNone, ""))
	c := nv.expect(t, "discover", "connect", "connect")
	wantDisc := []string{"nvme", "discover", "-t", "tcp", "-a", "10.0.0.100", "-s", "8009", "-w", "10.0.0.2", "-q", hostNQN, "-o", "json"}
	if !slices.Equal(c[0], wantDisc) {
		t.Fatalf("discover %q, want %q", c[0], wantDisc)
	}
	if a, b := flagsOf(c[1])["-n"], flagsOf(c[2])["-n"]; a != "nqn.x:a" || b != "nqn.x:b" {
		t.Fatalf("connected to %s and %s", a, b)
	}
	for _, cc := range c[2:] {
		if f := flagsOf(cc); f["-a"] != "10.0.0.100" || f["-s"] != "4420" {
			t.Fatalf("connect %q", cc)
		}
	}
}

// TestDisconnectPolicy: with disconnect_on forced only reasons 4, 5 and 6
// disconnect; all disconnects on every reason; never on none.
func TestDisconnectPolicy(t *testing.T) {
	reasons := []inof.Reason{inof.ReasonLinkDown, inof.ReasonPFCStorm, inof.ReasonPacketErr, inof.ReasonZoneChange,
		inof.ReasonIPChange, inof.ReasonAgeOut, inof.ReasonBFDDown}
	for _, pol := range []DisconnectPolicy{DisconnectForced, DisconnectAll, DisconnectNever} {
		for _, r := range reasons {
			t.Run(string(pol)+"/"+r.String(), func(t *testing.T) {
				o := testOptions(t)
				o.DisconnectOn = pol
				nv := newFakeNVMe()
				h := start(t, o, newFakeClock(), nv)
				h.notify(active("10.0.0.100", 1))
				nv.expect(t, "connect")
				h.notify(inactive("10.0.0.100", 2, r))
				want := pol == DisconnectAll || (pol == DisconnectForced && r.Forced())
				if want {
					c := nv.expect(t, "list-subsys", "disconnect")
					if !slices.Equal(c[1], []string{"nvme", "disconnect", "-d", "nvme0"}) {
						t.Fatalf("disconnect %q", c[1])
					}
				}
				// Sentinel: the next notification's calls come right after.
				h.notify(active("10.0.0.101", 3))
				c := nv.expect(t, "connect")
				if flagsOf(c[0])["-a"] != "10.0.0.101" {
					t.Fatalf("call %q", c[0])
				}
				if wantDevs := map[bool]int{true: 1, false: 2}[want]; len(nv.devices()) != wantDevs {
					t.Fatalf("controllers %v", nv.devices())
				}
			})
		}
	}
}

// TestRestrainTime: an inactive waits the restrain time; an active for
// the same target within it cancels the disconnect and, the controller
// being live, connects nothing. A lone inactive disconnects when the time
// is up.
func TestRestrainTime(t *testing.T) {
	o := testOptions(t)
	o.RestrainTime = 5 * time.Second
	clk := newFakeClock()
	nv := newFakeNVMe()
	h := start(t, o, clk, nv)
	h.notify(active("10.0.0.100", 1))
	nv.expect(t, "connect")

	h.notify(inactive("10.0.0.100", 2, inof.ReasonZoneChange))
	clk.WaitTimers(t, 1)
	clk.Advance(4 * time.Second)
	h.notify(active("10.0.0.100", 3)) // live in sysfs: no nvme-cli, no connect
	// The active reached the agent and cancelled the disconnect before the
	// clock moves on (else the restrain time runs out first).
	clk.WaitNoTimers(t)
	clk.Advance(time.Minute)
	h.notify(active("10.0.0.101", 4)) // sentinel
	c := nv.expect(t, "connect")
	if flagsOf(c[0])["-a"] != "10.0.0.101" {
		t.Fatalf("call %q: the flap churned nvme", c[0])
	}

	h.notify(inactive("10.0.0.100", 5, inof.ReasonZoneChange))
	clk.WaitTimers(t, 1)
	nv.none(t)
	clk.Advance(5 * time.Second)
	c = nv.expect(t, "list-subsys", "disconnect")
	if !slices.Equal(c[1], []string{"nvme", "disconnect", "-d", "nvme0"}) {
		t.Fatalf("disconnect %q", c[1])
	}
}

// TestNoDoubleConnect: a controller that exists already (made by someone
// else) is not connected again, not adopted, and not removed by a forced
// inactive.
func TestNoDoubleConnect(t *testing.T) {
	nv := newFakeNVMe()
	foreign := nv.add(fakeCtrl{transport: "tcp", traddr: "10.0.0.100", trsvcid: "4420", hostTraddr: "10.0.0.2", nqn: subNQN, hostNQN: hostNQN})
	o := testOptions(t)
	h := start(t, o, newFakeClock(), nv)
	h.notify(active("10.0.0.100", 1)) // sysfs shows it: no nvme-cli, no connect
	h.notify(active("10.0.0.100", 2)) // a second active (new sequence) for the same target
	h.notify(inactive("10.0.0.100", 3, inof.ReasonIPChange))
	h.notify(active("10.0.0.101", 4)) // sentinel
	c := nv.expect(t, "connect")
	if flagsOf(c[0])["-a"] != "10.0.0.101" {
		t.Fatalf("call %q", c[0])
	}
	if d := nv.devices(); !slices.Contains(d, foreign) {
		t.Fatalf("foreign controller %s removed: %v", foreign, d)
	}
}

// TestActiveOnPathInSysfsRunsNoNVMeCLI: an active for a path whose
// controller sysfs shows (as at link up, the agent's own kept one) runs
// no nvme-cli at all, so nothing competes with the kernel's reconnect for
// the CPU; a controller that is being deleted is none, and that path is
// connected. With sysfs unreadable, nvme-cli lists the controllers.
func TestActiveOnPathInSysfsRunsNoNVMeCLI(t *testing.T) {
	nv := newFakeNVMe()
	nv.add(fakeCtrl{transport: "tcp", traddr: "10.0.0.102", trsvcid: "4420", hostTraddr: "10.0.0.2", nqn: subNQN, hostNQN: hostNQN, state: "deleting"})
	h := start(t, testOptions(t), newFakeClock(), nv)
	h.notify(active("10.0.0.100", 1))
	nv.expect(t, "connect")
	dev := nv.deviceOf("10.0.0.100")
	nv.setState(dev, "connecting") // failed over, reconnecting
	h.notify(active("10.0.0.100", 2))
	if c := h.kern.next(t); c != "rejoin 10.0.0.2>10.0.0.100:4420 "+dev {
		t.Fatalf("kernel call %q, want the reconnect of %s hurried", c, dev)
	}
	// The same path's next job runs after that active's: its first
	// kernel call says the active's job is over.
	h.notify(inactive("10.0.0.100", 3, inof.ReasonLinkDown))
	if c := h.kern.next(t); c != "abort 10.0.0.2>10.0.0.100:4420" {
		t.Fatalf("kernel call %q, want the failover's abort", c)
	}
	nv.none(t)
	h.notify(active("10.0.0.102", 4))
	c := nv.expect(t, "connect")
	if flagsOf(c[0])["-a"] != "10.0.0.102" {
		t.Fatalf("call %q, want the path whose controller is being deleted connected", c[0])
	}
	h.kern.mu.Lock()
	h.kern.pathsErr = errors.New("sysfs: permission denied")
	h.kern.mu.Unlock()
	h.notify(active("10.0.0.101", 5))
	nv.expect(t, "list-subsys", "connect")
}

// TestRestartCleansOnlyOwn: the state file survives a restart; the new
// agent forgets owned controllers that vanished meanwhile and, with
// disconnect_on_exit, removes only controllers it created, never a
// foreign one.
func TestRestartCleansOnlyOwn(t *testing.T) {
	nv := newFakeNVMe()
	foreign := nv.add(fakeCtrl{transport: "tcp", traddr: "10.0.0.50", trsvcid: "4420", hostTraddr: "10.0.0.2", nqn: "nqn.x:foreign", hostNQN: hostNQN})
	o := testOptions(t)
	h := start(t, o, newFakeClock(), nv)
	h.notify(active("10.0.0.100", 1))
	h.notify(active("10.0.0.101", 2))
	nv.expectUnordered(t, "connect", "connect")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	nv.none(t)
	ours := []string{nv.deviceOf("10.0.0.100"), nv.deviceOf("10.0.0.101")}
	if devs := nv.devices(); len(devs) != 3 {
		t.Fatalf("controllers %v", devs)
	}
	nv.remove(ours[1]) // the .101 controller disappears while the agent is down

	o.DisconnectOnExit = true
	h2 := start(t, o, newFakeClock(), nv)
	nv.expect(t, "list-subsys") // reconcile at start
	// The worker handles notifications only after reconciling.
	h2.notify(active("10.0.0.100", 1)) // still live in sysfs: no nvme-cli, no connect
	owned, err := loadState(o.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(owned) != 1 || owned[0].TrAddr != "10.0.0.100" {
		t.Fatalf("state after restart %+v", owned)
	}
	if err := h2.stop(); err != nil {
		t.Fatal(err)
	}
	c := nv.expect(t, "list-subsys", "disconnect")
	if !slices.Equal(c[1], []string{"nvme", "disconnect", "-d", ours[0]}) {
		t.Fatalf("disconnect %q, want %s", c[1], ours[0])
	}
	nv.none(t)
	if d := nv.devices(); !slices.Equal(d, []string{foreign}) {
		t.Fatalf("controllers left %v, want only the foreign %s", d, foreign)
	}
	if owned, _ := loadState(o.StateFile); len(owned) != 0 {
		t.Fatalf("state after exit %+v", owned)
	}
}

// TestConnectRetry: a failed connect is tried again after connect_retry;
// a newer notification for the target cancels the retry.
func TestConnectRetry(t *testing.T) {
	clk := newFakeClock()
	nv := newFakeNVMe()
	nv.failConnect = 1
	h := start(t, testOptions(t), clk, nv)
	h.notify(active("10.0.0.100", 1))
	nv.expect(t, "connect")
	clk.WaitTimers(t, 1)
	clk.Advance(time.Minute)
	nv.expect(t, "connect")
	if len(nv.devices()) != 1 {
		t.Fatalf("controllers %v", nv.devices())
	}
	if got := h.metric("inof_host_nvme_operations_total", map[string]string{"op": "connect", "result": "failed"}); got != 1 {
		t.Fatalf("failed connects %v", got)
	}

	nv.mu.Lock()
	nv.failConnect = 1
	nv.mu.Unlock()
	h.notify(active("10.0.0.101", 2))
	nv.expect(t, "connect")
	clk.WaitTimers(t, 1)
	h.notify(inactive("10.0.0.101", 3, inof.ReasonLinkDown)) // supersedes the retry
	clk.WaitNoTimers(t)
	clk.Advance(time.Hour)
	h.notify(active("10.0.0.102", 4)) // sentinel
	c := nv.expect(t, "connect")
	if flagsOf(c[0])["-a"] != "10.0.0.102" {
		t.Fatalf("call %q: the cancelled retry ran", c[0])
	}
}

// TestTargetRoleIgnoresNotifications: a target interface registers as a
// target and ACKs notifications but acts on none; host notifications,
// invalid states and iSCSI are ACKed and ignored on a host interface.
func TestTargetRoleIgnoresNotifications(t *testing.T) {
	o := testOptions(t)
	o.Interfaces[0].Role, o.Interfaces[0].Port, o.Interfaces[0].NQN = "target", 4420, subNQN
	o.HostNQN = ""
	o.HostNQNFile = "/nonexistent" // a target needs no host NQN
	nv := newFakeNVMe()
	h := start(t, o, newFakeClock(), nv)
	fs := h.expectRegs("LQ")
	if r := fs[0].LLDP.Registration; r.Role != inof.RoleTarget || r.Port != 4420 || r.NQN != subNQN {
		t.Fatalf("registration %+v", r)
	}
	h.notify(active("10.0.0.100", 1))
	if got := h.metric("inof_host_notifications_ignored_total", map[string]string{"reason": "target-interface"}); got != 1 {
		t.Fatalf("ignored %v", got)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	nv.none(t)

	h2 := start(t, testOptions(t), newFakeClock(), nv)
	hostNote := active("10.0.0.100", 1)
	hostNote.Role = inof.RoleHost
	badState := active("10.0.0.100", 2)
	badState.State = 7
	iscsi := active("10.0.0.100", 3)
	iscsi.Protocol = inof.ProtocolISCSI
	for _, n := range []l2proto.Notification{hostNote, badState, iscsi} {
		h2.notify(n)
	}
	h2.notify(active("10.0.0.101", 4)) // sentinel
	c := nv.expect(t, "connect")
	if flagsOf(c[0])["-a"] != "10.0.0.101" {
		t.Fatalf("call %q", c[0])
	}
	for _, r := range []string{"host-notification", "bad-state", "protocol"} {
		if got := h2.metric("inof_host_notifications_ignored_total", map[string]string{"reason": r}); got != 1 {
			t.Errorf("ignored %s = %v", r, got)
		}
	}
}

// TestCorruptStateFileRefusesToStart: a state file that cannot be read is
// an error, not an empty state (that would orphan controllers).
func TestCorruptStateFileRefusesToStart(t *testing.T) {
	o := testOptions(t)
	if err := os.WriteFile(o.StateFile, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	hostEnd, _ := l2proto.NewMemPair("eth0", hostMAC, "sw1", swMAC)
	a, err := New(Config{Options: o, Links: map[string]l2proto.Link{"eth0": hostEnd}, Exec: newFakeNVMe(), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "state file") {
		t.Fatalf("Run: %v", err)
	}
}
