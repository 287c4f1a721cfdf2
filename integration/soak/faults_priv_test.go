//go:build privileged

package soak

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/integration/topo"
)

// stopTimeout bounds a SIGTERM stop.
const stopTimeout = 20 * time.Second

// inject applies fault f to the fabric and the model. It returns the heal
// of a transient fault and whether the fault applied (a fault on something
// already down, or an edit with nothing valid to do, does not).
func (r *run) inject(f Fault) (heal func(), applied bool) {
	switch f.Kind {
	case KillReflector, TermReflector:
		return r.stopReflectors(f.Kind == KillReflector, f.Node)
	case BothReflectors:
		return r.stopReflectors(f.Hard, r.lay.Reflectors...)
	case KillSwitch, TermSwitch:
		return r.stopSwitch(f.Kind == KillSwitch, f.Node)
	case AccessFlap:
		return r.accessFlap(f.NIC)
	case UplinkFlap:
		return r.uplinkFlap(f.Node)
	case Partition:
		return r.partition(f.Node, f.Peer)
	case Impair:
		return r.impair(f.Node, topo.Impairment{Loss: f.Loss, Delay: f.Delay})
	case ClockStep:
		return r.clockStep(f.Node, f.Sign)
	case DiskFull:
		return r.diskFull(f.Node, f.Pick)
	case KillAfterFlap:
		return r.killAfterFlap(f.Node, f.Delay)
	case CPUHog:
		return r.cpuHog()
	case ZoneEdit, AliasChange, HardZoning:
		if f.Edit != nil {
			return nil, r.edit(f.Node, *f.Edit)
		}
	}
	switch f.Kind {
	case ZoneEdit:
		e, ok := ZoneEditFor(f.Pick, r.lay, r.m.Config)
		return nil, ok && r.edit(f.Node, e)
	case AliasChange:
		e, ok := AliasEditFor(f.Pick, r.lay, r.m.Config)
		return nil, ok && r.edit(f.Node, e)
	case HardZoning:
		return nil, r.edit(f.Node, SettingsEditFor(f.Pick, r.m.Config))
	case ConcurrentEdits:
		return nil, r.concurrentEdits(f.Pick)
	case Registration:
		return nil, r.registration(f.NIC)
	case AddressChange:
		return nil, r.addressChange(f.NIC, f.Pick)
	case AgeOut:
		return nil, r.ageOut(f.NIC)
	}
	r.t.Fatalf("soak: no executor for %s", f.Kind)
	return nil, false
}

// fail records a harness action that went wrong (the fabric refused what
// should work: a daemon that does not stop cleanly or does not start).
func (r *run) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.stats.Findings["action"]++
	r.failed++
	r.logf("  ACTION FAILED: %s", msg)
	r.errorf("action: %s", msg)
}

func (r *run) stopReflectors(kill bool, names ...string) (func(), bool) {
	var stopped []string
	for _, name := range names {
		n := r.f.Node(name)
		if !n.Running() {
			continue
		}
		r.m.Reflectors[name].Running = false
		if kill {
			if _, err := n.Kill(); err != nil {
				r.fail("kill %s: %v", name, err)
			}
		} else if err := n.Stop(stopTimeout); err != nil {
			r.fail("stop %s: %v", name, err)
		}
		stopped = append(stopped, name)
	}
	r.m.Touch()
	r.noteLossyAlone()
	if len(stopped) == 0 {
		return nil, false
	}
	return func() {
		for _, name := range stopped {
			if err := r.f.Node(name).Start(); err != nil {
				r.fail("start %s: %v", name, err)
				continue
			}
			r.m.Reflectors[name].Running = true
		}
		r.m.Touch()
	}, true
}

