package bgp

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// shutdownSessions shuts down, in both directions, this process's TCP
// connections to peer (from local, when valid): GoBGP's session sockets,
// found by their inodes in /proc/self/net/tcp{,6} and /proc/self/fd. It
// needs no privilege, and GoBGP, which still holds the descriptors, sees
// the connection end and closes them itself. It returns how many it shut
// down.
//
// A reflector that loses BFD to a switch deletes the switch's neighbor to
// withdraw its records at once, and GoBGP then says goodbye with a Cease
// that it sends to an RFC 8538 peer as Hard Reset. If the switch was only
// cut off (its uplink flapped), that notification is delivered when the
// link comes back and makes the switch drop every route of this reflector;
// cut off from the other reflector too, it loses the whole fabric and tells
// its hosts every remote target is gone (found by the soak,
// TestPrivSoakUplinkFlapKeepsRemoteTargets). A connection shut down first
// carries no notification: the switch sees the session end without one and
// keeps the routes under graceful restart until the reflector is back.
func shutdownSessions(local, peer netip.Addr) (int, error) {
	inodes := map[string]bool{}
	var errs []error
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		if err := socketInodes(table, local, peer, inodes); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(inodes) == 0 {
		return 0, errors.Join(errs...)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, errors.Join(append(errs, fmt.Errorf("bgp: list descriptors: %w", err))...)
	}
	n := 0
	for _, e := range fds {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || !strings.HasPrefix(target, "socket:[") {
			continue
		}
		if !inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] {
			continue
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.Shutdown(fd, unix.SHUT_RDWR); err != nil && !errors.Is(err, unix.ENOTCONN) {
			errs = append(errs, fmt.Errorf("bgp: shut down session socket to %s: %w", peer, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// socketInodes adds to inodes those of the TCP sockets of a /proc net
// table connected to peer (from local, when valid).
func socketInodes(table string, local, peer netip.Addr, inodes map[string]bool) error {
	f, err := os.Open(table)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		l, lok := procAddr(fields[1])
		r, rok := procAddr(fields[2])
		if !lok || !rok || r != peer || local.IsValid() && l != local {
			continue
		}
		inodes[fields[9]] = true
	}
	return sc.Err()
}

// procAddr parses the address of a /proc/net/tcp{,6} "ADDR:PORT" field:
// hex, each 32-bit word in host (little-endian) order. IPv4-mapped IPv6
// addresses come back as IPv4.
func procAddr(s string) (netip.Addr, bool) {
	h, _, ok := strings.Cut(s, ":")
	if !ok {
		return netip.Addr{}, false
	}
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 4 && len(b) != 16 {
		return netip.Addr{}, false
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	a, ok := netip.AddrFromSlice(b)
	return a.Unmap(), ok
}
