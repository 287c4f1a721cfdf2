package l2proto

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// StrayWatcher sees the registration and notification frames that arrive
// on interfaces that are not access ports, so that a switch can count and
// drop them (a host on an uplink, a spoofed registration): one AF_PACKET
// socket bound to no interface, with PacketLink's filter and the access
// ports left out in the kernel (their PacketLinks read their frames; a busy
// access port's frames are not copied to this socket too).
type StrayWatcher struct {
	fd     int
	mu     sync.Mutex                   // SetAccessPorts
	access atomic.Pointer[map[int]bool] // ifindex of the access ports
	names  map[int]string               // ifindex → name, learned as frames arrive
	// skipped counts frames of access ports read all the same (before a
	// new filter took effect).
	skipped atomic.Uint64
}

// strayPoll bounds how long Run takes to notice that its ctx ended.
const strayPoll = 500 * time.Millisecond

// ListenStray opens the socket in the calling thread's network namespace
// (CAP_NET_RAW). accessPorts must exist.
func ListenStray(accessPorts []string) (*StrayWatcher, error) {
	w := &StrayWatcher{fd: -1, names: map[int]string{}}
	// Names are taken now, in the namespace the socket is opened in (Run
	// may run on a thread of another namespace); later interfaces are
	// looked up as their frames arrive.
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("l2proto: interfaces: %w", err)
	}
	for _, ifi := range ifs {
		w.names[ifi.Index] = ifi.Name
	}
	// Protocol 0: the socket receives nothing until it is bound, after
	// its filter is on, so no frame gets past the filter in between.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("l2proto: packet socket on all interfaces: %w", err)
	}
	w.fd = fd
	tv := unix.NsecToTimeval(strayPoll.Nanoseconds())
	if err := errors.Join(
		w.SetAccessPorts(accessPorts),
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv),
	); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("l2proto: packet socket on all interfaces: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("l2proto: bind packet socket to all interfaces: %w", err)
	}
	return w, nil
}

// maxFilterPorts bounds the access ports the kernel filter names (two
// instructions each, within classic BPF's 4,096); with more, Run alone
// leaves them out.
const maxFilterPorts = 2000

// SetAccessPorts replaces the access ports (a reload), looked up in the
// namespace of the calling thread; they must exist. It may be called while
// Run runs; after Run returned it only records them.
func (w *StrayWatcher) SetAccessPorts(accessPorts []string) error {
	access := map[int]bool{}
	var indexes []uint32
	for _, p := range accessPorts {
		ifi, err := net.InterfaceByName(p)
		if err != nil {
			return fmt.Errorf("l2proto: access port %q: %w", p, err)
		}
		access[ifi.Index] = true
		indexes = append(indexes, uint32(ifi.Index))
	}
	if len(indexes) > maxFilterPorts {
		indexes = nil
	}
	filter, err := bpf.Assemble(strayFilter(indexes))
	if err != nil {
		return fmt.Errorf("l2proto: filter of %d access ports: %w", len(indexes), err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Run checks the ports too, for the frames queued before the new
	// filter took effect.
	prev := w.access.Swap(&access)
	if w.fd < 0 {
		return nil // Run closed the socket
	}
	if err := attachFilter(w.fd, filter); err != nil {
		if prev != nil {
			w.access.Store(prev) // the old filter is still the kernel's
		}
		return fmt.Errorf("l2proto: packet socket on all interfaces: %w", err)
	}
	return nil
}

// strayFilter is PacketLink's filter that also drops every frame received
// on one of the access ports (by ifindex): two instructions a port, so no
// jump grows with their number.
func strayFilter(access []uint32) []bpf.Instruction {
	prog := []bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtType},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.PACKET_OUTGOING, SkipFalse: 1},
		bpf.RetConstant{Val: 0},
		bpf.LoadExtension{Num: bpf.ExtInterfaceIndex},
	}
	for _, ix := range access {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: ix, SkipFalse: 1}, bpf.RetConstant{Val: 0})
	}
	return append(prog,
		bpf.LoadAbsolute{Off: 12, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(EtherTypeLLDP), SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(EtherTypeNotify), SkipFalse: 1},
		bpf.RetConstant{Val: MaxFrameLen + 4},
		bpf.RetConstant{Val: 0},
	)
}

// attachFilter attaches (or replaces) a socket filter.
func attachFilter(fd int, raw []bpf.RawInstruction) error {
	filter := make([]unix.SockFilter, len(raw))
	for i, ins := range raw {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Run reads until ctx ends and calls fn, from Run's goroutine, with the
// interface name and the frame of every filtered frame received on an
// interface that is not an access port. It closes the socket when it
// returns.
func (w *StrayWatcher) Run(ctx context.Context, fn func(ifname string, frame []byte)) error {
	w.mu.Lock()
	fd := w.fd
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		unix.Close(fd)
		w.fd = -1 // SetAccessPorts must not touch a number the kernel may reuse
		w.mu.Unlock()
	}()
	buf := make([]byte, MaxFrameLen+4)
	for ctx.Err() == nil {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENETDOWN):
			continue
		case err != nil:
			return fmt.Errorf("l2proto: read on all interfaces: %w", err)
		}
		ll, ok := from.(*unix.SockaddrLinklayer)
		if !ok {
			continue
		}
		if (*w.access.Load())[ll.Ifindex] {
			w.skipped.Add(1)
			continue
		}
		fn(w.name(ll.Ifindex), buf[:n])
	}
	return nil
}

func (w *StrayWatcher) name(index int) string {
	if n, ok := w.names[index]; ok {
		return n
	}
	n := fmt.Sprintf("ifindex %d", index)
	if ifi, err := net.InterfaceByIndex(index); err == nil {
		n = ifi.Name
	}
	w.names[index] = n
	return n
}