func (r *run) stopSwitch(kill bool, name string) (func(), bool) {
	n := r.f.Node(name)
	if !n.Running() {
		return nil, false
	}
	sw := r.m.Switches[name]
	sw.Running = false
	sw.Graceful = !kill
	if kill {
		r.induced[name] = true
		for _, nic := range r.m.NICsOn(name) {
			r.hist.Cause(nic.Addr, inof.ReasonBFDDown)
		}
		if _, err := n.Kill(); err != nil {
			r.fail("kill %s: %v", name, err)
		}
	} else if err := n.Stop(stopTimeout); err != nil {
		r.fail("stop %s: %v", name, err)
	}
	r.m.Touch()
	return func() {
		r.restarted[name] = n.LogSize()
		r.hist.Restarted(name)
		if err := n.Start(); err != nil {
			r.fail("start %s: %v", name, err)
			return
		}
		sw.Running, sw.Graceful = true, false
		r.m.Touch()
	}, true
}

func (r *run) link(i int) *topo.Link {
	s := r.lay.NICs[i]
	return r.f.Node(s.Device).Links[s.Index]
}

func (r *run) accessFlap(i int) (func(), bool) {
	n := r.m.NICs[i]
	if !n.LinkUp {
		return nil, false
	}
	if _, err := r.link(i).SetLink(false); err != nil {
		r.fail("%v", err)
		return nil, false
	}
	n.LinkUp = false
	if n.Role.IsTarget() {
		r.hist.Cause(n.Addr, inof.ReasonLinkDown)
	}
	if n.Role.IsHost() {
		// nvme-snsd drops its controllers when its link goes down.
		r.rec.Clear(n.Addr)
	}
	return func() {
		if _, err := r.link(i).SetLink(true); err != nil {
			r.fail("%v", err)
			return
		}
		n.LinkUp = true
		if !n.Registered {
			return
		}
		if r.needQuery[i] {
			r.needQuery[i] = false
			if err := r.register(i); err != nil {
				r.fail("register %s: %v", n.ID(), err)
			}
			return
		}
		r.hist.Reset(n.Addr)
		if err := r.probes[i].Reregister(); err != nil {
			r.fail("reregister %s: %v", n.ID(), err)
		}
	}, true
}

func (r *run) uplinkFlap(name string) (func(), bool) {
	node := r.f.Node(name)
	if err := node.SetUplink(false); err != nil {
		r.fail("%v", err)
		return nil, false
	}
	r.setUplink(name, false)
	if sw, ok := r.m.Switches[name]; ok {
		r.induced[name] = true
		for _, nic := range r.m.NICsOn(sw.Name) {
			r.hist.Cause(nic.Addr, inof.ReasonBFDDown)
		}
	} else {
		// The reflector loses every switch by BFD: expected, not a stall.
		// The switches keep what they have (the other reflector serves them,
		// or, with none, they keep its routes), so no host may hear of it:
		// no cause recorded.
		for _, sw := range r.lay.Switches {
			r.induced[sw] = true
		}
		r.noteLossyAlone()
	}
	return func() {
		if err := node.SetUplink(true); err != nil {
			r.fail("%v", err)
			return
		}
		r.setUplink(name, true)
	}, true
}

func (r *run) setUplink(name string, up bool) {
	if sw, ok := r.m.Switches[name]; ok {
		sw.UplinkUp = up
	} else {
		r.m.Reflectors[name].UplinkUp = up
	}
	r.m.Touch()
}

func (r *run) partition(swName, rrName string) (func(), bool) {
	sw, rr := r.f.Node(swName), r.f.Node(rrName)
	if err := sw.BlockBGP(rr.Addr, true); err != nil {
		r.fail("%v", err)
		return nil, false
	}
	r.m.Switches[swName].Blocked[rrName] = time.Now()
	r.m.Touch()
	return func() {
		if err := sw.BlockBGP(rr.Addr, false); err != nil {
			r.fail("%v", err)
			return
		}
		delete(r.m.Switches[swName].Blocked, rrName)
		r.m.Touch()
	}, true
}

