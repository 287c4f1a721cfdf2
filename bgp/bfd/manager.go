package bfd

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"time"
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
	// RealTime runs the sessions' timers on one OS thread at real-time
	// priority (SCHED_FIFO 1) where the system permits (root or
	// CAP_SYS_NICE); otherwise, or when false, at normal priority.
	RealTime bool

	net network // nil: UDP sockets; tests use an in-memory network
}

// Manager runs BFD sessions: per (local address, interface) one receive
// socket on port 3784, read in batches (recvmmsg), and one send socket
// shared by the sessions of that address (one source port; docs/bfd.md
// says why); packets are demultiplexed by discriminator (or by addresses
// while the peer does not know ours yet) and handled on the socket's
// receive goroutine; the sessions' timers run on one engine goroutine
// (engine.go), which sends the packets due in one wake-up in one batch
// per send socket (sendmmsg). Subscribers
// receive every state change on a channel fed by a goroutine of their
// subscription's own (docs/design.md §8), never sent from the engine or a
// receive loop nor under the manager's lock.
type Manager struct {
	log *slog.Logger
	net network
	eng *engine

	mu        sync.Mutex
	sessions  map[SessionKey]*Session
	byDisc    map[uint32]*Session
	receivers map[recvKey]*receiver
	senders   map[recvKey]*senderRef
	subs      map[*subscription]struct{}
	drops     map[string]uint64
	lastLog   time.Time
	lastQLog  time.Time
	closed    bool

	// Goroutines the manager started: workers are the engine and the
	// receive loops, delivery the subscriptions' goroutines. running counts
	// both (tests assert that Close leaves none).
	workers, delivery sync.WaitGroup
	running           atomic.Int64

	delivered, coalesced, dropped atomic.Uint64
	// transitions counts state changes by the state entered.
	transitions [4]atomic.Uint64
}

type recvKey struct {
	local netip.Addr
	iface string
}

type receiver struct {
	pc    packetConn
	users int
	// unread counts the packets of the batch its receive loop read and
	// has not handled yet.
	unread atomic.Int32
}

// pending says whether packets wait that the receive loop has not handled:
// in the socket, or read in its current batch.
func (r *receiver) pending() bool { return r.unread.Load() > 0 || r.pc.pending() }

type senderRef struct {
	conn  sendConn
	users int
}

// port is a session's use of its local address's send socket: Close ends
// it (later packets are dropped) and gives the socket back; the last
// session's Close closes it.
type port struct {
	conn    sendConn
	closed  atomic.Bool
	release func()
}

// send sends ps at once, unless the port is closed.
func (p *port) send(ps []outPacket) {
	if !p.closed.Load() {
		p.conn.send(ps) // a lost packet is what BFD tolerates
	}
}

// Close closes the port; again, it does nothing.
func (p *port) Close() error {
	if p.closed.CompareAndSwap(false, true) {
		p.release()
	}
	return nil
}

// NewManager returns a manager with no sessions.
func NewManager(opts ManagerOptions) *Manager {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	nw := opts.net
	if nw == nil {
		nw = udpNetwork{}
	}
	m := &Manager{log: log, net: nw, eng: newEngine(log), sessions: map[SessionKey]*Session{}, byDisc: map[uint32]*Session{},
		receivers: map[recvKey]*receiver{}, senders: map[recvKey]*senderRef{}, subs: map[*subscription]struct{}{}, drops: map[string]uint64{}}
	m.mu.Lock()
	m.goLocked(&m.workers, func() { m.eng.run(opts.RealTime) })
	m.mu.Unlock()
	return m
}

// goLocked starts a goroutine counted in wg and m.running; m.mu is held
// and the manager is not closed.
func (m *Manager) goLocked(wg *sync.WaitGroup, f func()) {
	m.running.Add(1)
	wg.Go(func() {
		defer m.running.Add(-1)
		f()
	})
}

