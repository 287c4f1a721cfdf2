package hostagent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
)

// jobOp is what a lane does for one notification.
type jobOp uint8

const (
	opConnect    jobOp = iota // make sure a controller exists
	opDisconnect              // remove this agent's controllers
	opFailover                // fail this agent's live controllers over
	opExit                    // remove every controller (disconnect_on_exit)
)

func (o jobOp) String() string {
	return [...]string{"connect", "disconnect", "failover", "exit"}[o]
}

// job is one unit of a lane's work.
type job struct {
	op  jobOp
	gen uint64 // the notification generation it belongs to
	n   l2proto.Notification
	at  time.Time // when the notification arrived (its frame was read)
}

// laneResult is what a lane reports to the worker after each job: the
// controllers it owns now, and the job's error.
type laneResult struct {
	key   targetKey
	job   job
	owned []ownedController
	err   error
}

// lane runs the NVMe work of one path (host address → target address and
// port): its jobs one at a time in its own goroutine, so a command that
// does not return holds up this path only, never another. It owns the
// controllers this agent created on the path; the worker learns them from
// every result.
type lane struct {
	w     *worker
	key   targetKey
	owned []ownedController // touched by the lane's goroutine only

	mu     sync.Mutex
	queue  []job
	closed bool
	exit   bool // closed: run the queue first (disconnect_on_exit)
	wake   chan struct{}
	done   chan struct{}
	stuck  atomic.Bool
}

func newLane(w *worker, k targetKey, owned []ownedController) *lane {
	l := &lane{w: w, key: k, owned: owned, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go l.run()
	return l
}

// push queues j; supersede drops what was queued before (a newer
// notification for the path replaces it; a job already running finishes).
func (l *lane) push(j job, supersede bool) {
	l.mu.Lock()
	if supersede {
		l.queue = l.queue[:0]
	}
	l.queue = append(l.queue, j)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// close ends the lane after the job in progress; with exit, after its
// queue too.
func (l *lane) close(exit bool) {
	l.mu.Lock()
	l.closed, l.exit = true, exit
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *lane) next() (job, bool, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed && !l.exit {
		return job{}, false, true
	}
	if len(l.queue) == 0 {
		return job{}, false, l.closed
	}
	j := l.queue[0]
	l.queue = slices.Delete(l.queue, 0, 1)
	return j, true, false
}

func (l *lane) run() {
	defer close(l.done)
	for {
		j, ok, end := l.next()
		if end {
			return
		}
		if !ok {
			<-l.wake
			continue
		}
		err := l.do(j)
		l.w.a.paths.refresh() // what the job changed, for the next failover's view
		l.w.results <- laneResult{key: l.key, job: j, owned: slices.Clone(l.owned), err: err}
	}
}

// do runs one job under the lane's deadline watch: a job still running
// after nvme.command_timeout is reported stuck (metric, log) once, and
// when it returns at last.
func (l *lane) do(j job) error {
	a := l.w.a
	start := time.Now()
	var fired atomic.Bool
	watch := a.watch.AfterFunc(a.opt.NVMe.CommandTimeout, func() {
		fired.Store(true)
		l.stuck.Store(true)
		a.m.stuck.WithLabelValues(j.op.String()).Inc()
		a.m.stuckNow.Inc()
		a.log.Error("nvme work did not return within nvme.command_timeout; other paths go on",
			"op", j.op.String(), "target", l.key.Target, "host", l.key.Host, "port", l.key.Port,
			"timeout", a.opt.NVMe.CommandTimeout)
	})
	err := l.job(j)
	if !watch.Stop() && fired.Load() {
		l.stuck.Store(false)
		a.m.stuckNow.Dec()
		a.log.Warn("stuck nvme work returned", "op", j.op.String(), "target", l.key.Target,
			"after", time.Since(start).Round(time.Millisecond), "err", err)
	}
	return err
}

func (l *lane) job(j job) error {
	ctx := l.w.ctx
	switch j.op {
	case opConnect:
		l.rejoin(j)
		return l.connect(ctx, j.n.NQN, j.at)
	case opFailover:
		l.failover(j)
		return nil
	case opDisconnect:
		l.remove(ctx, j.n.Reason, "reason", j.n.Reason)
	case opExit:
		l.remove(ctx, inof.ReasonNone, "reason", "exit")
	}
	return nil
}

// cmd bounds one nvme-cli run by the command timeout only: a command that
// has started is not killed when the agent stops, because a connect killed
// after the kernel made the controller would leave one nobody records.
func (l *lane) cmd(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), l.w.a.opt.NVMe.CommandTimeout)
}

