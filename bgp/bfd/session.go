package bfd

import (
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"
)

// SessionKey identifies a session: single-hop BFD runs between two
// addresses, optionally pinned to an interface.
type SessionKey struct {
	Local, Peer netip.Addr
	Interface   string
}

func (k SessionKey) String() string {
	s := k.Local.String() + "->" + k.Peer.String()
	if k.Interface != "" {
		s += "%" + k.Interface
	}
	return s
}

// Config configures one session. Zero values take the defaults (300 ms,
// 300 ms, 3: the common vendor and FRR defaults).
type Config struct {
	Key           SessionKey
	DesiredMinTx  time.Duration
	RequiredMinRx time.Duration
	DetectMult    uint8
}

// Defaults.
const (
	DefaultInterval   = 300 * time.Millisecond
	DefaultDetectMult = 3
	// slowTx is the least transmit interval while a session is not Up
	// (RFC 5880 §6.8.3).
	slowTx = time.Second
)

// StateChange reports a session's transition. A session added goes from
// AdminDown to Down, a session removed from its state to AdminDown. A
// subscriber that fell behind hears several transitions of a session as
// one (Manager.Subscribe): Old is then the state before the first of them,
// New, Diag and At are those of the last.
type StateChange struct {
	Key      SessionKey
	Old, New State
	Diag     Diag // local diagnostic: why it went down
	// PeerAdminDown: the change followed the peer's AdminDown, i.e. the
	// peer took the session down on purpose (it is being removed or its
	// daemon is stopping). RFC 5882 §3.2: that is not a path failure.
	PeerAdminDown bool
	At            time.Time
	// Coalesced is how many transitions were folded into this one for a
	// subscriber that was behind (0: this is a single transition).
	Coalesced int
}

// Status is a snapshot of a session.
type Status struct {
	Key                   SessionKey
	State, RemoteState    State
	LocalDisc, RemoteDisc uint32
	Diag                  Diag
	TxInterval            time.Duration // agreed transmit interval
	DetectTime            time.Duration // current detection time
	Received, Sent        uint64
	// The configured timers (Config, or the last SetTimers).
	DesiredMinTx, RequiredMinRx time.Duration
	DetectMult                  uint8
}

// Timers are a session's configurable timers; zero values take the
// defaults, as in Config.
type Timers struct {
	DesiredMinTx, RequiredMinRx time.Duration
	DetectMult                  uint8
}

// Session is one BFD session; the Manager runs it.
type Session struct {
	cfg    Config
	myDisc uint32
	conn   *port     // its local address's send socket (manager.go)
	rx     *receiver // the receive socket its packets arrive on
	notify func(StateChange)
	eng    *engine

	// ev orders what a session says: the receive path, the engine and
	// Remove each hold it from a state change to its notify and its
	// packets, so changes reach the queues, and packets the peer, in the
	// order they happened.
	ev sync.Mutex

	mu          sync.Mutex
	state       State
	diag        Diag
	desiredTx   time.Duration // advertised (1 s until Up)
	effectiveTx time.Duration // what we use: differs only during a Poll to a larger value
	pollActive  bool
	detectTime  time.Duration
	remote      peerView // what the peer's last packet said
	counts      counters
	sched       schedule // the engine's view (engine.go)
	removed     bool     // Remove took the session off

	// batched is the engine's alone: the session's packet waits in the
	// engine's batch of this wake-up, and the engine holds ev until it is
	// sent (txBatch).
	batched bool
}

// peerView is what a session knows of its peer: the fields of the last
// packet received (receive), under Session.mu. A new session starts with
// a peer that is Down and takes packets every microsecond; expire forgets
// the discriminator and sets the interval back to that microsecond.
type peerView struct {
	state State
	disc  uint32
	minRx time.Duration
}

// counters are a session's packet counts (Status), under Session.mu.
type counters struct {
	received, sent uint64
}

// schedule is the engine's view of a session (engine.go), under
// Session.mu: when the next packet is due and when the peer's silence
// reaches the detection time, each with the generation of its heap entry
// (an entry of another generation is stale); deferred says a detection
// was already put off once since the last packet received (onDetect).
type schedule struct {
	nextTx, detectAt time.Time
	detectEntry      time.Time // the at of the queued detection entry
	txGen, detectGen uint64
	detectQueued     bool
	deferred         bool
}

func newSession(cfg Config, disc uint32, conn *port, rx *receiver, notify func(StateChange), eng *engine) *Session {
	s := &Session{cfg: cfg, myDisc: disc, conn: conn, rx: rx, notify: notify, eng: eng,
		state: Down, remote: peerView{state: Down, minRx: time.Microsecond},
		desiredTx: max(slowTx, cfg.DesiredMinTx)}
	s.effectiveTx = s.desiredTx
	return s
}

