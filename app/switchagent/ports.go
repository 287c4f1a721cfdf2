package switchagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"

	"github.com/openinof/inof/l2proto"
)

// portSide is the agent's side toward its access ports: the registration
// table, each port's reader and notifier, the carrier watcher and the
// watcher of protocol frames on other interfaces. Its goroutines hand the
// loop registrations (the table's events), zone queries and carrier losses;
// the loop hands it notices (notify) and reloads (reconcile).
type portSide struct {
	opts  Options
	log   *slog.Logger
	evlog *slog.Logger // Config.EventLogger
	met   *metrics
	tasks func() *tasks // the agent's, once Run set them
	// openLink, watchLinks and watchStray are Config's.
	openLink   func(port string) (l2proto.Link, error)
	watchLinks func(ctx context.Context, fn func(l2proto.LinkState)) error
	watchStray func(ctx context.Context, fn func(ifname string, frame []byte)) error
	// mu guards reg, ports and stray against the metrics collector and the
	// watchers; after open only a reload changes ports, from the loop.
	mu    sync.Mutex
	reg   *l2proto.Registry
	ports map[string]*accessPort // replaced whole (under mu) by a reload
	stray *l2proto.StrayWatcher  // nil until watchStrayFrames opened it (or with Config.WatchStray)
	// queries carries zone queries to the loop (full: dropped and counted).
	queries chan portQuery
}

type accessPort struct {
	name string
	link l2proto.Link
	nt   *l2proto.Notifier
	sp   *l2proto.SwitchPort
	stop context.CancelFunc // ends the port's goroutines (startPort)
	done chan struct{}      // closed when they have ended
}

type portQuery struct {
	port string
	q    l2proto.ZoneQuery
}

func newPortSide(a *Agent, cfg Config) *portSide {
	return &portSide{opts: cfg.Options, log: cfg.Logger, evlog: cfg.EventLogger, met: a.met, tasks: func() *tasks { return a.tasks },
		openLink: cfg.OpenLink, watchLinks: cfg.WatchLinks, watchStray: cfg.WatchStray,
		queries: make(chan portQuery, 256)}
}

// open builds the registration table and opens the access ports.
func (s *portSide) open() error {
	reg, err := l2proto.NewRegistry(l2proto.RegistryConfig{})
	if err != nil {
		return fmt.Errorf("switchagent: %w", err)
	}
	ports := map[string]*accessPort{}
	for _, name := range s.opts.AccessPorts {
		p, err := s.openPort(reg, name, slices.Contains(s.opts.LegacyV0Ports, name))
		if err != nil {
			for _, q := range ports {
				q.link.Close()
			}
			return err
		}
		ports[name] = p
	}
	s.mu.Lock()
	s.reg, s.ports = reg, ports
	s.mu.Unlock()
	return nil
}

// run starts the table, the ports and the watchers.
func (s *portSide) run() {
	t := s.tasks()
	t.spawn("registry", s.reg.Run)
	for _, p := range s.ports {
		s.startPort(p)
	}
	t.spawn("link watcher", s.watchCarriers)
	t.spawn("stray frames", s.watchStrayFrames)
}

// registrations are the registration table's events (nil before open).
func (s *portSide) registrations() <-chan l2proto.Event {
	if s.reg == nil {
		return nil
	}
	return s.reg.Events()
}

// lookup returns the registration of addr on port.
func (s *portSide) lookup(port string, addr netip.Addr) (l2proto.Entry, bool) {
	return s.reg.Lookup(port, addr)
}

// entries returns a copy of the registration table.
func (s *portSide) entries() []l2proto.Entry { return s.reg.Entries() }

func (s *portSide) openPort(reg *l2proto.Registry, name string, legacyV0 bool) (*accessPort, error) {
	link, err := s.openLink(name)
	if err != nil {
		return nil, fmt.Errorf("switchagent: access port %s: %w", name, err)
	}
	nt, err := l2proto.NewNotifier(l2proto.NotifierConfig{Link: link, LegacyV0: legacyV0,
		OnResult: s.met.notified, Logger: s.log})
	if err != nil {
		link.Close()
		return nil, fmt.Errorf("switchagent: access port %s: %w", name, err)
	}
	sp, err := l2proto.NewSwitchPort(l2proto.SwitchPortConfig{Link: link, Registry: reg, Notifier: nt,
		Drops: s.met.drops, Logger: s.log, Limits: s.opts.AccessLimits.portLimits(),
		OnQuery: func(port string, q l2proto.ZoneQuery) {
			select {
			case s.queries <- portQuery{port, q}:
			default:
				s.met.queriesDropped.Inc()
			}
		}})
	if err != nil {
		link.Close()
		return nil, fmt.Errorf("switchagent: access port %s: %w", name, err)
	}
	return &accessPort{name: name, link: link, nt: nt, sp: sp}, nil
}

