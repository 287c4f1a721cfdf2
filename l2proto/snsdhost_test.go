package l2proto

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"
)

// snsdHost answers on a Link the way nvme-snsd does (fact sheet §6-7): it
// takes 0x88A7 frames to the group address, keeps the complete notifications
// addressed to one of its IPs, and ACKs all of them in one frame. withhold,
// if set, suppresses the ACK of a notification (by how often its sequence
// number has been seen), to test retransmission.
type snsdHost struct {
	link     Link
	ips      map[netip.Addr]bool
	withhold func(n Notification, seen int) bool

	mu     sync.Mutex
	frames []time.Time    // arrival of every 0x88A7 frame
	seen   map[uint32]int // sequence → times received
	got    []Notification // every accepted notification, in order
}

func newSNSDHost(link Link, ips ...netip.Addr) *snsdHost {
	h := &snsdHost{link: link, ips: map[netip.Addr]bool{}, seen: map[uint32]int{}}
	for _, ip := range ips {
		h.ips[ip] = true
	}
	return h
}

// run serves until the link closes.
func (h *snsdHost) run() error {
	buf := make([]byte, MaxFrameLen+4)
	for {
		n, err := h.link.ReadFrame(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		now := time.Now()
		f, err := DecodeFrame(buf[:n])
		if f.Message == nil {
			continue
		}
		_ = err // snsd, too, handles the valid root TLVs of a partly valid frame
		var ack Message
		ack.Version = Version1
		h.mu.Lock()
		h.frames = append(h.frames, now)
		for _, nt := range f.Message.Notifications {
			if !h.ips[nt.Host] {
				continue
			}
			h.seen[nt.Seq]++
			h.got = append(h.got, nt)
			if h.withhold != nil && h.withhold(nt, h.seen[nt.Seq]) {
				continue
			}
			ack.Acks = append(ack.Acks, Ack{Target: nt.Target, Host: nt.Host, Seq: nt.Seq})
		}
		h.mu.Unlock()
		if len(ack.Acks) == 0 {
			continue
		}
		out, err := MessageFrame(h.link.HardwareAddr(), &ack)
		if err != nil {
			return err
		}
		if err := h.link.WriteFrame(out); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
	}
}

// frameTimes returns the arrival times of the 0x88A7 frames so far.
func (h *snsdHost) frameTimes() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.frames...)
}

func (h *snsdHost) received() []Notification {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Notification(nil), h.got...)
}

// maxInWindow returns the most frames seen within any window of length w.
func maxInWindow(ts []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}