// Status returns a snapshot.
func (s *Session) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{Key: s.cfg.Key, State: s.state, RemoteState: s.remote.state, LocalDisc: s.myDisc,
		RemoteDisc: s.remote.disc, Diag: s.diag, TxInterval: s.txIntervalLocked(), DetectTime: s.detectTime,
		Received: s.counts.received, Sent: s.counts.sent, DesiredMinTx: s.cfg.DesiredMinTx, RequiredMinRx: s.cfg.RequiredMinRx,
		DetectMult: s.cfg.DetectMult}
}

// txIntervalLocked is the agreed interval: the larger of what we want and
// what the peer can take; 0 when the peer asked for no packets.
func (s *Session) txIntervalLocked() time.Duration {
	if s.remote.minRx == 0 {
		return 0
	}
	return max(s.effectiveTx, s.remote.minRx)
}

// jittered applies RFC 5880 §6.8.7 jitter: 75-100 % of the interval, at
// most 90 % with a detect multiplier of 1. The deadline it returns is in
// the upper half of that band, 87.5-100 % (82.5-90 %); the engine may send
// up to txSlack, the lower half, before it, so that the packets of many
// sessions fall due together and go out in one wake-up and one system
// call (engine.go).
func (s *Session) jittered(d time.Duration) time.Duration {
	hi, band := 1.0, 0.25
	if s.cfg.DetectMult == 1 {
		hi, band = 0.90, 0.15
	}
	return time.Duration(float64(d) * (hi - rand.Float64()*band/2))
}

// txSlack is how early the engine may send a packet: the lower half of
// the jitter band, 12.5 % of the interval (7.5 % with a detect multiplier
// of 1).
func (s *Session) txSlack(iv time.Duration) time.Duration {
	if s.cfg.DetectMult == 1 {
		return iv * 3 / 40
	}
	return iv / 8
}

// start announces the session (AdminDown→Down) and queues its first
// packet at once; Add calls it holding s.ev.
func (s *Session) start(now time.Time) {
	s.notify(StateChange{Key: s.cfg.Key, Old: AdminDown, New: Down, At: now})
	s.mu.Lock()
	s.sched.nextTx = now
	s.sched.txGen++
	gen := s.sched.txGen
	s.mu.Unlock()
	s.eng.push(deadline{at: now, s: s, tx: true, gen: gen})
}

// onTx is the engine's: a packet is due. It queues one in the engine's
// batch b (unless the peer wants none now) and queues the next deadline.
// A packet built before a state change must not reach the peer after the
// packet that announces it (the peer would go back), so a session with a
// packet in the batch stays under ev until the batch is sent.
func (s *Session) onTx(now time.Time, gen uint64, b *txBatch) {
	if s.batched {
		return // a stale entry: this wake-up already sends its packet
	}
	s.ev.Lock()
	s.mu.Lock()
	if s.removed || gen != s.sched.txGen {
		s.mu.Unlock()
		s.ev.Unlock()
		return
	}
	iv := s.txIntervalLocked()
	send := iv != 0
	if !send {
		iv = slowTx // the peer wants no packets now; look again later
	}
	s.sched.nextTx = now.Add(s.jittered(iv))
	s.sched.txGen++
	next := deadline{at: s.sched.nextTx, slack: s.txSlack(iv), s: s, tx: true, gen: s.sched.txGen}
	var o outPacket
	if send {
		s.outLocked(&o, false)
	}
	s.mu.Unlock()
	s.eng.push(next)
	if send {
		b.add(s, o) // ev is released when the batch is sent
	} else {
		s.ev.Unlock()
	}
}

// rearm brings the next packet forward when the interval got shorter
// (after a received packet or new timers).
func (s *Session) rearm(now time.Time) {
	s.mu.Lock()
	iv := s.txIntervalLocked()
	if iv == 0 || s.removed {
		s.mu.Unlock()
		return
	}
	at := now.Add(s.jittered(iv))
	if !at.Before(s.sched.nextTx) {
		s.mu.Unlock()
		return
	}
	s.sched.nextTx = at
	s.sched.txGen++
	next := deadline{at: at, slack: s.txSlack(iv), s: s, tx: true, gen: s.sched.txGen}
	s.mu.Unlock()
	s.eng.push(next)
}

// isRemoved says whether Remove took the session off.
func (s *Session) isRemoved() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removed
}

