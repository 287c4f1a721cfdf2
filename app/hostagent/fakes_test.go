package hostagent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// wait is how long a test waits for something that must happen before it
// gives up; it only bounds a hang, nothing is measured against it.
const wait = 20 * time.Second

// fakeClock moves only when the test advances it. AfterFunc callbacks run
// in their own goroutine, as with time.AfterFunc.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	tickers []*fakeTicker
	changed chan struct{} // closed and replaced whenever a timer is armed or stopped
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), changed: make(chan struct{})}
}

type fakeTimer struct {
	at            time.Time
	f             func()
	done, stopped bool
	c             *fakeClock
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done || t.stopped {
		return false
	}
	t.stopped = true
	t.c.signal()
	return true
}

// signal wakes WaitTimers; c.mu is held.
func (c *fakeClock) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type fakeTicker struct {
	next    time.Time
	d       time.Duration
	ch      chan time.Time
	stopped bool
	c       *fakeClock
}

func (t *fakeTicker) C() <-chan time.Time { return t.ch }
func (t *fakeTicker) Reset(d time.Duration) {
	t.c.mu.Lock()
	t.d, t.next = d, t.c.now.Add(d)
	t.c.mu.Unlock()
}
func (t *fakeTicker) Stop() {
	t.c.mu.Lock()
	t.stopped = true
	t.c.mu.Unlock()
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f, c: c}
	c.timers = append(c.timers, t)
	c.signal()
	return t
}

func (c *fakeClock) NewTicker(d time.Duration) Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTicker{next: c.now.Add(d), d: d, ch: make(chan time.Time, 1), c: c}
	c.tickers = append(c.tickers, t)
	return t
}

// Advance moves time forward by d, firing due timers and ticks in time
// order (a ticker drops ticks its reader has not taken, as time.Ticker does).
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := c.now.Add(d)
	for {
		var tm *fakeTimer
		var tk *fakeTicker
		at := end.Add(1)
		for _, t := range c.timers {
			if !t.done && !t.stopped && !t.at.After(end) && t.at.Before(at) {
				tm, at = t, t.at
			}
		}
		for _, t := range c.tickers {
			if !t.stopped && !t.next.After(end) && t.next.Before(at) {
				tm, tk, at = nil, t, t.next
			}
		}
		if tm == nil && tk == nil {
			break
		}
		c.now = at
		if tm != nil {
			tm.done = true
			go tm.f()
		} else {
			select {
			case tk.ch <- at:
			default:
			}
			tk.next = tk.next.Add(tk.d)
		}
	}
	c.now = end
	c.timers = slices.DeleteFunc(c.timers, func(t *fakeTimer) bool { return t.done || t.stopped })
}

// WaitTimers blocks until at least n one-shot timers are pending.
func (c *fakeClock) WaitTimers(t *testing.T, n int) {
	t.Helper()
	c.waitPending(t, func(k int) bool { return k >= n }, fmt.Sprintf("at least %d", n))
}

// WaitNoTimers blocks until no one-shot timer is pending.
func (c *fakeClock) WaitNoTimers(t *testing.T) {
	t.Helper()
	c.waitPending(t, func(k int) bool { return k == 0 }, "none")
}

func (c *fakeClock) waitPending(t *testing.T, ok func(int) bool, want string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		c.mu.Lock()
		k := 0
		for _, tm := range c.timers {
			if !tm.done && !tm.stopped {
				k++
			}
		}
		changed := c.changed
		c.mu.Unlock()
		if ok(k) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%d pending timers, waited for %s", k, want)
		}
	}
}

// fakeNVMe is a recording Executor that behaves like nvme-cli 2.3 on a host
// with NVMe-oF: it keeps a controller table, answers list-subsys in 2.3's
// JSON, and records every call in order.
type fakeNVMe struct {
	mu          sync.Mutex
	ctrls       []fakeCtrl
	nextDev     int
	discovery   []DiscoveryRecord
	failConnect int // fail this many connects
	calls       chan []string
	// cqt is each target address's Command Quiesce Time as the fake
	// kernel reports it (default none).
	cqt map[string]time.Duration
}

type fakeCtrl struct {
	dev, transport, traddr, trsvcid, hostTraddr, nqn, hostNQN, state string
}

func newFakeNVMe() *fakeNVMe {
	return &fakeNVMe{calls: make(chan []string, 1000), cqt: map[string]time.Duration{}}
}

// add makes a controller exist, as if someone else had connected it.
func (f *fakeNVMe) add(c fakeCtrl) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.dev = fmt.Sprintf("nvme%d", f.nextDev)
	f.nextDev++
	if c.state == "" {
		c.state = "live"
	}
	f.ctrls = append(f.ctrls, c)
	return c.dev
}