// controllers lists the kernel's NVMe-oF controllers as sysfs shows them
// now: what nvme list-subsys reads, without starting a process. Before a
// connect (at link up, a zone add) that process competed with the
// kernel's own connect work for the host's CPU: in the loaded test guests
// the kernel's reconnect took 0.3–1.1 s beside it and 0.1–0.4 s without
// it (docs/realhost.md, "Round 3"). nvme-cli lists them when sysfs cannot
// be read, or has no nvme class (a kernel without NVMe, a stand-in
// nvme-cli in a test fabric).
func (l *lane) controllers(ctx context.Context) ([]Controller, error) {
	k := l.w.a.kern
	if !k.HasNVMe() {
		return l.list(ctx)
	}
	ps, err := k.Paths()
	if err != nil {
		l.w.a.log.Warn("reading controllers from sysfs; asking nvme-cli", "err", err)
		return l.list(ctx)
	}
	cs := make([]Controller, len(ps))
	for i, p := range ps {
		cs[i] = p.Controller
	}
	return cs, nil
}

func (l *lane) list(ctx context.Context) ([]Controller, error) {
	cctx, cancel := l.cmd(ctx)
	defer cancel()
	cs, err := l.w.a.nvme.ListControllers(cctx)
	l.w.a.m.op("list", err)
	return cs, err
}

func (l *lane) base() Path {
	k := l.key
	return Path{Transport: transport(k.Protocol), TrAddr: k.Target.String(), TrSvcID: k.svc(), HostTrAddr: k.Host.String()}
}

// connect makes sure a controller exists for every subsystem of the
// target: the notification's NQN, or else each one the target's discovery
// log lists for that address and port. It never connects a path that
// already has a controller (in any state but deleting: a reconnecting
// controller is kept for its return, the kernel reconnects it).
func (l *lane) connect(ctx context.Context, nqn string, notified time.Time) error {
	a := l.w.a
	existing, err := l.controllers(ctx)
	if err != nil {
		return err
	}
	base := l.base()
	var paths []Path
	if nqn != "" {
		p := base
		p.SubNQN = nqn
		paths = append(paths, p)
	} else if paths, err = l.discover(ctx, base); err != nil {
		return err
	}
	var errs []error
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...) // stopping: start nothing new
		}
		log := a.log.With("path", p.String())
		if c, ok := findController(existing, p); ok {
			log.Info("controller exists; not connecting again", "device", c.Device, "state", c.State)
			continue
		}
		a.paths.changing()
		hostSecret, ctrlSecret, err := authFor(a.opt.NVMe.Auth, p.SubNQN)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cctx, cancel := l.cmd(ctx)
		began := time.Now()
		dev, err := a.nvme.Connect(cctx, p, ConnectParams{HostNQN: a.hostNQN, KeepAliveTmo: a.opt.NVMe.KeepAliveTmo,
			ReconnectDelay: a.opt.NVMe.ReconnectDelay, CtrlLossTmo: a.opt.NVMe.CtrlLossTmo,
			HostSecret: hostSecret, CtrlSecret: ctrlSecret})
		cancel()
		a.m.op("connect", err)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// Where a connect's time goes: nvme connect itself (nvme-cli and
		// the kernel's connect), and since the notification arrived.
		took := time.Since(began).Round(time.Millisecond)
		o := ownedController{Path: p, Device: dev}
		cqt := "unknown"
		if err := o.setCQT(a.kern, dev); err != nil {
			log.Warn("reading the controller's command quiesce time (Identify Controller); its paths fail over at once",
				"device", dev, "err", err)
		} else if o.CQTRead {
			cqt = (time.Duration(o.CQTMillis) * time.Millisecond).String()
		}
		log.Info("connected", "device", dev, "took", took,
			"notified_to_connected", time.Since(notified).Round(time.Millisecond), "cqt", cqt)
		if o.holdsForCQT(a.opt.Failover) {
			log.Warn("the target reports a command quiesce time: this path is not failed over at once (failover.cqt: respect)",
				"device", dev, "cqt", cqt)
		}
		l.owned = append(l.owned, o)
		if a.opt.Failover.LastPath == LastPathFailFast {
			if err := a.kern.FailFast(dev); err != nil {
				log.Error("last_path fail-fast: setting fast_io_fail_tmo", "device", dev, "err", err)
			}
		}
	}
	return errors.Join(errs...)
}

