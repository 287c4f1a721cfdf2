package hostagent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
)

// worker owns the NVMe side: the controllers this agent created, pending
// disconnects (restrain time) and connect retries. Only its goroutine
// touches them; it runs nvme-cli one command at a time.
type worker struct {
	a       *Agent
	ctx     context.Context // ends with Run; bounds timer callbacks
	owned   []ownedController
	pending map[targetKey]*pendingOp
	gen     uint64
	fired   chan timerEvent
}

// pendingOp is a notification waiting for a timer: an inactive inside its
// restrain time, or an active whose connect failed and will be retried.
type pendingOp struct {
	stop Stopper
	gen  uint64
	n    l2proto.Notification
}

type timerEvent struct {
	key targetKey
	gen uint64
}

func (a *Agent) newWorker(ctx context.Context) (*worker, error) {
	owned, err := loadState(a.opt.StateFile)
	if err != nil {
		return nil, err
	}
	w := &worker{a: a, ctx: ctx, owned: owned, pending: map[targetKey]*pendingOp{}, fired: make(chan timerEvent)}
	w.reconcile(ctx)
	return w, nil
}

// reconcile forgets owned controllers that no longer exist (removed by
// hand, or lost in a reboot) and learns their current device names.
func (w *worker) reconcile(ctx context.Context) {
	if len(w.owned) == 0 {
		w.a.m.owned.Set(0)
		return
	}
	cs, err := w.list(ctx)
	if err != nil {
		w.a.log.Error("list controllers at start; keeping the state file as it is", "err", err)
		w.a.m.owned.Set(float64(len(w.owned)))
		return
	}
	kept := w.owned[:0]
	for _, o := range w.owned {
		if c, ok := findController(cs, o.Path); ok {
			o.Device = c.Device
			kept = append(kept, o)
		} else {
			w.a.log.Info("owned controller is gone; forgetting it", "path", o.Path.String())
		}
	}
	w.owned = kept
	w.save()
}

func (w *worker) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		default:
		}
		select {
		case <-ctx.Done():
			return
		case ev := <-w.a.events:
			w.handle(ctx, ev)
		case t := <-w.fired:
			p := w.pending[t.key]
			if p == nil || p.gen != t.gen {
				continue // cancelled or superseded after the timer fired
			}
			delete(w.pending, t.key)
			w.act(ctx, p.n)
		}
	}
}

// stop cancels every pending timer.
func (w *worker) stop() {
	for k := range w.pending {
		w.cancel(k)
	}
}

func (w *worker) handle(ctx context.Context, ev event) {
	n := ev.n
	k := keyOf(n)
	_, hadPending := w.pending[k]
	w.cancel(k) // a newer notification supersedes whatever waits
	log := w.a.log.With("interface", ev.port, "target", n.Target, "host", n.Host, "port", k.Port,
		"protocol", n.Protocol, "seq", n.Seq)
	if n.State == inof.StateActive {
		if hadPending {
			log.Info("active within the restrain time or before a retry: pending action dropped")
		}
		w.act(ctx, n)
		return
	}
	if !w.forces(n.Reason) {
		log.Info("target inactive; controller kept for multipath and keep-alive", "reason", n.Reason,
			"disconnect_on", w.a.policy().disconnectOn)
		return
	}
	if d := w.a.policy().restrainTime; d > 0 {
		log.Info("target inactive; disconnect after the restrain time", "reason", n.Reason, "restrain_time", d)
		w.arm(k, d, n)
		return
	}
	w.act(ctx, n)
}

func (w *worker) forces(r inof.Reason) bool {
	switch w.a.policy().disconnectOn {
	case DisconnectAll:
		return true
	case DisconnectNever:
		return false
	}
	return r.Forced()
}

// act carries out n now: connect for active, disconnect for inactive.
func (w *worker) act(ctx context.Context, n l2proto.Notification) {
	k := keyOf(n)
	if n.State == inof.StateActive {
		if err := w.connect(ctx, k, n.NQN); err != nil {
			w.a.log.Error("connect failed; retrying later", "target", n.Target, "host", n.Host, "port", k.Port,
				"retry_in", w.a.opt.ConnectRetry, "err", err)
			w.arm(k, w.a.opt.ConnectRetry, n)
		}
		return
	}
	w.disconnect(ctx, k, n.Reason)
}

func (w *worker) arm(k targetKey, d time.Duration, n l2proto.Notification) {
	w.gen++
	ev := timerEvent{key: k, gen: w.gen}
	stop := w.a.clk.AfterFunc(d, func() {
		select {
		case w.fired <- ev:
		case <-w.ctx.Done():
		}
	})
	w.pending[k] = &pendingOp{stop: stop, gen: ev.gen, n: n}
}

func (w *worker) cancel(k targetKey) {
	if p := w.pending[k]; p != nil {
		p.stop.Stop()
		delete(w.pending, k)
	}
}

// cmd bounds one nvme-cli run by the command timeout only: a command that
// has started is not killed when the agent stops, because a connect killed
// after the kernel made the controller would leave one nobody records.
func (w *worker) cmd(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), w.a.opt.NVMe.CommandTimeout)
}

func (w *worker) list(ctx context.Context) ([]Controller, error) {
	cctx, cancel := w.cmd(ctx)
	defer cancel()
	cs, err := w.a.nvme.ListControllers(cctx)
	w.a.m.op("list", err)
	return cs, err
}

