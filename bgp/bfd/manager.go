package bfd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/netip"
	"sort"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// Port is the single-hop BFD control port (RFC 5881).
const Port = 3784

// Source ports of control packets (RFC 5881 §4).
const (
	srcPortMin = 49152
	srcPortMax = 65535
)

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	Logger *slog.Logger
}

// Manager runs BFD sessions: one receive socket per (local address,
// interface) on port 3784, one send socket per session, packets
// demultiplexed by discriminator (or by addresses while the peer does not
// know ours yet). Subscribers hear every state change.
type Manager struct {
	log *slog.Logger

	mu        sync.Mutex
	sessions  map[SessionKey]*Session
	byDisc    map[uint32]*Session
	receivers map[recvKey]*receiver
	subs      map[int]func(StateChange)
	nextSub   int
	drops     map[string]uint64
	lastLog   time.Time
	closed    bool
}

type recvKey struct {
	local netip.Addr
	iface string
}

type receiver struct {
	pc    *ipv4.PacketConn
	users int
}

// NewManager returns a manager with no sessions.
func NewManager(opts ManagerOptions) *Manager {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Manager{log: log, sessions: map[SessionKey]*Session{}, byDisc: map[uint32]*Session{},
		receivers: map[recvKey]*receiver{}, subs: map[int]func(StateChange){}, drops: map[string]uint64{}}
}

// Subscribe calls fn (from the session's goroutine) on every state change
// until the returned cancel is called.
func (m *Manager) Subscribe(fn func(StateChange)) (cancel func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.nextSub
	m.nextSub++
	m.subs[id] = fn
	return func() {
		m.mu.Lock()
		delete(m.subs, id)
		m.mu.Unlock()
	}
}

func (m *Manager) publish(ch StateChange) {
	m.mu.Lock()
	subs := make([]func(StateChange), 0, len(m.subs))
	for _, f := range m.subs {
		subs = append(subs, f)
	}
	m.mu.Unlock()
	m.log.Info("BFD session state", "session", ch.Key.String(), "from", ch.Old.String(), "to", ch.New.String(), "diag", ch.Diag.String())
	for _, f := range subs {
		f(ch)
	}
}

// Add starts a session. It opens sockets in the calling thread's network
// namespace.
func (m *Manager) Add(cfg Config) (*Session, error) {
	k := cfg.Key
	if !k.Local.Is4() || !k.Peer.Is4() {
		return nil, fmt.Errorf("bfd: session %s: IPv4 addresses required", k)
	}
	if cfg.DesiredMinTx == 0 {
		cfg.DesiredMinTx = DefaultInterval
	}
	if cfg.RequiredMinRx == 0 {
		cfg.RequiredMinRx = DefaultInterval
	}
	if cfg.DetectMult == 0 {
		cfg.DetectMult = DefaultDetectMult
	}
	if cfg.DesiredMinTx < time.Millisecond || cfg.RequiredMinRx < time.Millisecond {
		return nil, fmt.Errorf("bfd: session %s: intervals below 1 ms", k)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("bfd: manager closed")
	}
	if m.sessions[k] != nil {
		return nil, fmt.Errorf("bfd: session %s exists", k)
	}
	if err := m.acquireReceiverLocked(recvKey{k.Local, k.Interface}); err != nil {
		return nil, err
	}
	conn, err := sendSocket(k)
	if err != nil {
		m.releaseReceiverLocked(recvKey{k.Local, k.Interface})
		return nil, err
	}
	var disc uint32
	for disc == 0 || m.byDisc[disc] != nil {
		disc = rand.Uint32()
	}
	s := newSession(cfg, disc, conn, m.publish)
	m.sessions[k] = s
	m.byDisc[disc] = s
	go s.run()
	return s, nil
}

// Remove stops a session, telling the peer AdminDown first.
func (m *Manager) Remove(k SessionKey) error {
	m.mu.Lock()
	s := m.sessions[k]
	if s == nil {
		m.mu.Unlock()
		return fmt.Errorf("bfd: no session %s", k)
	}
	delete(m.sessions, k)
	delete(m.byDisc, s.myDisc)
	m.releaseReceiverLocked(recvKey{k.Local, k.Interface})
	m.mu.Unlock()
	close(s.stop)
	<-s.done
	return s.conn.Close()
}

// Close removes every session and closes the sockets.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	keys := make([]SessionKey, 0, len(m.sessions))
	for k := range m.sessions {
		keys = append(keys, k)
	}
	m.mu.Unlock()
	for _, k := range keys {
		m.Remove(k)
	}
}

// Sessions returns the status of every session, sorted by key.
func (m *Manager) Sessions() []Status {
	m.mu.Lock()
	ss := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	m.mu.Unlock()
	out := make([]Status, len(ss))
	for i, s := range ss {
		out[i] = s.Status()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.String() < out[j].Key.String() })
	return out
}

