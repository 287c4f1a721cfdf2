// Package connlimit bounds the connections a TCP listener holds, in all
// and per source address, so that nobody who can reach a port can take
// the process's file descriptors (and with them the unix-socket API and
// /healthz of another listener). A connection beyond a limit is accepted
// and closed at once, counted and logged at a rate limit.
package connlimit

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openinof/inof/internal/ratelimit"
)

// Options configure a Listener.
type Options struct {
	// Name labels the listener in metrics and logs ("console", "api",
	// "metrics").
	Name string
	// MaxConns bounds the connections held at once; MaxPerSource bounds
	// them per source address (IPv6 per address, not per prefix).
	MaxConns     int
	MaxPerSource int
	Logger       *slog.Logger
	// Registry, if set, gets inof_listener_connections{listener} and
	// inof_listener_refused_total{listener,reason}; several listeners
	// share them.
	Registry prometheus.Registerer
}

// Listener is a net.Listener with the limits of its Options.
type Listener struct {
	net.Listener
	o       Options
	rl      *ratelimit.Log
	held    prometheus.Gauge
	refused *prometheus.CounterVec

	mu    sync.Mutex
	total int
	per   map[netip.Addr]int
}

// New wraps ln. Zero limits are refused (an error), as is a Registry that
// holds other collectors under the same names.
func New(ln net.Listener, o Options) (*Listener, error) {
	if o.MaxConns < 1 || o.MaxPerSource < 1 || o.MaxPerSource > o.MaxConns {
		return nil, errors.New("connlimit: limits must be 1 <= max per source <= max connections")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	held := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "inof_listener_connections",
		Help: "Connections a TCP listener holds, by listener."}, []string{"listener"})
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inof_listener_refused_total",
		Help: "Connections a TCP listener closed at once, by listener and limit (total, source)."}, []string{"listener", "reason"})
	if o.Registry != nil {
		var err error
		if held, err = register(o.Registry, held); err != nil {
			return nil, err
		}
		if refused, err = register(o.Registry, refused); err != nil {
			return nil, err
		}
	}
	for _, r := range []string{"total", "source"} {
		refused.WithLabelValues(o.Name, r)
	}
	return &Listener{Listener: ln, o: o, rl: ratelimit.NewLog(0, nil), held: held.WithLabelValues(o.Name), refused: refused,
		per: map[netip.Addr]int{}}, nil
}

// register registers c, or returns the collector registered before it
// under the same description.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return c, nil
	case errors.As(err, &are):
		if prev, ok := are.ExistingCollector.(C); ok {
			return prev, nil
		}
	}
	return c, err
}

// Accept returns the next connection within the limits; the others are
// closed as they arrive.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := source(c)
		l.mu.Lock()
		reason := ""
		switch {
		case l.total >= l.o.MaxConns:
			reason = "total"
		case l.per[src] >= l.o.MaxPerSource:
			reason = "source"
		default:
			l.total++
			l.per[src]++
		}
		l.mu.Unlock()
		if reason == "" {
			l.held.Inc()
			return &conn{Conn: c, l: l, src: src}, nil
		}
		c.Close()
		l.refused.WithLabelValues(l.o.Name, reason).Inc()
		l.rl.Warn(l.o.Logger, "connection refused: limit reached", "listener", l.o.Name, "peer", c.RemoteAddr().String(),
			"limit", reason)
	}
}

// Held returns how many connections are held.
func (l *Listener) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

func (l *Listener) release(src netip.Addr) {
	l.mu.Lock()
	l.total--
	if l.per[src]--; l.per[src] <= 0 {
		delete(l.per, src)
	}
	l.mu.Unlock()
	l.held.Dec()
}

func source(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// conn gives its slot back when it is closed (once).
type conn struct {
	net.Conn
	l    *Listener
	src  netip.Addr
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.src) })
	return err
}