// connect makes sure a controller exists for every subsystem of the
// target: the notification's NQN, or else each one the target's discovery
// log lists for that address and port. It never connects a path that
// already has a controller.
func (w *worker) connect(ctx context.Context, k targetKey, nqn string) error {
	tr := transport(k.Protocol)
	existing, err := w.list(ctx)
	if err != nil {
		return err
	}
	base := Path{Transport: tr, TrAddr: k.Target.String(), TrSvcID: k.svc(), HostTrAddr: k.Host.String()}
	var paths []Path
	if nqn != "" {
		p := base
		p.SubNQN = nqn
		paths = append(paths, p)
	} else if paths, err = w.discover(ctx, base); err != nil {
		return err
	}
	var errs []error
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...) // stopping: start nothing new
		}
		log := w.a.log.With("path", p.String())
		if c, ok := findController(existing, p); ok {
			log.Info("controller exists; not connecting again", "device", c.Device, "state", c.State)
			continue
		}
		cctx, cancel := w.cmd(ctx)
		dev, err := w.a.nvme.Connect(cctx, p, ConnectParams{HostNQN: w.a.hostNQN, KeepAliveTmo: w.a.opt.NVMe.KeepAliveTmo,
			ReconnectDelay: w.a.opt.NVMe.ReconnectDelay, CtrlLossTmo: w.a.opt.NVMe.CtrlLossTmo})
		cancel()
		w.a.m.op("connect", err)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("connected", "device", dev)
		w.owned = append(w.owned, ownedController{Path: p, Device: dev})
		w.save()
	}
	return errors.Join(errs...)
}

// discover asks the target's discovery controller for its subsystems on
// base's address and port, as nvme-snsd does when it has no NQN.
func (w *worker) discover(ctx context.Context, base Path) ([]Path, error) {
	dport := base.TrSvcID // nvme-snsd's choice for RDMA
	if d := w.a.opt.NVMe.DiscoveryPort; d != 0 {
		dport = strconv.Itoa(int(d))
	} else if base.Transport == "tcp" {
		dport = "8009" // the IANA NVMe/TCP discovery port
	}
	cctx, cancel := w.cmd(ctx)
	recs, err := w.a.nvme.Discover(cctx, base.Transport, base.TrAddr, dport, base.HostTrAddr, w.a.hostNQN)
	cancel()
	w.a.m.op("discover", err)
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

// disconnect removes the controllers this agent created for the target;
// controllers it did not create are never touched.
func (w *worker) disconnect(ctx context.Context, k targetKey, reason inof.Reason) {
	base := Path{Transport: transport(k.Protocol), TrAddr: k.Target.String(), TrSvcID: k.svc(), HostTrAddr: k.Host.String()}
	w.remove(ctx, func(o ownedController) bool {
		p := o.Path
		p.SubNQN = ""
		return samePath(p, base)
	}, "reason", reason)
}

// disconnectAll removes every controller this agent created (shutdown with
// disconnect_on_exit).
func (w *worker) disconnectAll(ctx context.Context) {
	w.remove(ctx, func(ownedController) bool { return true }, "reason", "exit")
}

func (w *worker) remove(ctx context.Context, match func(ownedController) bool, logArgs ...any) {
	var mine []ownedController
	for _, o := range w.owned {
		if match(o) {
			mine = append(mine, o)
		}
	}
	if len(mine) == 0 {
		w.a.log.Info("no controller of ours to disconnect", logArgs...)
		return
	}
	existing, err := w.list(ctx)
	if err != nil {
		w.a.m.op("disconnect", err)
		w.a.log.Error("disconnect: list controllers", append(logArgs, "err", err)...)
		return
	}
	gone := map[Path]bool{}
	for _, o := range mine {
		log := w.a.log.With(append(logArgs, "path", o.Path.String())...)
		c, ok := findController(existing, o.Path)
		if !ok {
			log.Info("owned controller already gone")
			gone[o.Path] = true
			continue
		}
		cctx, cancel := w.cmd(ctx)
		err := w.a.nvme.Disconnect(cctx, c.Device)
		cancel()
		w.a.m.op("disconnect", err)
		if err != nil {
			log.Error("disconnect failed", "device", c.Device, "err", err)
			continue
		}
		log.Info("disconnected", "device", c.Device)
		gone[o.Path] = true
	}
	w.owned = slices.DeleteFunc(w.owned, func(o ownedController) bool { return gone[o.Path] })
	w.save()
}

func (w *worker) save() {
	w.a.m.owned.Set(float64(len(w.owned)))
	if err := saveState(w.a.opt.StateFile, w.owned); err != nil {
		w.a.log.Error("save state", "err", err)
	}
}

// findController returns the usable controller on path p.
func findController(cs []Controller, p Path) (Controller, bool) {
	for _, c := range cs {
		if c.usable() && samePath(c.Path, p) {
			return c, true
		}
	}
	return Controller{}, false
}

func samePath(a, b Path) bool {
	return a.Transport == b.Transport && sameAddr(a.TrAddr, b.TrAddr) && a.TrSvcID == b.TrSvcID &&
		sameAddr(a.HostTrAddr, b.HostTrAddr) && a.SubNQN == b.SubNQN
}

// sameAddr compares addresses as IPs when both parse (IPv6 spellings
// differ), else as text.
func sameAddr(a, b string) bool {
	x, ex := netip.ParseAddr(a)
	y, ey := netip.ParseAddr(b)
	if ex == nil && ey == nil {
		return x.Unmap() == y.Unmap()
	}
	return a == b
}
