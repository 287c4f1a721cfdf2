package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Source is what the controller serves: the targets a host may see, and a
// signal when that may have changed. The switch agent implements it from
// its zone view; it must be safe for concurrent use.
type Source interface {
	// Visible returns the targets the host with this NQN and source
	// address may see now (any order).
	Visible(hostNQN string, addr netip.Addr) []Entry
	// Changes delivers a value (coalesced) whenever the visible set of some
	// host may have changed; the channel is never closed.
	Changes() <-chan struct{}
}

// Options configure a Server.
type Options struct {
	// Listen is the TCP address Run listens on (":8009").
	Listen string `yaml:"listen"`
	// Enabled turns the discovery controller on (inofd --role switch).
	Enabled bool `yaml:"enabled"`
	// MaxConns bounds the connections served at once; MaxConnsPerHost
	// bounds them per source address. Connections beyond are closed at
	// once and counted.
	MaxConns        int `yaml:"max_conns"`
	MaxConnsPerHost int `yaml:"max_conns_per_host"`
	// HandshakeTimeout bounds the time from accept to a completed Connect.
	HandshakeTimeout time.Duration `yaml:"handshake_timeout"`
	// Serial is the controller's serial number (Identify SN); empty
	// means "inof".
	Serial string `yaml:"serial"`
	// AnyInterface serves connections to any address of the switch. By
	// default (false) the controller serves only hosts on the access
	// ports' segments: connections made to an address of an access port
	// (or of the bridge it is a member of) from inside that address's
	// prefix, and connections from the switch itself; every other one is
	// closed at once and counted (refused, reason "interface").
	AnyInterface bool `yaml:"any_interface"`
	// MDNS advertises the controller over mDNS/DNS-SD on the switch's
	// access ports (TP 8009: _nvme-disc._tcp, TXT p=tcp), never on other
	// interfaces (package dnssd). The switch agent runs it.
	MDNS bool `yaml:"mdns"`
}

// DefaultOptions returns the defaults: port 8009 (the NVMe-oF discovery
// port), off.
func DefaultOptions() Options {
	return Options{Listen: ":8009", MaxConns: 1024, MaxConnsPerHost: 16, HandshakeTimeout: 10 * time.Second, MDNS: true}
}

// Validate reports every problem in o, joined.
func (o *Options) Validate() error {
	var errs []error
	if !o.Enabled {
		return nil
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		errs = append(errs, fmt.Errorf("discovery.listen %q: %w", o.Listen, err))
	}
	if o.MaxConns < 1 {
		errs = append(errs, fmt.Errorf("discovery.max_conns %d: at least 1", o.MaxConns))
	}
	if o.MaxConnsPerHost < 1 || o.MaxConnsPerHost > o.MaxConns {
		errs = append(errs, fmt.Errorf("discovery.max_conns_per_host %d: 1..max_conns", o.MaxConnsPerHost))
	}
	if o.HandshakeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("discovery.handshake_timeout %s: must be positive", o.HandshakeTimeout))
	}
	if len(o.Serial) > 20 {
		errs = append(errs, fmt.Errorf("discovery.serial %q: at most 20 bytes", o.Serial))
	}
	return errors.Join(errs...)
}

// Config wires a Server.
type Config struct {
	Options Options
	Source  Source
	// Registrar, if set, takes the hosts that register explicitly (DIM,
	// TP 8010): the controller then reports itself a centralized
	// discovery controller. Nil refuses DIM (Invalid Opcode).
	Registrar Registrar
	Logger    *slog.Logger
	Registry  prometheus.Registerer // nil: no metrics
	// Interfaces are the switch's access ports: unless
	// Options.AnyInterface, only hosts on them are served (SetInterfaces
	// changes them).
	Interfaces []string
}

// Server is an NVMe/TCP discovery controller: it accepts host connections
// and answers each from one goroutine (plus a reader), with the targets
// its Source lets that host see, and completes a host's Asynchronous Event
// Request when that set changes.
type Server struct {
	opts Options
	src  Source
	reg  Registrar
	log  *slog.Logger
	met  *metrics
	id   Identity
	rl   *rateLog
	gate *ifaceGate // nil if Options.AnyInterface

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	perHost map[netip.Addr]int
	total   int
	cntlid  uint16
	inUse   map[uint16]bool
	conns   map[net.Conn]bool
	ln      net.Listener
	wg      sync.WaitGroup
}