// Session returns the session with that key.
func (m *Manager) Session(k SessionKey) (*Session, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[k]
	return s, ok
}

// Drops returns how many received packets were dropped, per reason.
func (m *Manager) Drops() map[string]uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.drops)
}

func (m *Manager) drop(from net.Addr, err error) {
	m.mu.Lock()
	m.drops[DropReason(err)]++
	logNow := time.Since(m.lastLog) >= time.Second
	if logNow {
		m.lastLog = time.Now()
	}
	m.mu.Unlock()
	if logNow {
		m.log.Warn("dropped BFD packet", "from", from, "err", err)
	}
}

func (m *Manager) acquireReceiverLocked(rk recvKey) error {
	if r := m.receivers[rk]; r != nil {
		r.users++
		return nil
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		return controlSocket(c, rk.iface, 0)
	}}
	c, err := lc.ListenPacket(context.Background(), "udp4", netip.AddrPortFrom(rk.local, Port).String())
	if err != nil {
		return fmt.Errorf("bfd: listen %s:%d: %w", rk.local, Port, err)
	}
	pc := ipv4.NewPacketConn(c)
	if err := pc.SetControlMessage(ipv4.FlagTTL|ipv4.FlagDst, true); err != nil {
		c.Close()
		return fmt.Errorf("bfd: receive TTL on %s: %w", rk.local, err)
	}
	m.receivers[rk] = &receiver{pc: pc, users: 1}
	go m.readLoop(pc)
	return nil
}

func (m *Manager) releaseReceiverLocked(rk recvKey) {
	r := m.receivers[rk]
	if r == nil {
		return
	}
	if r.users--; r.users == 0 {
		delete(m.receivers, rk)
		r.pc.Close()
	}
}

// readLoop receives control packets on one receive socket until it closes.
func (m *Manager) readLoop(pc *ipv4.PacketConn) {
	buf := make([]byte, 128)
	for {
		n, cm, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if cm == nil || cm.TTL != 255 {
			// RFC 5881 §5: single-hop packets arrive with TTL 255 or not at all.
			m.drop(from, errTTL)
			continue
		}
		var p Packet
		if err := p.Unmarshal(buf[:n]); err != nil {
			m.drop(from, err)
			continue
		}
		src, ok := netip.AddrFromSlice(from.(*net.UDPAddr).IP)
		if !ok {
			continue
		}
		dst, _ := netip.AddrFromSlice(cm.Dst)
		s, err := m.demux(&p, src.Unmap(), dst.Unmap())
		if err != nil {
			m.drop(from, err)
			continue
		}
		select {
		case s.rx <- p:
		default: // the session is behind; BFD tolerates a lost packet
		}
	}
}

// demux finds the session for a packet: by our discriminator when the peer
// knows it, else by the addresses, only for Down/AdminDown packets.
func (m *Manager) demux(p *Packet, src, dst netip.Addr) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.YourDisc != 0 {
		s := m.byDisc[p.YourDisc]
		if s == nil {
			return nil, errUnknownDisc
		}
		return s, nil
	}
	if p.State != Down && p.State != AdminDown {
		return nil, errYourDisc
	}
	for k, s := range m.sessions {
		if k.Peer == src && (k.Local == dst || !dst.IsValid()) {
			return s, nil
		}
	}
	return nil, errNoSession
}

// sendSocket opens the session's UDP socket on a free source port in
// 49152-65535 with TTL 255.
func sendSocket(k SessionKey) (*net.UDPConn, error) {
	start := srcPortMin + rand.IntN(srcPortMax-srcPortMin+1)
	for i := 0; i <= srcPortMax-srcPortMin; i++ {
		port := srcPortMin + (start-srcPortMin+i)%(srcPortMax-srcPortMin+1)
		lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
			return controlSocket(c, k.Interface, 255)
		}}
		c, err := lc.ListenPacket(context.Background(), "udp4", netip.AddrPortFrom(k.Local, uint16(port)).String())
		if err == nil {
			return c.(*net.UDPConn), nil
		}
		if !errors.Is(err, unix.EADDRINUSE) {
			return nil, fmt.Errorf("bfd: send socket for %s: %w", k, err)
		}
	}
	return nil, fmt.Errorf("bfd: send socket for %s: no free source port", k)
}

// controlSocket binds to an interface (if named) and sets the unicast TTL
// (if non-zero) before bind.
func controlSocket(c syscall.RawConn, iface string, ttl int) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		if iface != "" {
			if serr = unix.BindToDevice(int(fd), iface); serr != nil {
				return
			}
		}
		if ttl != 0 {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TTL, ttl)
		}
	})
	if err != nil {
		return err
	}
	return serr
}
