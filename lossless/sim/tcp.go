package sim

// tcpState is a Reno-like AIMD window: slow start, then one MSS per
// window; halved at most once per round trip on an ECN echo or a loss.
// Losses are learnt one smoothed round trip after the drop (an idealised
// fast retransmit); there are no timeouts and the backlog never ends.
type tcpState struct {
	cwnd, ssthresh float64
	maxWnd         float64
	inflight       int64
	recoverUntil   int64
	srtt           int64
}

func newTCP(c TCPConfig, rtt int64) tcpState {
	return tcpState{
		cwnd:     float64(c.InitialWindowBytes),
		ssthresh: float64(c.MaxWindowBytes),
		maxWnd:   float64(c.MaxWindowBytes),
		srtt:     rtt,
	}
}

func (t *tcpState) canSend(frame int) bool { return float64(t.inflight+int64(frame)) <= t.cwnd }

func (t *tcpState) reduce(now int64) {
	if now < t.recoverUntil {
		return
	}
	t.ssthresh = max(t.cwnd/2, 2*tcpMSS)
	t.cwnd = t.ssthresh
	t.recoverUntil = now + t.srtt
}

func (t *tcpState) grow(bytes int64) {
	if t.cwnd < t.ssthresh {
		t.cwnd += float64(bytes)
	} else {
		t.cwnd += tcpMSS * float64(bytes) / t.cwnd
	}
	t.cwnd = min(t.cwnd, t.maxWnd)
}

func (r *run) onAck(e event) {
	s := &r.senders[e.flow]
	s.tcp.inflight -= int64(e.size)
	s.tcp.srtt += (r.now - e.aux - s.tcp.srtt) / 8
	if e.mark {
		s.tcp.reduce(r.now)
	} else {
		s.tcp.grow(int64(e.size))
	}
	r.wake(e.flow)
}

func (r *run) onLoss(e event) {
	s := &r.senders[e.flow]
	s.tcp.inflight -= int64(e.size)
	s.tcp.reduce(r.now)
	r.wake(e.flow)
}

// wake restarts a TCP sender that waited for window.
func (r *run) wake(flow int32) {
	s := &r.senders[flow]
	if s.waiting && s.tcp.canSend(s.frame) {
		s.waiting = false
		r.resend(flow)
	}
}