// New checks the configuration and builds a server.
func New(cfg Config) (*Server, error) {
	o := cfg.Options
	if cfg.Source == nil {
		return nil, errors.New("discovery: no source")
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultOptions().MaxConns
	}
	if o.MaxConnsPerHost == 0 {
		o.MaxConnsPerHost = min(DefaultOptions().MaxConnsPerHost, o.MaxConns)
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = DefaultOptions().HandshakeTimeout
	}
	if o.Listen == "" {
		o.Listen = DefaultOptions().Listen
	}
	check := o
	check.Enabled = true
	if err := check.Validate(); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	serial := o.Serial
	if serial == "" {
		serial = "inof"
	}
	s := &Server{opts: o, src: cfg.Source, reg: cfg.Registrar, log: cfg.Logger.With("component", "discovery"), met: newMetrics(),
		rl:      newRateLog(time.Second),
		id:      Identity{Serial: serial, Model: "iNOF fabric discovery controller", Firmware: "inof"},
		changed: make(chan struct{}), perHost: map[netip.Addr]int{}, inUse: map[uint16]bool{}, conns: map[net.Conn]bool{}}
	if !o.AnyInterface {
		s.gate = newIfaceGate(cfg.Interfaces)
	}
	if cfg.Registry != nil {
		if err := cfg.Registry.Register(s.met); err != nil {
			return nil, fmt.Errorf("discovery: metrics: %w", err)
		}
	}
	return s, nil
}

// Run listens on Options.Listen and serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(ctx, "tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	s.log.Info("discovery controller listening", "addr", ln.Addr().String())
	return s.Serve(ctx, ln)
}

// SetInterfaces replaces the access ports whose hosts are served (see
// Options.AnyInterface); connections already served stay.
func (s *Server) SetInterfaces(names []string) {
	if s.gate != nil {
		s.gate.set(names)
	}
}

// Addr is the address Serve accepts on; nil before it started.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Serve accepts connections on ln until ctx ends, then closes ln and every
// connection and waits for their goroutines. It returns nil after ctx ended.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watch(ctx)
	}()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var err error
	for {
		c, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				var ne net.Error
				if errors.As(aerr, &ne) && ne.Timeout() {
					continue
				}
				err = fmt.Errorf("discovery: accept: %w", aerr)
			}
			break
		}
		s.ServeConn(ctx, c)
	}
	cancel()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// ServeConn serves one host connection in its own goroutines until the host
// leaves, a fatal error, or ctx ends; the connection counts against the
// limits and is refused (closed) beyond them.
func (s *Server) ServeConn(ctx context.Context, c net.Conn) {
	host := remoteAddr(c)
	if s.gate != nil && !s.gate.allows(c.LocalAddr(), c.RemoteAddr()) {
		s.met.refused.WithLabelValues("interface").Inc()
		s.rl.warn(s.log, "connection refused: not from an access port's segment", "host", host,
			"local", c.LocalAddr().String())
		c.Close()
		return
	}
	s.mu.Lock()
	if s.total >= s.opts.MaxConns || s.perHost[host] >= s.opts.MaxConnsPerHost {
		reason := "host"
		if s.total >= s.opts.MaxConns {
			reason = "total"
		}
		s.mu.Unlock()
		s.met.refused.WithLabelValues(reason).Inc()
		s.rl.warn(s.log, "connection refused: limit reached", "host", host, "limit", reason)
		c.Close()
		return
	}
	s.total++
	s.perHost[host]++
	s.conns[c] = true
	s.wg.Add(1)
	s.mu.Unlock()
	s.met.accepted.Inc()
	go func() {
		defer s.wg.Done()
		defer s.release(c, host)
		newConn(s, c, host).run(ctx)
	}()
}

func (s *Server) release(c net.Conn, host netip.Addr) {
	c.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	s.total--
	if s.perHost[host]--; s.perHost[host] <= 0 {
		delete(s.perHost, host)
	}
}

// remoteAddr is the source address of c (invalid for a pipe).
func remoteAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// watch turns the source's change signals into a broadcast: every
// connection waits on the current channel, which is closed on a change.
func (s *Server) watch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.src.Changes():
			s.mu.Lock()
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
		}
	}
}

// changes returns the channel the next change closes.
func (s *Server) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// newCntlid allocates a controller ID (1..0xFFEF) no live connection uses.
func (s *Server) newCntlid() (uint16, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range 0xffef {
		s.cntlid = s.cntlid%0xffef + 1
		if !s.inUse[s.cntlid] {
			s.inUse[s.cntlid] = true
			return s.cntlid, true
		}
	}
	return 0, false
}

func (s *Server) freeCntlid(id uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inUse, id)
}