// handle is the receive path's: a packet for this session arrived at now.
func (s *Session) handle(p Packet, now time.Time) {
	s.ev.Lock()
	defer s.ev.Unlock()
	if s.isRemoved() {
		return
	}
	final, changed, dt := s.receive(p)
	if dt > 0 {
		s.mu.Lock()
		s.sched.detectAt, s.sched.deferred = now.Add(dt), false
		// The queued entry stays while the deadline only moves later (it
		// is queued again when it comes); an earlier one (the detection
		// time shrank) needs an entry of its own.
		queue := (!s.sched.detectQueued || s.sched.detectAt.Before(s.sched.detectEntry)) && !s.removed
		var d deadline
		if queue {
			s.sched.detectQueued, s.sched.detectEntry = true, s.sched.detectAt
			s.sched.detectGen++
			d = deadline{at: s.sched.detectAt, s: s, gen: s.sched.detectGen}
		}
		s.mu.Unlock()
		if queue {
			s.eng.push(d)
		}
	}
	if final || changed != nil {
		s.send(final)
	}
	if changed != nil {
		s.notify(*changed)
	}
	s.rearm(now)
}

// onDetect is the engine's: the detection deadline of an earlier packet
// came. A packet received since moved it (the entry is queued again for
// the new one). Silence is the peer's only if this process was watching:
// when the engine woke a quarter of the detection time late or more (the
// process was not scheduled: a machine-wide stall), or packets wait unread
// in the receive socket (the receive path is behind), the peer's packets
// may be there, so the first expiry is put off by half a detection time
// (Manager.Deferred counts it); a peer still silent then is declared down.
func (s *Session) onDetect(now time.Time, gen uint64, late time.Duration) {
	s.ev.Lock()
	defer s.ev.Unlock()
	s.mu.Lock()
	if s.removed || gen != s.sched.detectGen {
		s.mu.Unlock()
		return
	}
	if now.Before(s.sched.detectAt) {
		s.sched.detectGen++
		s.sched.detectEntry = s.sched.detectAt
		d := deadline{at: s.sched.detectAt, s: s, gen: s.sched.detectGen}
		s.mu.Unlock()
		s.eng.push(d)
		return
	}
	if (s.state == Init || s.state == Up) && !s.sched.deferred && (late >= s.detectTime/4 || s.rx.pending()) {
		s.sched.deferred = true
		s.sched.detectAt = now.Add(s.detectTime / 2)
		s.sched.detectEntry = s.sched.detectAt
		s.sched.detectGen++
		d := deadline{at: s.sched.detectAt, s: s, gen: s.sched.detectGen}
		s.mu.Unlock()
		s.eng.deferred.Add(1)
		s.eng.push(d)
		return
	}
	s.sched.detectQueued = false
	s.mu.Unlock()
	if ch := s.expire(); ch != nil {
		s.send(false)
		s.notify(*ch)
	}
}

// What settleDetect found of a detection entry.
const (
	detectDue   = iota // the deadline stands: keep the entry
	detectMoved        // moved later: the entry now holds the new deadline
	detectStale        // of an older generation or a removed session: drop it
)

// settleDetect is the engine's, under its lock: it moves the detection
// entry d to the session's current deadline if that is later (a packet
// came since it was queued).
func (s *Session) settleDetect(d *deadline) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed || d.gen != s.sched.detectGen {
		return detectStale
	}
	if !s.sched.detectAt.After(d.at) {
		return detectDue
	}
	s.sched.detectGen++
	s.sched.detectEntry = s.sched.detectAt
	d.at, d.gen = s.sched.detectAt, s.sched.detectGen
	return detectMoved
}

// retimed applies new timers (SetTimers) and sends the Poll that
// announces them; false: the session was removed.
func (s *Session) retimed(t Timers, now time.Time) bool {
	s.ev.Lock()
	defer s.ev.Unlock()
	if s.isRemoved() {
		return false
	}
	if s.setTimers(t) {
		s.send(false)
	}
	s.rearm(now)
	return true
}

// stop tells the peer AdminDown and takes the session off the engine.
func (s *Session) stop() {
	s.ev.Lock()
	defer s.ev.Unlock()
	ch := s.adminDown()
	s.mu.Lock()
	s.removed = true
	s.mu.Unlock()
	s.notify(ch)
}

