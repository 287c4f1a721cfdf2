//go:build linux

package l2proto

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LinkWatcher reports carrier changes (IFF_RUNNING) of the interfaces in its
// network namespace from rtnetlink, the fast path for "link down" (reason 1):
// nvme-snsd never says goodbye, so without it a switch would wait for the
// 120 s age-out.
type LinkWatcher struct {
	fd int
}

// NewLinkWatcher subscribes to link events in the calling thread's network
// namespace.
func NewLinkWatcher() (*LinkWatcher, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("l2proto: netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_LINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("l2proto: netlink bind: %w", err)
	}
	// Wake up now and then to notice cancellation.
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("l2proto: netlink timeout: %w", err)
	}
	return &LinkWatcher{fd: fd}, nil
}

// Run calls fn(ifname, running) for every carrier change until ctx ends, then
// closes the watcher. The first event seen for an interface is always
// reported.
func (w *LinkWatcher) Run(ctx context.Context, fn func(ifname string, running bool)) error {
	defer unix.Close(w.fd)
	state := map[int32]bool{}
	buf := make([]byte, 1<<16)
	for ctx.Err() == nil {
		n, _, err := unix.Recvfrom(w.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.ENOBUFS) {
				// Events were lost; the next ones for each link are reported.
				clear(state)
				continue
			}
			return fmt.Errorf("l2proto: netlink receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			continue // a malformed netlink message from the kernel is not ours to fix
		}
		for i := range msgs {
			m := &msgs[i]
			if (m.Header.Type != unix.RTM_NEWLINK && m.Header.Type != unix.RTM_DELLINK) || len(m.Data) < unix.SizeofIfInfomsg {
				continue
			}
			info := (*unix.IfInfomsg)(unsafe.Pointer(&m.Data[0]))
			running := m.Header.Type == unix.RTM_NEWLINK && info.Flags&unix.IFF_RUNNING != 0
			if old, seen := state[info.Index]; seen && old == running {
				continue
			}
			state[info.Index] = running
			if name := linkName(m); name != "" {
				fn(name, running)
			}
		}
	}
	return ctx.Err()
}

func linkName(m *syscall.NetlinkMessage) string {
	attrs, err := syscall.ParseNetlinkRouteAttr(m)
	if err != nil {
		return ""
	}
	for _, a := range attrs {
		if a.Attr.Type == unix.IFLA_IFNAME {
			v := a.Value
			for len(v) > 0 && v[len(v)-1] == 0 {
				v = v[:len(v)-1]
			}
			return string(v)
		}
	}
	return ""
}