// rejoin hurries the kernel's reconnect of the kept controllers on the path
// when the fabric says its target is active again. A reconnect attempt the
// kernel began while the link was down still waits for an answer to its
// SYN (nvme-tcp gives a connect 3 s), and the next one would come only
// after that and reconnect_delay: Kernel.Rejoin aborts the waiting connect
// with reconnect_delay 0 for a moment, so the kernel tries again at once
// over the live link. Only controllers that are reconnecting, TCP only,
// nothing with failover method none (keep-alive decides).
func (l *lane) rejoin(j job) {
	a := l.w.a
	if len(l.owned) == 0 || l.key.Protocol != inof.ProtocolTCP || a.opt.Failover.Method == FailoverNone {
		return
	}
	start := time.Now()
	var devs []string
	for _, o := range l.owned {
		// The recorded device first, read alone: a controller keeps its
		// name while it exists, and the view may be stale just now (the
		// other paths' connects at link up), costing a read of every
		// controller before the check.
		p, err := a.kern.Path(o.Device)
		if err != nil || !samePath(p.Path, o.Path) || !p.usable() {
			var ok bool
			if p, ok = l.current(o); !ok {
				continue
			}
		}
		if p.State == "connecting" {
			devs = append(devs, p.Device)
		}
	}
	if len(devs) == 0 {
		return // live already, or gone
	}
	n, err := a.kern.Rejoin(l.key.Host, l.key.Target, l.key.Port, devs)
	if err != nil {
		a.log.Warn("path back: hurrying the reconnect", "target", l.key.Target, "host", l.key.Host, "devices", devs, "err", err)
	}
	if n > 0 {
		a.log.Info("path back: aborted the reconnect attempt begun while it was down; the kernel tries again at once",
			"target", l.key.Target, "host", l.key.Host, "devices", devs, "connects", n,
			"notified_to_acted", time.Since(j.at).Round(time.Microsecond), "took", time.Since(start).Round(time.Microsecond))
	} else if err == nil {
		// Between two attempts: the next one goes over the live link
		// within reconnect_delay, and nothing in sysfs starts it sooner
		// (a reset of a connecting controller is refused).
		a.log.Info("path back: no reconnect attempt waiting; the kernel's next one is due within reconnect_delay",
			"target", l.key.Target, "host", l.key.Host, "devices", devs,
			"notified_to_checked", time.Since(j.at).Round(time.Microsecond), "check_took", time.Since(start).Round(time.Microsecond))
	}
}

// current returns the kernel's controller on o's path as sysfs shows it
// now: found by path in the agent's view (read afresh when stale), then
// that one device's attributes read (the view may be seconds old, and the
// kernel reuses names).
func (l *lane) current(o ownedController) (KernelPath, bool) {
	a := l.w.a
	paths, err := a.paths.paths()
	if err != nil {
		return KernelPath{}, false
	}
	p, ok := findKernelPath(paths, o.Path)
	if !ok {
		return KernelPath{}, false
	}
	cur, err := a.kern.Path(p.Device)
	if err != nil || !samePath(cur.Path, o.Path) || !cur.usable() {
		return KernelPath{}, false
	}
	return cur, true
}

// discover asks the target's discovery controller for its subsystems on
// base's address and port, as nvme-snsd does when it has no NQN.
func (l *lane) discover(ctx context.Context, base Path) ([]Path, error) {
	a := l.w.a
	dport := base.TrSvcID // nvme-snsd's choice for RDMA
	if d := a.opt.NVMe.DiscoveryPort; d != 0 {
		dport = strconv.Itoa(int(d))
	} else if base.Transport == "tcp" {
		dport = "8009" // the IANA NVMe/TCP discovery port
	}
	cctx, cancel := l.cmd(ctx)
	recs, err := a.nvme.Discover(cctx, base.Transport, base.TrAddr, dport, base.HostTrAddr, a.hostNQN)
	cancel()
	a.m.op("discover", err)
	if err != nil {
		return nil, err
	}
	var paths []Path
	for _, r := range recs {
		if r.Subtype != "nvme subsystem" || r.Transport != base.Transport || !sameAddr(r.TrAddr, base.TrAddr) ||
			r.TrSvcID != base.TrSvcID || r.SubNQN == "" {
			continue
		}
		p := base
		p.SubNQN = r.SubNQN
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("discovery log of %s:%s lists no subsystem at %s:%s (%d records)",
			base.TrAddr, dport, base.TrAddr, base.TrSvcID, len(recs))
	}
	return paths, nil
}

