package bgp

import (
	"bytes"
	"net/netip"
	"strings"

	api "github.com/osrg/gobgp/v3/api"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/openinof/inof/bgp/record"
)

// Reading GoBGP's protobuf paths. A watch hands every received record over
// as an api.Path whose NLRI and attributes are anypb.Any messages; decoding
// them with proto.Unmarshal goes through reflection and allocates a message
// per attribute and per community, for the few fields a record needs. The
// functions here read those fields straight from the wire bytes
// (protowire), allocation-free; anything they cannot read is treated as
// absent, as a failed UnmarshalTo was before.

// Protobuf names of the messages read here.
var (
	nameOpaqueNLRI = messageName(&api.OpaqueNLRI{})
	nameExtComms   = messageName(&api.ExtendedCommunitiesAttribute{})
	nameMpReach    = messageName(&api.MpReachNLRIAttribute{})
	nameTwoOctetAS = messageName(&api.TwoOctetAsSpecificExtended{})
	nameFourOctAS  = messageName(&api.FourOctetAsSpecificExtended{})
)

func messageName(m proto.Message) string { return string(m.ProtoReflect().Descriptor().FullName()) }

// anyIs reports whether a type URL names the message name (the part after
// the last slash, as anypb.Any.MessageIs compares).
func anyIs(url, name string) bool {
	return url[strings.LastIndexByte(url, '/')+1:] == name
}

// anyIsBytes is anyIs on a type URL still in its wire bytes.
func anyIsBytes(url []byte, name string) bool {
	return string(url[bytes.LastIndexByte(url, '/')+1:]) == name
}

// Field numbers of the messages read here (gobgp/api/attribute.proto and
// google/protobuf/any.proto).
const (
	fieldOpaqueKey   = 1 // OpaqueNLRI.key
	fieldOpaqueValue = 2 // OpaqueNLRI.value
	fieldComms       = 1 // ExtendedCommunitiesAttribute.communities (repeated Any)
	fieldAnyURL      = 1 // Any.type_url
	fieldAnyValue    = 2 // Any.value
	fieldRTSubType   = 2 // {Two,Four}Octet…Extended.sub_type
	fieldRTASN       = 3 // ….asn
	fieldRTLocal     = 4 // ….local_admin
	fieldNextHops    = 2 // MpReachNLRIAttribute.next_hops (repeated string)
)

// rtSubType is the route-target sub-type of an extended community.
const rtSubType = 0x02

// eachField calls fn with every field of a message; fn gets the field's
// bytes (length-delimited fields) or its value (varints). It reports false
// if b is not a well-formed message or fn returned false.
func eachField(b []byte, fn func(num protowire.Number, v []byte, x uint64) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || !fn(num, v, 0) {
				return false
			}
			b = b[n:]
		case protowire.VarintType:
			x, n := protowire.ConsumeVarint(b)
			if n < 0 || !fn(num, nil, x) {
				return false
			}
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return false
			}
			b = b[n:]
		}
	}
	return true
}

// opaqueNLRI reads the key and value of an OpaqueNLRI. They share the
// Any's buffer, which GoBGP builds anew for every path it hands over.
func opaqueNLRI(a *anypb.Any) (key, value []byte, ok bool) {
	if a == nil || !anyIs(a.GetTypeUrl(), nameOpaqueNLRI) {
		return nil, nil, false
	}
	ok = eachField(a.GetValue(), func(num protowire.Number, v []byte, _ uint64) bool {
		switch num {
		case fieldOpaqueKey:
			key = v
		case fieldOpaqueValue:
			value = v
		}
		return true
	})
	return key, value, ok
}

// pathRouteTargets returns the route targets (two- and four-octet AS
// specific, sub-type 2) among a path's extended communities. A malformed
// attribute or community is skipped.
func pathRouteTargets(p *api.Path) []record.RouteTarget {
	var out []record.RouteTarget
	for _, a := range p.GetPattrs() {
		if !anyIs(a.GetTypeUrl(), nameExtComms) {
			continue
		}
		eachField(a.GetValue(), func(num protowire.Number, c []byte, _ uint64) bool {
			if num == fieldComms {
				if rt, ok := communityRT(c); ok {
					out = append(out, rt)
				}
			}
			return true
		})
	}
	return out
}

// communityRT reads one community (an encoded Any) as a route target.
func communityRT(b []byte) (record.RouteTarget, bool) {
	var url, body []byte
	if !eachField(b, func(num protowire.Number, v []byte, _ uint64) bool {
		switch num {
		case fieldAnyURL:
			url = v
		case fieldAnyValue:
			body = v
		}
		return true
	}) {
		return record.RouteTarget{}, false
	}
	if !anyIsBytes(url, nameTwoOctetAS) && !anyIsBytes(url, nameFourOctAS) {
		return record.RouteTarget{}, false
	}
	var sub, asn, local uint64
	if !eachField(body, func(num protowire.Number, _ []byte, x uint64) bool {
		switch num {
		case fieldRTSubType:
			sub = x
		case fieldRTASN:
			asn = x
		case fieldRTLocal:
			local = x
		}
		return true
	}) || sub != rtSubType {
		return record.RouteTarget{}, false
	}
	// uint32 fields: protobuf keeps the low 32 bits of a wider varint.
	return record.RouteTarget{Global: uint32(asn), Local: uint32(local)}, true
}

// pathNextHop returns the first next hop of a path's MP_REACH_NLRI
// attribute (the opaque family carries its next hop there); invalid when
// it has none or it is not an address.
func pathNextHop(p *api.Path) netip.Addr {
	var nh netip.Addr
	for _, a := range p.GetPattrs() {
		if !anyIs(a.GetTypeUrl(), nameMpReach) {
			continue
		}
		eachField(a.GetValue(), func(num protowire.Number, v []byte, _ uint64) bool {
			if num != fieldNextHops {
				return true
			}
			if addr, err := netip.ParseAddr(string(v)); err == nil {
				nh = addr.Unmap()
			}
			return false // the first one
		})
		break
	}
	return nh
}
