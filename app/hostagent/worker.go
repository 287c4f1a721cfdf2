package hostagent

import (
	"context"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
)

// worker owns the agent's NVMe decisions: it turns notifications into jobs
// for the lane of their path (one goroutine per path, so a command that
// hangs holds up that path only), keeps the timers (restrain time,
// connect retries) and the state file. Only its goroutine touches its
// fields; lanes report back on results.
type worker struct {
	a       *Agent
	ctx     context.Context // ends with Run; bounds timer callbacks and lanes' starts
	owned   map[targetKey][]ownedController
	lanes   map[targetKey]*lane
	pending map[targetKey]*pendingOp
	gen     uint64
	fired   chan timerEvent
	results chan laneResult
}

// pendingOp is a notification waiting for a timer: an inactive inside its
// restrain time, or an active whose connect failed and will be retried.
type pendingOp struct {
	stop Stopper
	gen  uint64
	n    l2proto.Notification
	at   time.Time // when the notification arrived
}

type timerEvent struct {
	key targetKey
	gen uint64
}

// latest is the generation of the newest notification per path; a failed
// connect is retried only if no newer notification arrived since.
type latest = map[targetKey]uint64

func (a *Agent) newWorker(ctx context.Context) (*worker, error) {
	owned, err := loadState(a.opt.StateFile)
	if err != nil {
		return nil, err
	}
	w := &worker{a: a, ctx: ctx, owned: map[targetKey][]ownedController{}, lanes: map[targetKey]*lane{},
		pending: map[targetKey]*pendingOp{}, fired: make(chan timerEvent), results: make(chan laneResult, 64)}
	for _, o := range w.reconcile(ctx, owned) {
		k := keyOfPath(o.Path)
		w.owned[k] = append(w.owned[k], o)
	}
	w.save()
	return w, nil
}

// reconcile forgets owned controllers that no longer exist (removed by
// hand, or lost in a reboot) and learns their current device names.
func (w *worker) reconcile(ctx context.Context, owned []ownedController) []ownedController {
	if len(owned) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.a.opt.NVMe.CommandTimeout)
	cs, err := w.a.nvme.ListControllers(cctx)
	cancel()
	w.a.m.op("list", err)
	if err != nil {
		w.a.log.Error("list controllers at start; keeping the state file as it is", "err", err)
		return owned
	}
	kept := owned[:0]
	for _, o := range owned {
		if c, ok := findController(cs, o.Path); ok {
			o.Device = c.Device
			if !o.CQTRead && c.State == "live" {
				// A state file of an older release, or a controller not
				// live when it was created.
				if err := o.setCQT(w.a.kern, c.Device); err != nil {
					w.a.log.Warn("reading an owned controller's command quiesce time", "device", c.Device, "err", err)
				}
			}
			kept = append(kept, o)
		} else {
			w.a.log.Info("owned controller is gone; forgetting it", "path", o.Path.String())
		}
	}
	return kept
}

// lane returns the lane of k, starting it with the controllers owned there.
func (w *worker) lane(k targetKey) *lane {
	l := w.lanes[k]
	if l == nil {
		l = newLane(w, k, slices.Clone(w.owned[k]))
		w.lanes[k] = l
	}
	return l
}

func (w *worker) run(ctx context.Context) {
	gens := latest{}
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
			gens[keyOf(ev.n)] = w.handle(ev)
		case t := <-w.fired:
			p := w.pending[t.key]
			if p == nil || p.gen != t.gen {
				continue // cancelled or superseded after the timer fired
			}
			delete(w.pending, t.key)
			w.act(t.key, p.n, p.gen, p.at)
		case r := <-w.results:
			w.result(r, gens)
		}
	}
}

// result takes a lane's report: the controllers it owns now, and for a
// failed connect of the newest notification, a retry later.
func (w *worker) result(r laneResult, gens latest) {
	if !slices.Equal(w.owned[r.key], r.owned) {
		if len(r.owned) == 0 {
			delete(w.owned, r.key)
		} else {
			w.owned[r.key] = r.owned
		}
		w.save()
	}
	if r.job.op == opConnect && r.err != nil {
		n := r.job.n
		if gens != nil && gens[r.key] != r.job.gen {
			return // superseded meanwhile
		}
		w.a.log.Error("connect failed; retrying later", "target", n.Target, "host", n.Host, "port", r.key.Port,
			"retry_in", w.a.opt.ConnectRetry, "err", r.err)
		w.arm(r.key, w.a.opt.ConnectRetry, n, r.job.gen, r.job.at)
	}
}