// failover fails this agent's live controllers on the path over, as the
// policy table says for the job's reason and whether a live sibling path
// exists. The siblings come from the agent's view of sysfs (pathView):
// nothing is read from sysfs before the first action, and for a dead path
// the TCP abort comes first of all. The controllers are kept: the kernel
// reconnects them when the path is back.
func (l *lane) failover(j job) {
	a := l.w.a
	r := j.n.Reason
	if len(l.owned) == 0 {
		a.log.Info("no controller of ours to fail over", "target", l.key.Target, "host", l.key.Host, "reason", r)
		return
	}
	start := time.Now()
	early := l.abortFirst(r)
	paths, err := a.paths.paths()
	viewed := time.Since(start)
	if err != nil {
		a.m.failover(r, "error")
		a.log.Error("failover: read controllers from sysfs", "target", l.key.Target, "err", err)
		return
	}
	for _, o := range l.owned {
		p, ok := findKernelPath(paths, o.Path)
		log := a.log.With("path", o.Path.String(), "reason", r)
		if !ok {
			log.Info("failover: controller gone")
			continue
		}
		if o.holdsForCQT(a.opt.Failover) {
			log.Info("path left to keep-alive: the target reports a command quiesce time (failover.cqt: respect)",
				"device", p.Device, "cqt", time.Duration(o.CQTMillis)*time.Millisecond)
			a.m.failover(r, "cqt")
			continue
		}
		sib := siblingLive(paths, p)
		act := failoverAction(a.opt.Failover, r, sib)
		if act != failPath {
			log.Info("path kept for keep-alive", "device", p.Device, "state", p.State, "live_sibling", sib,
				"last_path", a.opt.Failover.LastPath)
			a.m.failover(r, "kept")
			continue
		}
		cur, ok := l.current(o)
		if !ok {
			log.Info("failover: controller gone", "device", p.Device)
			continue
		}
		acted := early
		if early.IsZero() && cur.State != "live" {
			log.Info("failover: path already not live", "device", cur.Device, "state", cur.State)
			a.m.failover(r, "not-live")
			continue
		}
		if early.IsZero() {
			acted, err = l.failPath(cur, l.mayAbort())
		} else if a.opt.Failover.Method == FailoverBoth {
			err = a.kern.Reset(cur.Device) // EBUSY (recovery under way) is no error
		}
		if err != nil {
			log.Error("failover failed", "device", cur.Device, "err", err)
			a.m.failover(r, "error")
			continue
		}
		kind := "last-path"
		if sib {
			kind = "sibling"
		}
		a.m.failoverActed.Observe(acted.Sub(j.at).Seconds()) // before the count, which tests wait for
		a.m.failover(r, kind)
		// Where a failover's time goes: from the notification's arrival
		// to the first action (which moves the I/O), the view of sysfs,
		// all done.
		log.Info("path failed over", "device", cur.Device, "live_sibling", sib, "method", a.opt.Failover.Method,
			"notified_to_acted", acted.Sub(j.at).Round(time.Microsecond), "acted", acted.Sub(start).Round(time.Microsecond),
			"view", viewed.Round(time.Microsecond), "done", time.Since(start).Round(time.Microsecond))
	}
}

// abortFirst aborts the path's TCP connections before anything else, when
// the policy fails the path over whatever sysfs says (a dead path, not
// kept as a last path, with a method that aborts): it is the first thing
// that moves the path's I/O. Every controller on this path (host address to
// target address and port) is dead with it, so aborting all of their
// connections only starts each one's error recovery sooner; none is
// removed. It returns when it aborted something (zero: nothing aborted,
// the per-controller failover does the work).
func (l *lane) abortFirst(r inof.Reason) time.Time {
	a := l.w.a
	m := a.opt.Failover.Method
	if !pathDead(r) || a.opt.Failover.LastPath == LastPathKeep || (m != FailoverAbort && m != FailoverBoth) ||
		l.key.Protocol != inof.ProtocolTCP || !l.mayAbort() {
		return time.Time{}
	}
	n, err := a.kern.AbortTCP(l.key.Host, l.key.Target, l.key.Port)
	if err != nil {
		a.log.Warn("failover: aborting the path's TCP connections", "target", l.key.Target, "err", err)
	}
	if n == 0 {
		return time.Time{}
	}
	return time.Now()
}

