package hostagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/l2proto"
	"github.com/openinof/inof/lossless/readback"
)

// Config wires an Agent. Only Options is required.
type Config struct {
	Options Options
	// Links are opened links by interface name; interfaces without one
	// get an AF_PACKET link (l2proto.ListenPacket, needs CAP_NET_RAW).
	Links map[string]l2proto.Link
	// Exec runs nvme-cli; nil means ExecExecutor.
	Exec Executor
	// SubsysClass overrides DefaultSubsysClass (see CLI.SubsysClass).
	SubsysClass *string
	// Kernel reads controllers from sysfs and fails paths over; nil means
	// SysfsKernel on /sys.
	Kernel Kernel
	Clock  Clock // nil means RealClock
	// WatchClock times the per-path deadline watch of NVMe work
	// (nvme.command_timeout); nil means Clock.
	WatchClock Clock
	Carrier    func(string) (Carrier, error) // nil means SysfsCarrier
	// WatchLinks reports link changes until ctx ends, so carrier is read
	// at once when it changes; nil means an rtnetlink l2proto.LinkWatcher.
	// The carrier poll goes on either way.
	WatchLinks func(ctx context.Context, fn func(l2proto.LinkState)) error
	Registry   prometheus.Registerer // nil means a private registry
	Logger     *slog.Logger
	// DCB reads the NICs' DCB state back after a lossless profile is
	// applied; nil means rtnetlink (package dcbnl).
	DCB readback.DCBReader
}

// Agent is one running inof-host.
type Agent struct {
	opt     Options
	ports   []*port
	nvme    *CLI
	kern    Kernel
	paths   *pathView
	hostNQN string
	clk     Clock
	watch   Clock // deadline watch of the lanes
	carrier func(string) (Carrier, error)
	links   func(ctx context.Context, fn func(l2proto.LinkState)) error
	log     *slog.Logger
	m       *metrics
	events  chan event
	running atomic.Bool
	dcb     readback.DCBReader
	ready   chan struct{}          // closed once Run serves
	pol     atomic.Pointer[policy] // set by Reload; nil: opt's
}

// eventQueue bounds the notifications waiting for the worker; beyond it
// readers leave notifications un-ACKed and the switch retransmits them.
const eventQueue = 1024

