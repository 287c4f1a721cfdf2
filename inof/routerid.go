package inof

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// RouterID is a BGP router-id: the 32-bit identifier of a switch or a
// reflector. It names the switch in the key of every device record and the
// reflector in the key of every configuration record it originates.
type RouterID uint32

// RouterIDFrom returns the router-id of an IPv4 address; ok is false for
// any other address.
func RouterIDFrom(a netip.Addr) (id RouterID, ok bool) {
	a = a.Unmap()
	if !a.Is4() {
		return 0, false
	}
	b := a.As4()
	return RouterID(binary.BigEndian.Uint32(b[:])), true
}

// ParseRouterID parses a router-id in dotted IPv4 form; 0.0.0.0 is not a
// router-id.
func ParseRouterID(s string) (RouterID, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return 0, fmt.Errorf("router-id %q: %w", s, err)
	}
	id, ok := RouterIDFrom(a)
	if !ok || id == 0 {
		return 0, fmt.Errorf("router-id %q: want a non-zero IPv4 address", s)
	}
	return id, nil
}

// MustParseRouterID is ParseRouterID for values already validated; it
// panics on an invalid one.
func MustParseRouterID(s string) RouterID {
	id, err := ParseRouterID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// Addr returns the router-id as an IPv4 address.
func (id RouterID) Addr() netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(id))
	return netip.AddrFrom4(b)
}

// String formats the router-id in dotted form.
func (id RouterID) String() string { return id.Addr().String() }