// mayAbort reports whether the path's TCP connections may be aborted: an
// abort reaches every controller on the path (host address to target
// address and port), so none of them may be one held for its target's
// command quiesce time.
func (l *lane) mayAbort() bool {
	return !slices.ContainsFunc(l.owned, func(o ownedController) bool { return o.holdsForCQT(l.w.a.opt.Failover) })
}

// failPath pushes one live controller into error recovery with the
// configured method (RDMA has no sockets to abort: it is reset; so is a
// path whose connections may not be aborted, abort false), and returns
// when its first action was done.
func (l *lane) failPath(p KernelPath, abort bool) (time.Time, error) {
	a := l.w.a
	m := a.opt.Failover.Method
	var errs []error
	if abort && (m == FailoverAbort || m == FailoverBoth) && p.Transport == "tcp" {
		host, herr := netip.ParseAddr(p.HostTrAddr)
		tgt, terr := netip.ParseAddr(p.TrAddr)
		port, perr := strconv.ParseUint(p.TrSvcID, 10, 16)
		if herr != nil || terr != nil || perr != nil {
			errs = append(errs, fmt.Errorf("abort: path %s: unparsable address", p.Path))
		} else if n, err := a.kern.AbortTCP(host, tgt, uint16(port)); err != nil {
			errs = append(errs, fmt.Errorf("abort: %w", err))
		} else if n > 0 {
			acted := time.Now()
			if m == FailoverAbort {
				return acted, nil
			}
			// both: the reset finds recovery under way (EBUSY, no error)
			// or covers what the abort missed.
			return acted, a.kern.Reset(p.Device)
		}
		// Nothing aborted (or it failed): reset instead.
	}
	err := a.kern.Reset(p.Device)
	if err != nil {
		return time.Time{}, errors.Join(append(errs, err)...)
	}
	return time.Now(), nil
}

// remove removes the controllers this agent created on the path. A
// controller still live on a path that died is failed over first and
// removed once the reset has taken it out of live: nvme disconnect of a
// live controller whose path died blocked for about a minute on Linux 6.1
// (docs/realhost.md, finding 2).
func (l *lane) remove(ctx context.Context, reason inof.Reason, logArgs ...any) {
	a := l.w.a
	if len(l.owned) == 0 {
		a.log.Info("no controller of ours to disconnect", logArgs...)
		return
	}
	existing, err := l.list(ctx)
	if err != nil {
		a.m.op("disconnect", err)
		a.log.Error("disconnect: list controllers", append(logArgs, "err", err)...)
		return
	}
	gone := map[Path]bool{}
	for _, o := range l.owned {
		log := a.log.With(append(logArgs, "path", o.Path.String())...)
		c, ok := findController(existing, o.Path)
		if !ok {
			log.Info("owned controller already gone")
			gone[o.Path] = true
			continue
		}
		if c.State == "live" && pathDead(reason) && a.opt.Failover.Method != FailoverNone {
			if p, err := a.kern.Path(c.Device); err == nil && samePath(p.Path, o.Path) && p.State == "live" {
				if _, err := l.failPath(p, l.mayAbort()); err != nil {
					log.Warn("reset before disconnect failed", "device", c.Device, "err", err)
				}
			}
		}
		a.paths.changing()
		cctx, cancel := l.cmd(ctx)
		err := a.nvme.Disconnect(cctx, c.Device)
		cancel()
		a.m.op("disconnect", err)
		if err != nil {
			log.Error("disconnect failed", "device", c.Device, "err", err)
			continue
		}
		log.Info("disconnected", "device", c.Device)
		gone[o.Path] = true
	}
	l.owned = slices.DeleteFunc(l.owned, func(o ownedController) bool { return gone[o.Path] })
}

// keyOfPath is the lane of an owned controller.
func keyOfPath(p Path) targetKey {
	var k targetKey
	k.Host, _ = netip.ParseAddr(p.HostTrAddr)
	k.Target, _ = netip.ParseAddr(p.TrAddr)
	k.Host, k.Target = k.Host.Unmap(), k.Target.Unmap()
	if port, err := strconv.ParseUint(p.TrSvcID, 10, 16); err == nil {
		k.Port = uint16(port)
	}
	switch p.Transport {
	case "rdma":
		k.Protocol = inof.ProtocolRoCE
	case "tcp":
		k.Protocol = inof.ProtocolTCP
	}
	return k
}
