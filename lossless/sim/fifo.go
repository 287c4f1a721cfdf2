package sim

// packet is a frame waiting in an egress queue.
type packet struct {
	created int64 // when its sender started it, ps
	flow    int32
	size    int32 // frame bytes
	cells   int32 // buffer bytes it occupies (whole cells)
}

// fifo is a growable ring of packets.
type fifo struct {
	buf     []packet
	head, n int
	bytes   int64 // frame bytes queued
}

func (q *fifo) push(p packet) {
	if q.n == len(q.buf) {
		grown := make([]packet, max(64, 2*len(q.buf)))
		for i := range q.n {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = p
	q.n++
	q.bytes += int64(p.size)
}

func (q *fifo) front() *packet { return &q.buf[q.head] }

func (q *fifo) pop() packet {
	p := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	q.bytes -= int64(p.size)
	return p
}
