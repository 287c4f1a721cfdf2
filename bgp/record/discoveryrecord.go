package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/wire"
)

// Discovery is a switch's announcement of its NVMe/TCP discovery
// controller (docs/discovery.md, "Referrals"): the addresses, with their
// prefixes, it serves on its access segments and the port it listens on.
// Another switch's controller refers a dual-homed host to it: when the host
// is registered at this switch too, the referral carries the endpoint
// whose prefix holds the host's address there. It carries DiscoveryRT,
// which switches serving discovery subscribe to.
type Discovery struct {
	Switch inof.RouterID
	// Port is the controller's TCP port (discovery.listen).
	Port uint16
	// Endpoints are the controller's addresses on the access segments,
	// each with its prefix (an interface address), sorted, at most
	// MaxDiscoveryEndpoints.
	Endpoints []netip.Prefix
}

// MaxDiscoveryEndpoints bounds a discovery record's endpoints (the record
// stays far below MaxSize: 64 IPv6 endpoints take 1,152 bytes).
const MaxDiscoveryEndpoints = 64

// Key implements Record: type(1)=5 switch(4).
func (d *Discovery) Key() []byte { return d.appendKey(nil) }

func (d *Discovery) appendKey(k []byte) []byte {
	return binary.BigEndian.AppendUint32(append(k, byte(TypeDiscovery)), uint32(d.Switch))
}

// Validate reports what a receiver would refuse: no port, too many
// endpoints, an endpoint that is not a valid, canonical interface prefix,
// or endpoints not sorted and unique.
func (d *Discovery) Validate() error {
	switch {
	case d.Port == 0:
		return errors.New("discovery record without a port")
	case len(d.Endpoints) > MaxDiscoveryEndpoints:
		return fmt.Errorf("discovery record with %d endpoints (at most %d)", len(d.Endpoints), MaxDiscoveryEndpoints)
	}
	for i, p := range d.Endpoints {
		a := p.Addr()
		if !p.IsValid() || a.Is4In6() || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() {
			return fmt.Errorf("discovery endpoint %s: not a unicast interface address", p)
		}
		if i > 0 && comparePrefix(d.Endpoints[i-1], p) >= 0 {
			return errors.New("discovery endpoints not sorted and unique")
		}
	}
	return nil
}

// comparePrefix orders prefixes by address, then length.
func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// SortEndpoints sorts endpoints as a Discovery holds them and drops
// repeats.
func SortEndpoints(ps []netip.Prefix) []netip.Prefix {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, comparePrefix)
	return slices.Compact(ps)
}

// MarshalValue implements Record: version(1)=1 type(1)=5 port(2) count(1),
// then per endpoint family(1: 4|6) address(4|16) bits(1).
func (d *Discovery) MarshalValue() ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, malformed(err)
	}
	b := binary.BigEndian.AppendUint16([]byte{valueVersion, byte(TypeDiscovery)}, d.Port)
	b = append(b, byte(len(d.Endpoints)))
	for _, p := range d.Endpoints {
		b = append(wire.AppendAddr(b, p.Addr()), byte(p.Bits()))
	}
	return b, nil
}

// ParseDiscoveryKey decodes the key of a discovery record. Errors wrap
// ErrMalformed.
func ParseDiscoveryKey(key []byte) (inof.RouterID, error) {
	if len(key) != 5 || Type(key[0]) != TypeDiscovery {
		return 0, fmt.Errorf("%w: not a discovery key", ErrMalformed)
	}
	return inof.RouterID(binary.BigEndian.Uint32(key[1:])), nil
}

func decodeDiscovery(key, value []byte) (*Discovery, error) {
	sw, err := ParseDiscoveryKey(key)
	if err != nil {
		return nil, err
	}
	v := wire.NewReader(value[2:])
	d := &Discovery{Switch: sw, Port: v.U16()}
	n := int(v.U8())
	for i := 0; i < n; i++ {
		a := v.Addr()
		bits := int(v.U8())
		if v.Err() != nil {
			break // Done reports it
		}
		if _, err := a.Prefix(bits); err != nil {
			return nil, fmt.Errorf("%w: discovery endpoint %d: %w", ErrMalformed, i, err)
		}
		d.Endpoints = append(d.Endpoints, netip.PrefixFrom(a, bits))
	}
	if err := v.Done(); err != nil {
		return nil, fmt.Errorf("%w: discovery value: %w", ErrMalformed, err)
	}
	if err := d.Validate(); err != nil {
		return nil, malformed(err)
	}
	return d, nil
}

// Contains returns the endpoint whose prefix holds addr, preferring the
// longest prefix; false when none does.
func (d *Discovery) Contains(addr netip.Addr) (netip.Addr, bool) {
	best := netip.Prefix{}
	for _, p := range d.Endpoints {
		if p.Contains(addr) && (!best.IsValid() || p.Bits() > best.Bits()) {
			best = p
		}
	}
	return best.Addr(), best.IsValid()
}