// startPort runs a port's notifier and reader until the agent stops or
// the port is removed (p.stop).
func (s *portSide) startPort(p *accessPort) {
	t := s.tasks()
	pctx, stop := context.WithCancel(t.ctx)
	p.stop, p.done = stop, make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	t.spawnIn(pctx, "notifier "+p.name, func(ctx context.Context) error { defer wg.Done(); return p.nt.Run(ctx) })
	t.spawnIn(pctx, "port "+p.name, func(ctx context.Context) error { defer wg.Done(); return p.sp.Run(ctx) })
	go func() { wg.Wait(); close(p.done) }()
}

// reconcile (loop) opens the access ports next adds and closes those it
// drops; it returns the ports now open. A port that cannot be opened is
// reported and left out; the others still change.
func (s *portSide) reconcile(next Options) ([]string, error) {
	s.mu.Lock()
	cur := s.ports
	s.mu.Unlock()
	ports := maps.Clone(cur)
	var errs []error
	for _, name := range next.AccessPorts {
		if ports[name] != nil {
			continue
		}
		p, err := s.openPort(s.reg, name, slices.Contains(next.LegacyV0Ports, name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.startPort(p)
		ports[name] = p
		s.log.Info("access port added", "port", name)
	}
	var gone []*accessPort
	for name, p := range ports {
		if !slices.Contains(next.AccessPorts, name) {
			gone = append(gone, p)
			delete(ports, name)
		}
	}
	s.mu.Lock()
	s.ports = ports
	stray := s.stray
	s.mu.Unlock()
	names := slices.Sorted(maps.Keys(ports))
	if stray != nil {
		if err := stray.SetAccessPorts(names); err != nil {
			errs = append(errs, fmt.Errorf("switchagent: %w", err))
		}
	}
	for _, p := range gone {
		p.stop()
		<-p.done
		s.reg.LinkDown(p.name) // its devices leave as on a link down
		s.log.Info("access port removed", "port", p.name)
	}
	return names, errors.Join(errs...)
}

// isAccessPort reports whether name is an access port now.
func (s *portSide) isAccessPort(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ports[name]
	return ok
}

// names returns the access ports now open, sorted.
func (s *portSide) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.ports))
}

// watchCarriers tells the registration table of the access ports that
// lose carrier: the table's events carry the loss on (Removed for its
// entries, then PortDown), the one path by which it reaches the loop.
func (s *portSide) watchCarriers(ctx context.Context) error {
	watch := s.watchLinks
	if watch == nil {
		w, err := l2proto.NewLinkWatcher(s.log)
		if err != nil {
			return err
		}
		watch = w.Run
	}
	err := watch(ctx, func(st l2proto.LinkState) {
		if !st.Running && s.isAccessPort(st.Name) {
			s.reg.LinkDown(st.Name)
		}
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// watchStrayFrames counts and drops the registration and notification
// frames that arrive on interfaces that are not access ports (the access
// ports are an allow-list).
func (s *portSide) watchStrayFrames(ctx context.Context) error {
	watch := s.watchStray
	if watch == nil {
		w, err := l2proto.ListenStray(s.opts.AccessPorts)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.stray = w
		s.mu.Unlock()
		watch = w.Run
	}
	return watch(ctx, func(ifname string, _ []byte) {
		if s.isAccessPort(ifname) {
			return // added by a reload after the watcher started
		}
		s.met.drops.DropReason(ifname, "not-access-port",
			fmt.Errorf("registration or notification frame on %s, which is not an access port", ifname))
	})
}

// notify hands n to its port's notifier.
func (s *portSide) notify(n PortNotice) {
	if n.Port == dimPort {
		return // a registered discovery host hears through its AENs
	}
	p := s.ports[n.Port]
	if p == nil {
		s.log.Error("notice for a port that is not an access port", "port", n.Port, "host", n.Host)
		return
	}
	t := n.Target
	_, err := p.nt.Notify(l2proto.Notification{Target: t.Addr, Host: n.Host, State: n.State, Reason: n.Reason,
		Role: t.Role, Protocol: t.Protocol, Port: t.Port, NQN: t.NQN})
	if err != nil {
		s.met.notifyRefused.Inc()
		s.log.Warn("notification refused", "port", n.Port, "host", n.Host, "target", t.Addr, "err", err)
		return
	}
	s.evlog.Info("notify", "port", n.Port, "host", n.Host, "target", t.Addr, "state", n.State.String(), "reason", n.Reason.String())
}

// stats returns the table's counters and the notifiers' summed.
func (s *portSide) stats() (l2proto.RegistryStats, l2proto.NotifierStats) {
	s.mu.Lock()
	reg, ports := s.reg, s.ports
	s.mu.Unlock()
	var st l2proto.RegistryStats
	if reg != nil {
		st = reg.Stats()
	}
	var sum l2proto.NotifierStats
	for _, p := range ports {
		n := p.nt.Stats()
		sum.Sent += n.Sent
		sum.Retransmits += n.Retransmits
		sum.SendFailed += n.SendFailed
		sum.Delivered += n.Delivered
		sum.GaveUp += n.GaveUp
		sum.Superseded += n.Superseded
	}
	return st, sum
}