func (f *fakeNVMe) remove(dev string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctrls = slices.DeleteFunc(f.ctrls, func(c fakeCtrl) bool { return c.dev == dev })
}

func (f *fakeNVMe) devices() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ds []string
	for _, c := range f.ctrls {
		ds = append(ds, c.dev)
	}
	return ds
}

func flagsOf(args []string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			m[args[i]] = args[i+1]
		}
	}
	return m
}

func (f *fakeNVMe) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The call is recorded after its effect, so a test that saw it sees
	// the controller table it left.
	defer func() { f.calls <- append([]string{name}, args...) }()
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := flagsOf(args)
	switch args[0] {
	case "list-subsys":
		type path struct{ Name, Transport, Address, State string }
		type subsys struct {
			Name, NQN string
			Paths     []path
		}
		type host struct {
			HostNQN    string
			Subsystems []subsys
		}
		byHost := map[string]*host{}
		var hosts []*host
		for i, c := range f.ctrls {
			h := byHost[c.hostNQN]
			if h == nil {
				h = &host{HostNQN: c.hostNQN, Subsystems: []subsys{}}
				byHost[c.hostNQN] = h
				hosts = append(hosts, h)
			}
			h.Subsystems = append(h.Subsystems, subsys{Name: fmt.Sprintf("nvme-subsys%d", i), NQN: c.nqn,
				Paths: []path{{Name: c.dev, Transport: c.transport, State: c.state,
					Address: fmt.Sprintf("traddr=%s,trsvcid=%s,host_traddr=%s", c.traddr, c.trsvcid, c.hostTraddr)}}})
		}
		if hosts == nil {
			hosts = []*host{}
		}
		return json.MarshalIndent(hosts, "", "  ")
	case "connect":
		if f.failConnect > 0 {
			f.failConnect--
			return nil, fmt.Errorf("nvme connect: exit status 1: Failed to write to /dev/nvme-fabrics: Connection refused")
		}
		c := fakeCtrl{dev: fmt.Sprintf("nvme%d", f.nextDev), transport: fl["-t"], traddr: fl["-a"], trsvcid: fl["-s"],
			hostTraddr: fl["-w"], nqn: fl["-n"], hostNQN: fl["-q"], state: "live"}
		f.nextDev++
		f.ctrls = append(f.ctrls, c)
		return []byte(fmt.Sprintf("{\n  \"device\":%q\n}\n", c.dev)), nil
	case "discover":
		return json.Marshal(map[string]any{"genctr": 3, "records": f.discovery})
	case "disconnect":
		n := len(f.ctrls)
		f.ctrls = slices.DeleteFunc(f.ctrls, func(c fakeCtrl) bool { return c.dev == fl["-d"] })
		if len(f.ctrls) == n {
			return nil, fmt.Errorf("nvme disconnect: %s not found", fl["-d"])
		}
		return nil, nil
	}
	return nil, fmt.Errorf("fake nvme: unknown command %q", args[0])
}

// next returns the next recorded call.
func (f *fakeNVMe) next(t *testing.T) []string {
	t.Helper()
	select {
	case c := <-f.calls:
		return c
	case <-time.After(wait):
		t.Fatal("no nvme call")
		return nil
	}
}

// expect takes the next calls and checks their verbs (args[0]) in order.
func (f *fakeNVMe) expect(t *testing.T, verbs ...string) [][]string {
	t.Helper()
	var got [][]string
	for _, v := range verbs {
		c := f.next(t)
		got = append(got, c)
		if c[1] != v {
			t.Fatalf("nvme call %q, want %s (calls so far %q)", c, v, got)
		}
	}
	return got
}

// expectUnordered takes len(verbs) calls whose verbs are verbs in any
// order: the calls of notifications for different paths, whose lanes run
// at the same time.
func (f *fakeNVMe) expectUnordered(t *testing.T, verbs ...string) [][]string {
	t.Helper()
	var got [][]string
	var gotVerbs []string
	for range verbs {
		c := f.next(t)
		got = append(got, c)
		gotVerbs = append(gotVerbs, c[1])
	}
	want := slices.Clone(verbs)
	slices.Sort(want)
	slices.Sort(gotVerbs)
	if !slices.Equal(want, gotVerbs) {
		t.Fatalf("nvme calls %q, want the verbs %q in any order", got, verbs)
	}
	return got
}

// deviceOf returns the device of the controller to traddr.
func (f *fakeNVMe) deviceOf(traddr string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.ctrls {
		if c.traddr == traddr {
			return c.dev
		}
	}
	return ""
}

