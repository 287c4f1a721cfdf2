package bgp

import (
	"errors"
	"fmt"
	"net/netip"

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
	socks, err := sessionSockets(local, peer, false)
	n := 0
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, s := range socks {
		if err := unix.Shutdown(s.fd, unix.SHUT_RDWR); err != nil && !errors.Is(err, unix.ENOTCONN) {
			errs = append(errs, fmt.Errorf("bgp: shut down session socket to %s: %w", peer, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