// receive applies a packet (RFC 5880 §6.8.6) and returns whether to answer
// with Final, the state change if any, and the detection time to arm.
func (s *Session) receive(p Packet) (final bool, ch *StateChange, detect time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.received++
	s.remote.disc = p.MyDisc
	s.remote.state = p.State
	s.remote.minRx = p.RequiredMinRx
	if p.Final && s.pollActive {
		s.pollActive = false
		s.effectiveTx = s.desiredTx
	}
	s.detectTime = time.Duration(p.DetectMult) * max(s.rxIntervalLocked(), p.DesiredMinTx)
	detect = s.detectTime
	if s.state == AdminDown {
		return false, nil, 0
	}
	old := s.state
	if p.State == AdminDown {
		if s.state != Down {
			s.toLocked(Down, DiagNeighborDown)
		}
	} else {
		switch s.state {
		case Down:
			if p.State == Down {
				s.toLocked(Init, DiagNone)
			} else if p.State == Init {
				s.toLocked(Up, DiagNone)
			}
		case Init:
			if p.State == Init || p.State == Up {
				s.toLocked(Up, DiagNone)
			}
		case Up:
			if p.State == Down {
				s.toLocked(Down, DiagNeighborDown)
			}
		}
	}
	if s.state != old {
		ch = &StateChange{Key: s.cfg.Key, Old: old, New: s.state, Diag: s.diag, PeerAdminDown: p.State == AdminDown, At: time.Now()}
	}
	return p.Poll, ch, detect
}

func (s *Session) rxIntervalLocked() time.Duration {
	if s.cfg.RequiredMinRx > 0 {
		return s.cfg.RequiredMinRx
	}
	return DefaultInterval
}

// toLocked changes state and adjusts the transmit interval: 1 s or more
// while not Up; on Up, a Poll sequence announces the configured interval.
func (s *Session) toLocked(st State, d Diag) {
	s.state = st
	if d != DiagNone || st == Up {
		s.diag = d
	}
	switch st {
	case Up:
		s.desiredTx = s.cfg.DesiredMinTx
		s.effectiveTx = s.desiredTx // a decrease may apply at once
		s.pollActive = true
	default:
		s.desiredTx = max(slowTx, s.cfg.DesiredMinTx)
		s.effectiveTx = s.desiredTx
		s.pollActive = false
	}
}

// setTimers applies new timers (retimed; RFC 5880
// §6.8.3): while Up, a Poll sequence announces them; a larger transmit
// interval is used only once the peer answered with Final, a smaller one
// at once. It reports whether a Poll is due.
func (s *Session) setTimers(t Timers) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.DesiredMinTx, s.cfg.RequiredMinRx, s.cfg.DetectMult = t.DesiredMinTx, t.RequiredMinRx, t.DetectMult
	if s.state != Up {
		s.desiredTx = max(slowTx, s.cfg.DesiredMinTx)
		s.effectiveTx = s.desiredTx
		return false
	}
	s.desiredTx = s.cfg.DesiredMinTx
	if s.desiredTx < s.effectiveTx {
		s.effectiveTx = s.desiredTx
	}
	s.pollActive = true
	return true
}

// expire handles the detection timer.
func (s *Session) expire() *StateChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != Init && s.state != Up {
		return nil
	}
	old := s.state
	s.toLocked(Down, DiagControlExpired)
	s.remote.disc = 0
	s.remote.minRx = time.Microsecond
	return &StateChange{Key: s.cfg.Key, Old: old, New: Down, Diag: DiagControlExpired, At: time.Now()}
}

func (s *Session) packetLocked(final bool) Packet {
	return Packet{Version: 1, Diag: s.diag, State: s.state, Poll: s.pollActive && !final, Final: final,
		DetectMult: s.cfg.DetectMult, MyDisc: s.myDisc, YourDisc: s.remote.disc,
		DesiredMinTx: s.desiredTx, RequiredMinRx: s.rxIntervalLocked()}
}

// outLocked builds the session's next packet into o.
func (s *Session) outLocked(o *outPacket, final bool) {
	p := s.packetLocked(final)
	p.marshalTo(o.b[:])
	o.peer = s.cfg.Key.Peer
	s.counts.sent++
}

// send sends one packet at once (not through the engine's batch).
func (s *Session) send(final bool) {
	var o [1]outPacket
	s.mu.Lock()
	s.outLocked(&o[0], final)
	s.mu.Unlock()
	s.conn.send(o[:])
}

// adminDown tells the peer the session is going away (a few packets, as
// RFC 5880 §6.8.16 suggests) before the socket closes.
func (s *Session) adminDown() StateChange {
	s.mu.Lock()
	ch := StateChange{Key: s.cfg.Key, Old: s.state, New: AdminDown, Diag: DiagAdminDown, At: time.Now()}
	s.state, s.diag = AdminDown, DiagAdminDown
	var o [3]outPacket
	for i := range o {
		s.outLocked(&o[i], false)
	}
	s.mu.Unlock()
	s.conn.send(o[:])
	return ch
}