func (r *run) impair(name string, im topo.Impairment) (func(), bool) {
	undo, err := r.f.Node(name).Impair(im)
	if err != nil {
		r.fail("%v", err)
		return nil, false
	}
	r.setImpaired(name, true)
	if sw, ok := r.m.Switches[name]; ok {
		r.induced[name] = true
		for _, nic := range r.m.NICsOn(sw.Name) {
			r.hist.Cause(nic.Addr, inof.ReasonBFDDown) // loss may take BFD down
		}
	} else {
		// A lossy reflector may lose any switch.
		for _, sw := range r.lay.Switches {
			r.induced[sw] = true
		}
		r.noteLossyAlone()
	}
	return func() {
		if err := undo(); err != nil {
			r.fail("%v", err)
		}
		r.setImpaired(name, false)
	}, true
}

// noteLossyAlone records, while a lossy reflector is the only one that
// may serve, that any remote target may be told "BFD down": the lossy
// reflector may lose any switch by BFD and withdraw its records, and with
// no other reflector holding them (stopped, cut off, lossy too) a switch
// has nothing else to go by. While another reflector serves, the switches
// keep its copies, and no host may hear of it (seed 6560826109537930245
// step 10: rr2 lossy lost leaf4, rr1 stopped, and leaf1's and leaf2's
// hosts were told leaf4's targets reason 7 for a second).
func (r *run) noteLossyAlone() {
	lossy, away := 0, 0
	for _, rr := range r.m.Reflectors {
		switch {
		case !rr.Running || !rr.UplinkUp:
			away++
		case rr.Impaired:
			lossy++
		}
	}
	if lossy == 0 || lossy+away < len(r.m.Reflectors) {
		return
	}
	for _, nic := range r.m.Targets() {
		r.hist.Cause(nic.Addr, inof.ReasonBFDDown)
	}
}

func (r *run) setImpaired(name string, on bool) {
	if sw, ok := r.m.Switches[name]; ok {
		sw.Impaired = on
	} else {
		r.m.Reflectors[name].Impaired = on
	}
	r.m.Touch()
}

// clockStep moves a reflector's clock by sign × 10 minutes until healed.
func (r *run) clockStep(name string, sign int) (func(), bool) {
	file, ok := r.clocks[name]
	if !ok {
		return nil, false // no clock tracer on this machine
	}
	set := func(sec int) {
		tmp := file + ".tmp"
		err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d\n", sec)), 0o644)
		if err == nil {
			err = os.Rename(tmp, file)
		}
		if err != nil {
			r.logf("  ACTION FAILED: clock of %s to %+ds: %v", name, sec, err)
		}
	}
	set(sign * clockStepMinutes * 60)
	r.m.Reflectors[name].ClockOffset = time.Duration(sign*clockStepMinutes) * time.Minute
	return func() {
		set(0)
		r.m.Reflectors[name].ClockOffset = 0
	}, true
}

// diskFull fills a reflector's store file system up to a few kilobytes
// (none, 4 KiB, 32 KiB: from pick) until healed.
func (r *run) diskFull(name string, pick uint64) (func(), bool) {
	dir := r.stores[name]
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		r.fail("statfs %s: %v", dir, err)
		return nil, false
	}
	slack := []int64{0, 4 << 10, 32 << 10}[pick%3]
	free := int64(st.Bavail) * int64(st.Bsize)
	path := filepath.Join(dir, "filler")
	fill, err := os.Create(path)
	if err != nil {
		r.fail("%v", err)
		return nil, false
	}
	if size := free - slack; size > 0 {
		if err := unix.Fallocate(int(fill.Fd()), 0, 0, size); err != nil {
			r.logf("  fallocate %d bytes on %s: %v", size, dir, err)
		}
	}
	fill.Close()
	r.m.Reflectors[name].DiskFull = true
	return func() {
		os.Remove(path)
		r.m.Reflectors[name].DiskFull = false
	}, true
}