// stop ends every lane and timer: with exit, each lane first removes the
// controllers it owns. It waits for the lanes for at most twice the
// command timeout (a lane stuck in the kernel is left behind, reported)
// and saves what they report.
func (w *worker) stop(exit bool) {
	for k := range w.pending {
		w.cancel(k)
	}
	if exit {
		for k := range w.owned {
			w.lane(k).push(job{op: opExit}, true)
		}
	}
	for _, l := range w.lanes {
		l.close(exit)
	}
	deadline := time.After(2 * w.a.opt.NVMe.CommandTimeout)
	for k, l := range w.lanes {
	wait:
		for {
			select {
			case <-l.done:
				break wait
			case r := <-w.results:
				w.result(r, nil)
			case <-deadline:
				w.a.log.Error("stopping: nvme work still running; leaving it", "target", k.Target, "host", k.Host)
				break wait
			}
		}
	}
	for {
		select {
		case r := <-w.results:
			w.result(r, nil)
		default:
			return
		}
	}
}

// handle decides what a notification does and returns its generation.
func (w *worker) handle(ev event) uint64 {
	n := ev.n
	k := keyOf(n)
	_, hadPending := w.pending[k]
	w.cancel(k) // a newer notification supersedes whatever waits
	w.gen++
	gen := w.gen
	log := w.a.log.With("interface", ev.port, "target", n.Target, "host", n.Host, "port", k.Port,
		"protocol", n.Protocol, "seq", n.Seq)
	if n.State == inof.StateActive {
		if hadPending {
			log.Info("active within the restrain time or before a retry: pending action dropped")
		}
		w.act(k, n, gen, ev.at)
		return gen
	}
	if failsOver(w.a.opt.Failover, n.Reason) {
		// At once, whatever the restrain time: failing a dead path over
		// keeps its controller, so a flap costs one reconnect.
		w.lane(k).push(job{op: opFailover, gen: gen, n: n, at: ev.at}, true)
		if pathDead(n.Reason) {
			w.failOthers(k, n, gen, ev.at)
		}
		// The lanes' first action moves the I/O: let them run before this
		// goroutine logs (on a host with one CPU for the agent, it would
		// otherwise hold it until it blocks).
		runtime.Gosched()
	}
	if !w.forces(n.Reason) {
		log.Info("target inactive; controller kept for multipath and keep-alive", "reason", n.Reason,
			"disconnect_on", w.a.policy().disconnectOn)
		return gen
	}
	if d := w.a.policy().restrainTime; d > 0 {
		log.Info("target inactive; disconnect after the restrain time", "reason", n.Reason, "restrain_time", d)
		w.arm(k, d, n, gen, ev.at)
		return gen
	}
	w.act(k, n, gen, ev.at)
	return gen
}

// failOthers fails over this agent's controllers to the same target
// address and port from its other host addresses: a dead target address
// (its link down, its address moved, silent, or its switch gone) is dead
// from every host interface, and the one that could hear it may not be
// the one whose path runs there (a host whose own leaf died hears reason 7
// only through its other leaf). Those paths' own notifications are not
// superseded, and nothing is removed on their behalf.
func (w *worker) failOthers(k targetKey, n l2proto.Notification, gen uint64, at time.Time) {
	for ok := range w.owned {
		if ok == k || ok.Target != k.Target || ok.Port != k.Port || ok.Protocol != k.Protocol {
			continue
		}
		w.lane(ok).push(job{op: opFailover, gen: gen, n: n, at: at}, false)
		w.a.log.Info("target address dead: failing over its path from another host address too", "target", n.Target,
			"notified_host", n.Host, "host", ok.Host, "reason", n.Reason)
	}
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

// act queues n's work on its lane now: connect for active, disconnect
// for inactive. An active supersedes what the lane had queued; a
// disconnect goes after a failover queued for the same notification.
func (w *worker) act(k targetKey, n l2proto.Notification, gen uint64, at time.Time) {
	if n.State == inof.StateActive {
		w.lane(k).push(job{op: opConnect, gen: gen, n: n, at: at}, true)
		return
	}
	w.lane(k).push(job{op: opDisconnect, gen: gen, n: n, at: at}, false)
}

func (w *worker) arm(k targetKey, d time.Duration, n l2proto.Notification, gen uint64, at time.Time) {
	ev := timerEvent{key: k, gen: gen}
	stop := w.a.clk.AfterFunc(d, func() {
		select {
		case w.fired <- ev:
		case <-w.ctx.Done():
		}
	})
	w.pending[k] = &pendingOp{stop: stop, gen: gen, n: n, at: at}
}

func (w *worker) cancel(k targetKey) {
	if p := w.pending[k]; p != nil {
		p.stop.Stop()
		delete(w.pending, k)
	}
}

// all returns every owned controller in a stable order.
func (w *worker) all() []ownedController {
	var out []ownedController
	for _, os := range w.owned {
		out = append(out, os...)
	}
	slices.SortFunc(out, func(a, b ownedController) int { return strings.Compare(a.Path.String(), b.Path.String()) })
	return out
}

func (w *worker) save() {
	all := w.all()
	w.a.m.owned.Set(float64(len(all)))
	if err := saveState(w.a.opt.StateFile, all); err != nil {
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
