package sim

// sender is one flow's host: its link, DCQCN or TCP state, the PFC pause
// it obeys, and the receiver's per-flow CNP state.
type sender struct {
	cls        Class
	frame      int // full-size frame bytes
	smallPct   int64
	sentBytes  int64
	smallBytes int64
	gen        uint32 // the live send event's generation
	waiting    bool   // TCP window full
	lastStart  int64
	lastWire   int
	pauseStart int64
	pauseUntil int64
	rp         rp
	tcp        tcpState
	lastCNP    int64
	cnpOnce    bool
	// statistics
	delivered, goodput, window int64
	drops, cnps                int64
	pausedPs                   int64
}

func headerBytes(c Class) int {
	if c == ClassStorage {
		return roceHeaderBytes
	}
	return tcpHeaderBytes
}

func newSender(f Flow, line float64, s Scenario, start, rtt int64) sender {
	return sender{
		cls:      f.Class,
		frame:    f.PayloadBytes + headerBytes(f.Class),
		smallPct: int64(f.SmallBytePercent),
		rp:       newRP(line, s.DCQCN, start),
		tcp:      newTCP(s.TCP, rtt),
	}
}

// nextFrame picks the next frame's size, keeping the small-frame share.
func (s *sender) nextFrame() int {
	size := s.frame
	if s.smallBytes*100 < s.smallPct*s.sentBytes || s.smallPct == 100 {
		size = smallFrameBytes
		s.smallBytes += int64(size)
	}
	s.sentBytes += int64(size)
	return size
}

func (s *sender) paused(now int64) bool { return now >= s.pauseStart && now < s.pauseUntil }

func (r *run) onSend(e event) {
	s := &r.senders[e.flow]
	if uint32(e.aux) != s.gen {
		return // superseded by a reschedule
	}
	if s.cls == ClassStorage && s.paused(r.now) {
		r.push(event{at: s.pauseUntil, kind: evSend, flow: e.flow, aux: int64(s.gen)})
		return
	}
	if s.cls == ClassOther && !s.tcp.canSend(s.frame) {
		s.waiting = true
		return
	}
	size := s.nextFrame()
	wire := size + wireOverheadBytes
	t := r.tx(wire)
	r.push(event{at: r.now + t + r.prop, kind: evArrive, flow: e.flow, size: int32(size), aux: r.now})
	s.lastStart, s.lastWire = r.now, wire
	next := r.now + t
	if s.cls == ClassStorage {
		s.rp.onSent(int64(wire), r.s.DCQCN)
		next = r.now + max(t, r.gap(s))
	} else {
		s.tcp.inflight += int64(size)
	}
	r.push(event{at: next, kind: evSend, flow: e.flow, aux: int64(s.gen)})
}

// gap is the pacing interval of a DCQCN sender's last frame at its rate.
func (r *run) gap(s *sender) int64 { return int64(float64(s.lastWire) * 8e12 / s.rp.rc) }

// resend replaces a sender's pending send event after its rate changed or
// it may send again.
func (r *run) resend(flow int32) {
	s := &r.senders[flow]
	s.gen++
	at := r.now
	if s.lastWire > 0 {
		at = max(at, s.lastStart+r.tx(s.lastWire))
		if s.cls == ClassStorage {
			at = max(at, s.lastStart+r.gap(s))
		}
	}
	r.push(event{at: at, kind: evSend, flow: flow, aux: int64(s.gen)})
}

// onPause applies a PFC frame at the sender: XOFF stops new frames after
// the response time for the frame's quanta; XON (0 quanta) ends the pause.
func (r *run) onPause(e event) {
	s := &r.senders[e.flow]
	if e.aux == 0 {
		if s.paused(r.now) || r.now < s.pauseStart {
			r.closePause(s, r.now)
			s.pauseUntil = r.now
			r.resend(e.flow)
		}
		return
	}
	quantum := r.tx(64) // 512 bit times
	resp := int64(r.s.Switch.ResponseQuanta) * quantum
	if !s.paused(r.now) && r.now >= s.pauseUntil {
		r.closePause(s, r.now)
		s.pauseStart = r.now + resp
	}
	s.pauseUntil = max(s.pauseUntil, r.now+resp+e.aux*quantum)
}

// closePause adds the measured part of the pause ending at t.
func (r *run) closePause(s *sender, t int64) {
	from, to := max(s.pauseStart, r.warm), min(s.pauseUntil, t, r.end)
	if to > from {
		s.pausedPs += to - from
	}
}

func (r *run) onCNP(e event) {
	s := &r.senders[e.flow]
	if s.rp.onCNP(r.now, r.s.DCQCN) {
		r.push(event{at: r.now + ps(r.s.DCQCN.IncreaseTimer), kind: evRateTimer, flow: e.flow, aux: int64(s.rp.timerGen)})
		r.resend(e.flow)
	}
}

func (r *run) onRateTimer(e event) {
	s := &r.senders[e.flow]
	if uint32(e.aux) != s.rp.timerGen {
		return
	}
	s.rp.onTimer(r.s.DCQCN)
	r.push(event{at: r.now + ps(r.s.DCQCN.IncreaseTimer), kind: evRateTimer, flow: e.flow, aux: int64(s.rp.timerGen)})
	r.resend(e.flow)
}