// Subscribe returns a subscription to every state change of every session,
// delivered on its channel C until it is cancelled or the manager is
// closed; then C is closed.
//
// Each subscription has a delivery goroutine of its own; the engine and
// the receive loops only queue changes for it and never wait for a
// receiver. A receiver that is slow delays nobody but itself: while it is
// behind, each session's changes are coalesced (at most two events
// pending per session besides the one being handed over; see
// StateChange.Coalesced and DeliveryStats). For
// every session, an event's Old is the New of the previous event received
// for it (a session's life starts AdminDown→Down and ends →AdminDown when
// removed), and once the receiver has caught up, the last event it
// received carries the session's current state. The receiver may call any
// method of the Manager while it handles an event, Close and its own
// Cancel included. Subscribe on a closed manager returns a subscription
// whose channel is closed.
func (m *Manager) Subscribe() *Subscription {
	s := newSubscription(m)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		close(s.c)
		return &Subscription{C: s.c, s: s}
	}
	m.subs[s] = struct{}{}
	m.goLocked(&m.delivery, s.run)
	return &Subscription{C: s.c, s: s}
}

// publish hands a change to every subscription's queue; it runs on the
// engine or a receive loop (or Add, Remove) and never blocks on a
// subscriber. The daemons log the changes they hear in their own words;
// this line is for debugging.
func (m *Manager) publish(ch StateChange) {
	m.transitions[ch.New&3].Add(1)
	m.log.Debug("BFD session state", "session", ch.Key.String(), "from", ch.Old.String(), "to", ch.New.String(), "diag", ch.Diag.String())
	m.mu.Lock()
	defer m.mu.Unlock()
	for s := range m.subs {
		s.enqueue(ch)
	}
}

// DeliveryStats returns what became of state changes on their way to
// subscribers.
func (m *Manager) DeliveryStats() DeliveryStats {
	return DeliveryStats{Delivered: m.delivered.Load(), Coalesced: m.coalesced.Load(), Dropped: m.dropped.Load()}
}

// logQueueFullLocked logs a queue overflow at most once a second; m.mu is
// held (by publish).
func (m *Manager) logQueueFullLocked(k SessionKey, n int) {
	if time.Since(m.lastQLog) >= time.Second {
		m.lastQLog = time.Now()
		m.log.Warn("BFD subscriber far behind; dropped a session's pending events", "session", k.String(), "events", n)
	}
}

// Add starts a session. It opens sockets in the calling thread's network
// namespace.
func (m *Manager) Add(cfg Config) (*Session, error) {
	k := cfg.Key
	if !k.Local.Is4() || !k.Peer.Is4() {
		return nil, fmt.Errorf("bfd: session %s: IPv4 addresses required", k)
	}
	t, err := checkTimers(k, Timers{cfg.DesiredMinTx, cfg.RequiredMinRx, cfg.DetectMult})
	if err != nil {
		return nil, err
	}
	cfg.DesiredMinTx, cfg.RequiredMinRx, cfg.DetectMult = t.DesiredMinTx, t.RequiredMinRx, t.DetectMult
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("bfd: manager closed")
	}
	if m.sessions[k] != nil {
		m.mu.Unlock()
		return nil, fmt.Errorf("bfd: session %s exists", k)
	}
	rk := recvKey{k.Local, k.Interface}
	if err := m.acquireReceiverLocked(rk); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	conn, err := m.acquireSenderLocked(rk)
	if err != nil {
		m.releaseReceiverLocked(rk)
		m.mu.Unlock()
		return nil, err
	}
	var disc uint32
	for disc == 0 || m.byDisc[disc] != nil {
		disc = rand.Uint32()
	}
	pt := &port{conn: conn, release: func() {
		m.mu.Lock()
		m.releaseSenderLocked(rk)
		m.mu.Unlock()
	}}
	s := newSession(cfg, disc, pt, m.receivers[rk], m.publish, m.eng)
	// Nothing reaches the session before it announced itself.
	s.ev.Lock()
	m.sessions[k] = s
	m.byDisc[disc] = s
	m.mu.Unlock()
	s.start(time.Now())
	s.ev.Unlock()
	return s, nil
}

// checkTimers fills in the defaults and checks the bounds.
func checkTimers(k SessionKey, t Timers) (Timers, error) {
	if t.DesiredMinTx == 0 {
		t.DesiredMinTx = DefaultInterval
	}
	if t.RequiredMinRx == 0 {
		t.RequiredMinRx = DefaultInterval
	}
	if t.DetectMult == 0 {
		t.DetectMult = DefaultDetectMult
	}
	if t.DesiredMinTx < time.Millisecond || t.RequiredMinRx < time.Millisecond {
		return t, fmt.Errorf("bfd: session %s: intervals below 1 ms", k)
	}
	return t, nil
}