// New validates the options, resolves addresses and the host NQN, and
// opens the links. Close the agent by ending Run's context.
func New(cfg Config) (*Agent, error) {
	o := cfg.Options
	if err := o.Validate(); err != nil {
		return nil, err
	}
	a := &Agent{opt: o, clk: cfg.Clock, carrier: cfg.Carrier, links: cfg.WatchLinks, log: cfg.Logger,
		events: make(chan event, eventQueue), dcb: cfg.DCB, kern: cfg.Kernel,
		ready: make(chan struct{})}
	if a.kern == nil {
		a.kern = NewSysfsKernel("")
	}
	a.paths = newPathView(a.kern)
	if a.clk == nil {
		a.clk = RealClock{}
	}
	if a.watch = cfg.WatchClock; a.watch == nil {
		a.watch = a.clk
	}
	if a.carrier == nil {
		a.carrier = SysfsCarrier
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	var err error
	if a.m, err = newMetrics(reg); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	ex := cfg.Exec
	if ex == nil {
		ex = ExecExecutor{}
	}
	a.nvme = &CLI{Exec: ex, Bin: o.NVMe.Path, SubsysClass: DefaultSubsysClass}
	if cfg.SubsysClass != nil {
		a.nvme.SubsysClass = *cfg.SubsysClass
	}
	if a.hostNQN, err = resolveHostNQN(o); err != nil {
		return nil, err
	}
	var errs []error
	drops := l2proto.NewDropCounter(a.log, 0)
	for _, it := range o.Interfaces {
		p, err := a.newPort(it, cfg.Links[it.Name], drops)
		if err != nil {
			errs = append(errs, fmt.Errorf("interface %s: %w", it.Name, err))
			continue
		}
		a.ports = append(a.ports, p)
	}
	if err := errors.Join(errs...); err != nil {
		for _, p := range a.ports {
			p.link.Close()
		}
		return nil, err
	}
	return a, nil
}

func resolveHostNQN(o Options) (string, error) {
	if o.HostNQN != "" || !o.hasHost() {
		return o.HostNQN, nil
	}
	b, err := os.ReadFile(o.HostNQNFile)
	if err != nil {
		return "", fmt.Errorf("host NQN: %w (set host_nqn or create %s)", err, o.HostNQNFile)
	}
	nqn := strings.TrimSpace(string(b))
	if nqn == "" || len(nqn) > maxNQN {
		return "", fmt.Errorf("host NQN in %s: %d bytes, want 1..%d", o.HostNQNFile, len(nqn), maxNQN)
	}
	return nqn, nil
}

func (a *Agent) newPort(it InterfaceOptions, link l2proto.Link, drops *l2proto.DropCounter) (*port, error) {
	role, _ := ParseRole(it.Role)
	proto, _ := ParseProtocol(it.Protocol)
	var addr netip.Addr
	var err error
	if it.Address != "" {
		addr, _ = netip.ParseAddr(it.Address)
	} else if addr, err = interfaceAddr(it.Name); err != nil {
		return nil, err
	}
	if link == nil {
		if link, err = l2proto.ListenPacket(it.Name); err != nil {
			return nil, err
		}
	}
	nqn := it.NQN
	if nqn == "" && role == inof.RoleHost {
		nqn = a.hostNQN // a host announces its host NQN by itself, for NQN zoning
	}
	return &port{name: it.Name, link: link, log: a.log, m: a.m, drops: drops, linkEv: make(chan struct{}, 1),
		dev: inof.Device{Addr: addr.Unmap(), Role: role, Protocol: proto, Port: it.Port, NQN: nqn}}, nil
}

// watchLinks wakes a port's announcer on every link event for its
// interface until ctx ends. Without link events (the watcher cannot
// start) the carrier poll alone notices changes.
func (a *Agent) watchLinks(ctx context.Context) {
	watch := a.links
	if watch == nil {
		w, err := l2proto.NewLinkWatcher(a.log)
		if err != nil {
			a.log.Warn("no link events; carrier is polled only", "carrier_poll", a.opt.CarrierPoll, "err", err)
			return
		}
		watch = w.Run
	}
	err := watch(ctx, func(s l2proto.LinkState) {
		for _, p := range a.ports {
			if p.name == s.Name {
				p.linkEvent()
			}
		}
	})
	if err != nil && ctx.Err() == nil {
		a.log.Warn("no link events; carrier is polled only", "carrier_poll", a.opt.CarrierPoll, "err", err)
	}
}

// Healthy reports nil while Run is serving.
func (a *Agent) Healthy() error {
	if !a.running.Load() {
		return errors.New("agent not running")
	}
	return nil
}

// Run serves until ctx ends: it announces every interface, ACKs and acts on
// notifications, and on the way out closes the links, waits for every
// goroutine it started and, with disconnect_on_exit, removes the
// controllers it created.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := a.newWorker(ctx)
	if err != nil {
		for _, p := range a.ports {
			p.link.Close()
		}
		return err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.paths.run(ctx, a.clk, a.log)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.watchLinks(ctx)
	}()
	errc := make(chan error, len(a.ports))
	for _, p := range a.ports {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := p.read(ctx, a.events); err != nil {
				errc <- err
				cancel()
			}
		}()
		go func() {
			defer wg.Done()
			p.announce(ctx, a.clk, a.opt.RegistrationInterval, a.opt.RegistrationTTL, a.opt.CarrierPoll, a.carrier)
		}()
	}
	if a.opt.Lossless.enabled() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dcb, closeDCB := a.dcb, func() {}
			if dcb == nil {
				dcb, closeDCB = a.openDCB()
			}
			defer closeDCB()
			a.runLossless(ctx, a.nvme.Exec, dcb)
		}()
	}
	stopLinks := context.AfterFunc(ctx, func() {
		for _, p := range a.ports {
			p.link.Close()
		}
	})
	defer stopLinks()
	a.running.Store(true)
	close(a.ready)
	a.log.Info("inof-host running", "interfaces", len(a.ports), "owned_controllers", len(w.all()),
		"failover", a.opt.Failover.Method, "last_path", a.opt.Failover.LastPath)
	w.run(ctx)
	a.running.Store(false)
	wg.Wait()
	w.stop(a.opt.DisconnectOnExit)
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// targetKey names a target as a host sees it; newer notifications for the
// same key supersede older ones (nvme-snsd compares the same fields).
type targetKey struct {
	Host, Target netip.Addr
	Protocol     inof.Protocol
	Port         uint16 // 0 is normalised to 4420
}

func keyOf(n l2proto.Notification) targetKey {
	port := n.Port
	if port == 0 {
		port = 4420
	}
	return targetKey{Host: n.Host, Target: n.Target, Protocol: n.Protocol, Port: port}
}

func (k targetKey) svc() string { return strconv.Itoa(int(k.Port)) }