// edit runs one zoning change on a reflector. The model follows when it
// succeeds, or fails after the reflector committed it (Committed); a
// refusal the model does not explain (Model.RefusalFair: a full store or
// stepped clock, a candidate of unresolved concurrent edits) is a finding
// (the store makes a change visible only once it is written, so a refused
// edit changed nothing). No edit is made where an older version from
// another reflector may overrule it, or it the newer one, or where the
// reflector may not hold the other's edits yet (Model.EditHeldBack).
func (r *run) edit(name string, e Edit) bool {
	rr := r.m.Reflectors[name]
	if !rr.Running {
		// Nobody to talk to: the edit must fail, and change nothing.
		if _, err := r.f.Node(name).Inofctl(append(e.Args, "--yes")...); err == nil {
			r.fail("inofctl %s on the stopped %s succeeded", e, name)
		}
		return true
	}
	if why := r.m.EditHeldBack(name); why != "" {
		r.logf("  %s on %s not made: %s", e, name, why)
		return false
	}
	out, err := r.f.Node(name).Inofctl(append(e.Args, "--yes")...)
	r.edited = true
	if Committed(err) {
		r.logf("  %s on %s committed, though inofctl failed: %v", e, name, err)
	} else if err != nil {
		if why := r.m.RefusalFair(name, e); why != "" {
			r.logf("  %s on %s refused (fair: %s): %v", e, name, why, err)
		} else {
			r.fail("inofctl %s on %s: %v (%s)", e, name, err, out)
		}
		return true
	}
	// While concurrent edits are unresolved the edit lands on whichever
	// of their results the reflectors settled on.
	after := r.m.Edited(name, e)
	if len(after) == 0 {
		r.fail("the model cannot apply %s to the zoning in force or any candidate", e)
		return true
	}
	r.logf("  %s on %s taken (%d possible zonings)", e, name, len(after))
	for _, c := range after {
		r.hist.Config(c)
	}
	return true
}

// concurrentEdits commits one edit on each reflector at the same moment;
// the model takes every configuration that may result until it reads back
// which one the reflectors agree on.
func (r *run) concurrentEdits(pick uint64) bool {
	if !r.m.Reflectors[r.lay.Reflectors[0]].Running || !r.m.Reflectors[r.lay.Reflectors[1]].Running {
		return false
	}
	for _, name := range r.lay.Reflectors {
		if why := r.m.EditHeldBack(name); why != "" {
			r.logf("  concurrent edits not made: on %s, %s", name, why)
			return false
		}
	}
	base := r.m.Config
	a, okA := ZoneEditFor(pick, r.lay, base)
	b, okB := ZoneEditFor(pick^0x5bd1e995, r.lay, base)
	if pick%3 == 0 {
		b, okB = AliasEditFor(pick>>3, r.lay, base)
	}
	if !okA || !okB {
		return false
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, e := range []Edit{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.f.Node(r.lay.Reflectors[i]).Inofctl(append(e.Args, "--yes")...)
		}()
	}
	wg.Wait()
	r.edited = true
	var taken [2]bool
	for i, err := range errs {
		switch taken[i] = err == nil || Committed(err); {
		case err == nil:
			r.logf("  concurrent edit on %s taken: %s", r.lay.Reflectors[i], []Edit{a, b}[i])
		case taken[i]:
			r.logf("  concurrent edit on %s committed, though inofctl failed: %s: %v", r.lay.Reflectors[i], []Edit{a, b}[i], err)
		default:
			r.logf("  concurrent edit on %s refused: %v", r.lay.Reflectors[i], err)
		}
	}
	cands, passing := r.m.ConcurrentlyEdited(a, b, taken[0], taken[1])
	if len(cands) == 0 {
		r.fail("the model cannot explain the outcome of the concurrent edits from the zoning in force or any candidate")
		return true
	}
	r.logf("  %d possible zonings", len(cands))
	for _, c := range append(cands, passing...) {
		r.hist.Config(c)
	}
	return true
}

func (r *run) registration(i int) bool {
	n, p := r.m.NICs[i], r.probes[i]
	if n.Registered {
		n.Registered = false
		if n.Role.IsTarget() {
			r.hist.Cause(n.Addr, inof.ReasonAgeOut) // TTL 0 reads as an age-out
		}
		if n.Role.IsHost() {
			r.rec.Clear(n.Addr) // it leaves on purpose: it drops what it had
		}
		if err := p.Goodbye(); err != nil && n.LinkUp {
			r.fail("goodbye %s: %v", n.ID(), err)
		}
		r.m.Touch()
		return true
	}
	n.Registered = true
	r.m.Touch()
	if err := r.register(i); err != nil {
		r.fail("register %s: %v", n.ID(), err)
	}
	return true
}