// SetTimers changes a running session's timers; an Up session announces
// them to its peer with a Poll sequence (RFC 5880 §6.8.3) and stays Up.
// It returns once the change is applied.
func (m *Manager) SetTimers(k SessionKey, t Timers) error {
	t, err := checkTimers(k, t)
	if err != nil {
		return err
	}
	m.mu.Lock()
	s := m.sessions[k]
	m.mu.Unlock()
	if s == nil {
		return fmt.Errorf("bfd: no session %s", k)
	}
	if !s.retimed(t, time.Now()) {
		return fmt.Errorf("bfd: session %s removed", k)
	}
	return nil
}

// Remove stops a session, telling the peer AdminDown first; subscribers
// hear a change to AdminDown. It never waits for a subscriber, so a
// subscriber may call it.
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
	s.stop()
	return s.conn.Close()
}

// Close ends every subscription (pending events are dropped, each
// subscription's channel is closed; receivers hear nothing else of the
// shutdown), removes every session, closes the sockets and waits for every
// goroutine the manager started. It may be called while handling an
// event: no goroutine of the manager waits for a receiver once its
// subscription has ended.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	keys := make([]SessionKey, 0, len(m.sessions))
	for k := range m.sessions {
		keys = append(keys, k)
	}
	subs := make([]*subscription, 0, len(m.subs))
	for s := range m.subs {
		subs = append(subs, s)
	}
	m.mu.Unlock()
	for _, s := range subs {
		s.stop()
	}
	for _, k := range keys {
		m.Remove(k)
	}
	m.eng.close()
	m.workers.Wait()
	m.delivery.Wait()
}

// Deferred returns how many detection expiries were put off because this
// process had not been watching (a stall, or packets not read yet): each
// is a false down avoided or, for a peer that is really gone, a detection
// half a detection time later.
func (m *Manager) Deferred() uint64 { return m.eng.deferred.Load() }

// Transitions returns how many state changes the sessions made, by the
// state entered (every state present, zero or not): a rising count into
// down is a flapping session.
func (m *Manager) Transitions() map[State]uint64 {
	out := make(map[State]uint64, len(m.transitions))
	for _, s := range States() {
		out[s] = m.transitions[s].Load()
	}
	return out
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

func (m *Manager) drop(from netip.Addr, err error) {
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
	pc, err := m.net.listen(rk)
	if err != nil {
		return err
	}
	r := &receiver{pc: pc, users: 1}
	m.receivers[rk] = r
	m.goLocked(&m.workers, func() { m.readLoop(r) })
	return nil
}

func (m *Manager) acquireSenderLocked(rk recvKey) (sendConn, error) {
	if r := m.senders[rk]; r != nil {
		r.users++
		return r.conn, nil
	}
	c, err := m.net.sendSocket(rk)
	if err != nil {
		return nil, err
	}
	m.senders[rk] = &senderRef{conn: c, users: 1}
	return c, nil
}

func (m *Manager) releaseSenderLocked(rk recvKey) {
	r := m.senders[rk]
	if r == nil {
		return
	}
	if r.users--; r.users == 0 {
		delete(m.senders, rk)
		r.conn.Close()
	}
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

// maxReadBatch is how many packets a receive loop reads in one call at most.
const maxReadBatch = 64

// readLoop receives control packets on one receive socket until it
// closes, in batches of what waits in the socket.
func (m *Manager) readLoop(r *receiver) {
	ms := make([]inPacket, maxReadBatch)
	for i := range ms {
		ms[i].buf = make([]byte, 128)
	}
	for {
		n, err := r.pc.readBatch(ms)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		// A packet's time is when it is handled, as if read alone: a loop
		// interrupted mid-batch must not date the later packets early
		// (their detection deadlines would come early); and the engine
		// sees the batch's unhandled packets as pending (onDetect).
		r.unread.Store(int32(n))
		for i := range ms[:n] {
			m.receive(&ms[i], time.Now())
			r.unread.Add(-1)
		}
	}
}

// receive checks one packet and hands it to its session.
func (m *Manager) receive(in *inPacket, now time.Time) {
	if in.ttl != 255 {
		// RFC 5881 §5: single-hop packets arrive with TTL 255 or not at all.
		m.drop(in.src, errTTL)
		return
	}
	var p Packet
	if err := p.Unmarshal(in.buf[:in.n]); err != nil {
		m.drop(in.src, err)
		return
	}
	if !in.src.IsValid() {
		return
	}
	s, err := m.demux(&p, in.src, in.dst)
	if err != nil {
		m.drop(in.src, err)
		return
	}
	s.handle(p, now)
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
