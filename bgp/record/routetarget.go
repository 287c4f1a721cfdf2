package record

import (
	"fmt"
	"hash/fnv"
)

// RouteTarget is a route-target extended community: Global is the AS
// number, Local the assigned number. With Global ≤ 65535 it is encoded as
// two-octet-AS specific (32-bit Local), above as four-octet-AS specific
// (16-bit Local).
type RouteTarget struct {
	Global uint32
	Local  uint32
}

func (rt RouteTarget) String() string { return fmt.Sprintf("%d:%d", rt.Global, rt.Local) }

// Reserved local values: 0 carries configuration records everyone
// subscribes to; 0xFFFF carries them between reflectors (PeeringRT); zone
// route targets use neither.
const (
	configRTLocal  = 0
	peeringRTLocal = 0xFFFF
)

// AnyRT, given to Subscribe, is the default route-target membership of
// RFC 4684 (the wildcard): the speaker receives every record, whatever its
// route targets. A switch that needs every zone subscribes to it instead of
// one membership per zone: GoBGP matches each record against each
// membership of a peer (by formatting both as text), so a thousand
// memberships cost a thousand comparisons per record, and each new one a
// scan of the whole table; the wildcard costs one. It is the zero
// RouteTarget, which no zone or configuration route target can be (their
// AS is never 0).
var AnyRT = RouteTarget{}

// SwitchInfoRT tags switch records (Switch): AS 0, which no zone or
// configuration route target has, so no switch's membership asks for it,
// and a reflector's export policy keeps it from every neighbor (a switch
// subscribed to AnyRT would get it otherwise). A record needs a route
// target to reach the reflector at all: GoBGP sends none without one to an
// RTC peer.
var SwitchInfoRT = RouteTarget{Global: 0, Local: 1}

// DiscoveryRT tags discovery records (Discovery): AS 0 as
// SwitchInfoRT, so no zone membership asks for it; a switch that serves
// discovery subscribes to it, and reflectors reflect it to clients as any
// client record (never to peer reflectors).
var DiscoveryRT = RouteTarget{Global: 0, Local: 2}

// ConfigRT is the fabric-wide route target of configuration records.
func ConfigRT(asn uint32) RouteTarget { return RouteTarget{Global: asn, Local: configRTLocal} }

// PeeringRT is the second route target of the configuration records a
// reflector originates, and the one membership every reflector announces
// to its peer reflectors besides the default one. No switch subscribes to
// it, which matters: towards a non-client peer GoBGP announces, for a
// route-target membership, the copy a route-reflector client sent rather
// than the reflector's own, and the export policy keeps clients'
// memberships from peer reflectors. Once a switch subscribed to every zone
// with the default membership (soft zoning, an unzoned device), a
// reflector whose session to its peer came back announced no membership
// the configuration records matched, and replication stopped both ways
// (found by the soak, TestPrivSoakReflectorRestartSoftZoning).
func PeeringRT(asn uint32) RouteTarget { return RouteTarget{Global: asn, Local: peeringRTLocal} }

// ZoneRT is the stable route target of a zone: the 32-bit FNV-1a hash of its
// name (16 bits with a four-octet AS), never the configuration value. Two
// zones whose names collide share a route target; that costs bandwidth, not
// correctness, because switches still apply the zoning rules to what they
// receive.
func ZoneRT(asn uint32, zone string) RouteTarget {
	h := fnv.New32a()
	h.Write([]byte(zone))
	v := h.Sum32()
	if asn > 0xFFFF {
		v &= 0xFFFF
	}
	switch v {
	case configRTLocal:
		v = 1
	case peeringRTLocal:
		v = peeringRTLocal - 1
	}
	return RouteTarget{Global: asn, Local: v}
}