func (r *run) addressChange(i int, pick uint64) bool {
	n, p := r.m.NICs[i], r.probes[i]
	cur := 0
	for k, a := range n.Pool {
		if a == n.Addr {
			cur = k
		}
	}
	next := n.Pool[(cur+1+int(pick%uint64(len(n.Pool)-1)))%len(n.Pool)]
	old := n.Addr
	n.Addr = next
	p.SetAddr(next)
	r.hist.Moved(old)
	r.hist.Moved(next)
	if n.Role.IsTarget() {
		r.hist.Cause(old, inof.ReasonIPChange)
		if !r.m.Switches[n.Switch].Running {
			// The agent, down, restores the old address and lets it age out.
			r.hist.Cause(old, inof.ReasonAgeOut)
		}
	}
	r.m.Touch()
	if !n.Registered {
		return true
	}
	if n.Role.IsHost() {
		r.rec.Clear(next)
	}
	if err := r.register(i); err != nil {
		r.fail("register %s at %s: %v", n.ID(), next, err)
	}
	return true
}

func (r *run) ageOut(i int) bool {
	n, p := r.m.NICs[i], r.probes[i]
	if !n.Registered {
		return false
	}
	n.Registered = false
	if n.Role.IsTarget() {
		r.hist.Cause(n.Addr, inof.ReasonAgeOut)
	}
	if err := p.SetLLDP(ageOutTTL, 0); err != nil {
		r.fail("%v", err)
	}
	if err := p.Reregister(); err != nil && n.LinkUp {
		r.fail("last registration of %s: %v", n.ID(), err)
	}
	r.m.Touch()
	return true
}

// flapFor is how long KillAfterFlap's reflectors drop BFD: past the
// detection time and the confirmation hold at the soak's timers, so every
// switch's sessions are reset.
const flapFor = 1500 * time.Millisecond

// killAfterFlap is issue #46's missed failure: every running reflector
// drops BFD for flapFor (each takes every switch for gone and resets its
// session: the hosts may hear reason 7 about any switch's targets, and
// active again), and wait after BFD passes again switch name is SIGKILLed
// (its targets must reach every host as gone, even from switches whose
// own sessions are still coming back). The heal starts it again.
func (r *run) killAfterFlap(name string, wait time.Duration) (func(), bool) {
	if !r.f.Node(name).Running() {
		return nil, false
	}
	for _, sw := range r.lay.Switches {
		r.induced[sw] = true
		for _, nic := range r.m.NICsOn(sw) {
			r.hist.Cause(nic.Addr, inof.ReasonBFDDown)
		}
	}
	var blocked []*topo.Node
	for _, rr := range r.lay.Reflectors {
		n := r.f.Node(rr)
		if err := n.BlockBFD(true); err != nil {
			r.fail("%v", err)
			continue
		}
		blocked = append(blocked, n)
	}
	time.Sleep(flapFor)
	for _, n := range blocked {
		if err := n.BlockBFD(false); err != nil {
			r.fail("%v", err)
		}
	}
	time.Sleep(wait)
	return r.stopSwitch(true, name)
}

// hogWorkers is how many CPU workers a CPUHog runs: twice the cores of
// the machines the soak runs on, every core busy.
const hogWorkers = "4"

// cpuHog keeps every core busy with stress-ng until its heal; nothing may
// reach any host meanwhile (no cause is recorded): a loaded CPU is not a
// failure.
func (r *run) cpuHog() (func(), bool) {
	cmd := exec.Command("stress-ng", "--cpu", hogWorkers, "--quiet")
	if err := cmd.Start(); err != nil {
		r.fail("stress-ng: %v", err)
		return nil, false
	}
	return func() {
		cmd.Process.Kill()
		cmd.Wait()
	}, true
}
