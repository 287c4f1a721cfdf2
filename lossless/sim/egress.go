package sim

// drrUnit is the deficit round robin quantum per percent of ETS share.
const drrUnit = 200

// egress is the switch's egress port toward the receiver: one queue per
// class served by deficit round robin with the ETS weights.
type egress struct {
	q        [numClasses]fifo
	quantum  [numClasses]int64
	deficit  [numClasses]int64
	cur      Class
	busy     bool
	pauseGen []uint32
	maxQueue int64
}

func newEgress(s Scenario) egress {
	return egress{
		quantum:  [numClasses]int64{int64(s.WeightStorage) * drrUnit, int64(s.WeightOther) * drrUnit},
		pauseGen: make([]uint32, len(s.Flows)),
	}
}

// pick chooses the class to serve next, or false when both are empty.
func (g *egress) pick() (Class, bool) {
	if g.q[ClassStorage].n == 0 && g.q[ClassOther].n == 0 {
		return 0, false
	}
	for {
		c := g.cur
		if g.q[c].n == 0 {
			g.deficit[c] = 0
		} else if g.deficit[c] >= int64(g.q[c].front().size) {
			return c, true
		}
		g.cur = (g.cur + 1) % numClasses
		if g.q[g.cur].n > 0 {
			g.deficit[g.cur] += g.quantum[g.cur]
		}
	}
}

func (r *run) onArrive(e event) {
	port := int(e.flow)
	s := &r.senders[port]
	cell := int64(r.s.Switch.CellBytes)
	cells := (int64(e.size) + cell - 1) / cell * cell
	if s.cls == ClassStorage {
		if !r.mmu.admitLossless(port, cells) {
			r.drop(s)
			return
		}
		r.stats.maxHdrm = max(r.stats.maxHdrm, r.mmu.hdrm[port])
		if r.s.Switch.PFC && r.mmu.shouldPause(port) {
			r.sendXoff(port)
		}
	} else if !r.mmu.admitLossy(cells) {
		r.drop(s)
		// the sender learns of the loss about one round trip later
		r.push(event{at: r.now + s.tcp.srtt, kind: evLoss, flow: e.flow, size: e.size})
		return
	}
	q := &r.sw.q[s.cls]
	q.push(packet{created: e.aux, flow: e.flow, size: e.size, cells: int32(cells)})
	r.sw.maxQueue = max(r.sw.maxQueue, r.sw.q[ClassStorage].bytes+r.sw.q[ClassOther].bytes)
	if !r.sw.busy {
		r.startTx()
	}
}

func (r *run) drop(s *sender) {
	if r.now >= r.warm {
		s.drops++
	}
}

// startTx begins transmitting the next frame, marking it by the RED ramp.
func (r *run) startTx() {
	c, ok := r.sw.pick()
	if !ok {
		r.sw.busy = false
		return
	}
	q := &r.sw.q[c]
	p := q.pop()
	r.sw.deficit[c] -= int64(p.size)
	if c == ClassStorage {
		r.mmu.releaseLossless(int(p.flow), int64(p.cells))
		if r.s.Switch.PFC && r.mmu.shouldResume(int(p.flow)) {
			r.sendXon(int(p.flow))
		}
	} else {
		r.mmu.releaseLossy(int64(p.cells))
	}
	mark := r.s.ECN.Enabled && (c == ClassStorage || r.s.ECN.MarkOther) && r.ecnMark(q.bytes)
	r.sw.busy = true
	r.push(event{at: r.now + r.tx(int(p.size)+wireOverheadBytes), kind: evEgressDone,
		flow: p.flow, size: p.size, aux: p.created, mark: mark})
}

// ecnMark applies the RED ramp to a queue of q bytes.
func (r *run) ecnMark(q int64) bool {
	e := r.s.ECN
	switch {
	case q <= e.KminBytes:
		return false
	case q > e.KmaxBytes && !e.LinearAboveKmax:
		return true
	}
	return r.rng.Float64() < e.Pmax*float64(q-e.KminBytes)/float64(e.KmaxBytes-e.KminBytes)
}

// onEgressDone delivers a frame to the receiver, which answers with a CNP
// (storage, marked, at most one per flow per CNP interval) or an ACK (TCP).
func (r *run) onEgressDone(e event) {
	s := &r.senders[e.flow]
	arrival := r.now + r.prop
	wire := int64(e.size) + wireOverheadBytes
	s.window += wire
	if r.now >= r.warm {
		s.delivered += wire
		s.goodput += max(int64(e.size)-int64(headerBytes(s.cls)), 0)
		r.stats.latency[s.cls].add((arrival - e.aux) / 1000)
	}
	back := arrival + 2*r.ctlPath
	switch {
	case s.cls == ClassOther:
		r.push(event{at: back, kind: evAck, flow: e.flow, size: e.size, aux: e.aux, mark: e.mark})
	case e.mark && (!s.cnpOnce || arrival-s.lastCNP >= ps(r.s.DCQCN.CNPInterval)):
		s.lastCNP, s.cnpOnce = arrival, true
		r.stats.cnpsTotal++
		if r.now >= r.warm {
			s.cnps++
		}
		r.push(event{at: back + ps(r.s.FeedbackDelay), kind: evCNP, flow: e.flow})
	}
	r.startTx()
}

// sendXoff pauses an ingress port and keeps refreshing the pause.
func (r *run) sendXoff(port int) {
	r.mmu.paused[port] = true
	r.sw.pauseGen[port]++
	r.xoff(port)
}

func (r *run) xoff(port int) {
	r.stats.xoffTotal++
	if r.now >= r.warm {
		r.stats.xoff++
	}
	quanta := int64(r.s.Switch.PauseQuanta)
	r.push(event{at: r.now + r.pfcPath(), kind: evPause, flow: int32(port), aux: quanta})
	r.push(event{at: r.now + quanta*r.tx(64)/2, kind: evRefresh, flow: int32(port), aux: int64(r.sw.pauseGen[port])})
}

func (r *run) onRefresh(e event) {
	if r.mmu.paused[e.flow] && uint32(e.aux) == r.sw.pauseGen[e.flow] {
		r.xoff(int(e.flow))
	}
}

func (r *run) sendXon(port int) {
	r.mmu.paused[port] = false
	r.sw.pauseGen[port]++
	r.stats.xon++
	r.push(event{at: r.now + r.pfcPath(), kind: evPause, flow: int32(port)})
}

// pfcPath is a PFC frame's way to the sender, behind the frame in
// transmission on that link.
func (r *run) pfcPath() int64 {
	wait := int64(0)
	if b := r.s.Switch.PauseWaitBytes; b > 0 {
		wait = r.tx(b + wireOverheadBytes)
	}
	return wait + r.ctlPath
}
