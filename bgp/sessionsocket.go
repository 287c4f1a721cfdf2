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
	"time"

	"golang.org/x/sys/unix"
)

// GoBGP owns its session sockets and says nothing of them but the session
// state. What the kernel knows of a connection (is anything arriving, is
// what was sent acknowledged) is read here from this process's own
// descriptors: found by their inodes in /proc/self/net/tcp{,6} and
// /proc/self/fd, which needs no privilege.

// sessionSocket is one of this process's descriptors of a TCP connection.
type sessionSocket struct {
	fd    int
	inode uint64
}

// tcpEstablished is the state column of an established connection in
// /proc/net/tcp.
const tcpEstablished = "01"

// sessionSockets returns this process's descriptors of TCP connections to
// peer (from local, when valid); with established, only those of
// established connections.
func sessionSockets(local, peer netip.Addr, established bool) ([]sessionSocket, error) {
	inodes := map[uint64]bool{}
	var errs []error
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		if err := socketInodes(table, local, peer, established, inodes); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(inodes) == 0 {
		return nil, errors.Join(errs...)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, errors.Join(append(errs, fmt.Errorf("bgp: list descriptors: %w", err))...)
	}
	var out []sessionSocket
	for _, e := range fds {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || !strings.HasPrefix(target, "socket:[") {
			continue
		}
		inode, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]"), 10, 64)
		if err != nil || !inodes[inode] {
			continue
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		out = append(out, sessionSocket{fd: fd, inode: inode})
	}
	return out, errors.Join(errs...)
}

// socketInodes adds to inodes those of the TCP sockets of a /proc net
// table connected to peer (from local, when valid; established only, when
// set).
func socketInodes(table string, local, peer netip.Addr, established bool, inodes map[uint64]bool) error {
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
		if !lok || !rok || r != peer || local.IsValid() && l != local || established && fields[3] != tcpEstablished {
			continue
		}
		if inode, err := strconv.ParseUint(fields[9], 10, 64); err == nil && inode != 0 {
			inodes[inode] = true
		}
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

// connQuiet is what the kernel says of a connection's recent traffic.
type connQuiet struct {
	// sinceRecv is the time since data last arrived.
	sinceRecv time.Duration
	// unacked is set while sent data is not acknowledged, and sinceSent
	// is then the time since the newest of it went out.
	unacked   bool
	sinceSent time.Duration
}

// How long a session may be quiet before a reflector in it does not count
// as serving (stalled).
const (
	// unackedLimit: data sent this long ago and not acknowledged. In a
	// fabric the round trip is well under a millisecond; a second is many
	// retransmissions.
	unackedLimit = time.Second
	// silenceMargin is added to the keepalive interval the peer keeps.
	silenceMargin = time.Second
)

// stalled says why a connection quiet as q cannot be counted on to deliver
// what its peer sends ("" if nothing says so). keepalive is how often the
// peer sends at least a KEEPALIVE (0: it need not).
func stalled(q connQuiet, keepalive time.Duration) string {
	if q.unacked && q.sinceSent >= unackedLimit {
		return fmt.Sprintf("data sent %v ago not acknowledged", q.sinceSent)
	}
	if keepalive > 0 && q.sinceRecv > keepalive+silenceMargin {
		return fmt.Sprintf("nothing received for %v (keepalive %v)", q.sinceRecv, keepalive)
	}
	return ""
}

// sessionQuiet reads connQuiet of each of this process's established
// connections to peer (from local, when valid).
func sessionQuiet(local, peer netip.Addr) (qs []connQuiet, err error) {
	socks, err := sessionSockets(local, peer, true)
	for _, s := range socks {
		info, ierr := unix.GetsockoptTCPInfo(s.fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		var st unix.Stat_t
		if ierr != nil || unix.Fstat(s.fd, &st) != nil || st.Ino != s.inode {
			continue // closed, or the number reused, since it was listed
		}
		qs = append(qs, connQuiet{
			sinceRecv: time.Duration(info.Last_data_recv) * time.Millisecond,
			unacked:   info.Unacked > 0,
			sinceSent: time.Duration(info.Last_data_sent) * time.Millisecond,
		})
	}
	return qs, err
}