// none checks that no call is queued right now. Callers first make sure
// (with a later, ordered event) that any call would have been made.
func (f *fakeNVMe) none(t *testing.T) {
	t.Helper()
	select {
	case c := <-f.calls:
		t.Fatalf("unexpected nvme call %q", c)
	default:
	}
}

// fakeKernel is a recording Kernel over a fakeNVMe's controller table: a
// controller's siblings are the others of its subsystem NQN; Reset takes
// a controller out of live (as the kernel's reset of a dead path does)
// and can be made to block; every call is recorded in order.
type fakeKernel struct {
	nv    *fakeNVMe
	mu    sync.Mutex
	block map[string]chan struct{} // Reset of this device waits for the channel to close
	calls chan string              // "reset nvme0", "abort 10.0.0.2>10.0.0.100:4420", "rejoin 10.0.0.2>10.0.0.100:4420 nvme0", "failfast nvme0"
	ana   map[string]string        // ANA state per device (default none)
	// pathsErr, when set, is what Paths returns (sysfs unreadable).
	pathsErr error
}

func newFakeKernel(nv *fakeNVMe) *fakeKernel {
	return &fakeKernel{nv: nv, block: map[string]chan struct{}{}, calls: make(chan string, 1000), ana: map[string]string{}}
}

func (k *fakeKernel) Paths() ([]KernelPath, error) {
	k.nv.mu.Lock()
	defer k.nv.mu.Unlock()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pathsErr != nil {
		return nil, k.pathsErr
	}
	var out []KernelPath
	for _, c := range k.nv.ctrls {
		p := KernelPath{Controller: Controller{Device: c.dev, State: c.state,
			Path: Path{Transport: c.transport, TrAddr: c.traddr, TrSvcID: c.trsvcid, HostTrAddr: c.hostTraddr, SubNQN: c.nqn}}}
		if s, ok := k.ana[c.dev]; ok {
			p.ANA = []string{s}
		}
		out = append(out, p)
	}
	return out, nil
}

func (k *fakeKernel) Path(dev string) (KernelPath, error) {
	ps, _ := k.Paths()
	for _, p := range ps {
		if p.Device == dev {
			return p, nil
		}
	}
	return KernelPath{}, fmt.Errorf("no controller %s", dev)
}

func (k *fakeKernel) Rejoin(host, target netip.Addr, port uint16, devs []string) (int, error) {
	k.calls <- fmt.Sprintf("rejoin %s>%s:%d %s", host, target, port, strings.Join(devs, ","))
	return 1, nil
}

func (k *fakeKernel) Reset(dev string) error {
	k.mu.Lock()
	b := k.block[dev]
	k.mu.Unlock()
	if b != nil {
		<-b
	}
	k.nv.setState(dev, "connecting")
	k.calls <- "reset " + dev
	return nil
}

func (k *fakeKernel) AbortTCP(host, target netip.Addr, port uint16) (int, error) {
	k.calls <- fmt.Sprintf("abort %s>%s:%d", host, target, port)
	return 1, nil
}

// CQT is the Command Quiesce Time set for the controller's target
// address (fakeNVMe.cqt); reading it is not a recorded call.
func (k *fakeKernel) CQT(dev string) (time.Duration, error) {
	p, err := k.Path(dev)
	if err != nil {
		return 0, err
	}
	k.nv.mu.Lock()
	defer k.nv.mu.Unlock()
	return k.nv.cqt[p.TrAddr], nil
}

// HasNVMe is true: the fake's controllers are its sysfs.
func (k *fakeKernel) HasNVMe() bool { return true }

func (k *fakeKernel) FailFast(dev string) error {
	k.calls <- "failfast " + dev
	return nil
}

// blockReset makes the next Resets of dev wait until the returned function
// is called.
func (k *fakeKernel) blockReset(dev string) func() {
	ch := make(chan struct{})
	k.mu.Lock()
	k.block[dev] = ch
	k.mu.Unlock()
	return func() { close(ch) }
}

// next returns the next recorded kernel call.
func (k *fakeKernel) next(t *testing.T) string {
	t.Helper()
	select {
	case c := <-k.calls:
		return c
	case <-time.After(wait):
		t.Fatal("no kernel call")
		return ""
	}
}

// none checks that no kernel call is queued right now.
func (k *fakeKernel) none(t *testing.T) {
	t.Helper()
	select {
	case c := <-k.calls:
		t.Fatalf("unexpected kernel call %q", c)
	default:
	}
}

func (f *fakeNVMe) setState(dev, st string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.ctrls {
		if f.ctrls[i].dev == dev {
			f.ctrls[i].state = st
		}
	}
}
