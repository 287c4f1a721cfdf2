package sim

// evKind says what an event does.
type evKind uint8

const (
	evSend       evKind = iota // a sender may start a frame
	evArrive                   // a frame has fully arrived at the switch
	evEgressDone               // the egress port finished a frame
	evCNP                      // a CNP reaches a sender
	evPause                    // a PFC frame reaches a sender (aux = quanta; 0 is XON)
	evRefresh                  // the switch re-sends XOFF to a still-paused port
	evRateTimer                // a DCQCN increase timer expires
	evAck                      // a TCP ACK reaches its sender
	evLoss                     // a TCP sender learns of a drop
	evTick                     // sample queues, report progress
)

// event is one scheduled happening; values, never pointers, so the heap
// does not allocate per event.
type event struct {
	at   int64 // picoseconds
	seq  uint64
	aux  int64 // creation time, generation or quanta
	flow int32
	size int32 // frame bytes
	kind evKind
	mark bool // ECN congestion experienced
}

// eventHeap is a binary min-heap ordered by time, then insertion order,
// which makes runs deterministic.
type eventHeap struct {
	ev  []event
	seq uint64
}

func (h *eventHeap) less(i, j int) bool {
	a, b := &h.ev[i], &h.ev[j]
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func (h *eventHeap) push(e event) {
	e.seq = h.seq
	h.seq++
	h.ev = append(h.ev, e)
	i := len(h.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.ev[i], h.ev[p] = h.ev[p], h.ev[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	top := h.ev[0]
	n := len(h.ev) - 1
	h.ev[0] = h.ev[n]
	h.ev = h.ev[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.ev[i], h.ev[m] = h.ev[m], h.ev[i]
		i = m
	}
	return top
}
