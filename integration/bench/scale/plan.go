package scale

import (
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// ASN is the fabric's AS number in every setup.
const ASN = 65000

// Plan sizes one fabric: Devices device records in Zones zones, published
// by Switches switches (one feeder session each).
type Plan struct {
	Devices  int
	Zones    int
	Switches int
	// Sets publishes device set records (docs/records.md): one per
	// (switch, zone) and shard. Rack places every device of zone z on
	// switch z mod Switches (a switch serves whole zones, as a rack's leaf
	// does) instead of spreading each zone over every switch; without it a
	// set holds one device.
	Sets, Rack bool `json:",omitempty"`
}

// Sizes are the two fabrics the benchmark measures: Convergence (the new
// switch agent's sync) and Sessions (many client sessions on one
// reflector).
type Sizes struct {
	Convergence Plan
	Sessions    Plan
	// Many is the fabric of many small switches: how long a reflector
	// takes to have every session established and every record in.
	Many Plan
}

// Full are the sizes `make bench` measures: 100k records in 1k zones (100
// switches of 1k devices), and 256 sessions × 1k devices. A reflector's
// work grows with records × sessions (GoBGP weighs every received record
// against every other session), so the issue's 256 × 8k takes 35 min or
// more of loading on 2 cores: BENCH_SCALE=issue measures it.
var Full = Sizes{
	Convergence: Plan{Devices: 100_000, Zones: 1000, Switches: 100},
	Sessions:    Plan{Devices: 256 * 1024, Zones: 1000, Switches: 256},
	Many:        Plan{Devices: 1000 * 16, Zones: 1000, Switches: 1000},
}

// Issue is Full with the issue's 256 sessions × 8k devices.
var Issue = Sizes{
	Convergence: Full.Convergence,
	Sessions:    Plan{Devices: 256 * 8192, Zones: 1000, Switches: 256},
	Many:        Full.Many,
}

// Small is the smoke run: 10k records in 100 zones, 16 sessions.
var Small = Sizes{
	Convergence: Plan{Devices: 10_000, Zones: 100, Switches: 10},
	Sessions:    Plan{Devices: 16 * 1024, Zones: 100, Switches: 16},
	Many:        Plan{Devices: 100 * 16, Zones: 100, Switches: 100},
}

// SizesFromEnv returns Small when BENCH_SCALE=small or short is set,
// Issue when BENCH_SCALE=issue, else Full; any other non-empty BENCH_SCALE
// is an error.
func SizesFromEnv(short bool) (Sizes, error) {
	switch v := os.Getenv("BENCH_SCALE"); v {
	case "small":
		return Small, nil
	case "issue":
		return Issue, nil
	case "", "full":
		if short {
			return Small, nil
		}
		return Full, nil
	default:
		return Sizes{}, fmt.Errorf("scale: BENCH_SCALE=%q: want small, full or issue", v)
	}
}

// ZoneName is the name of zone z.
func ZoneName(z int) string { return fmt.Sprintf("z%04d", z) }

// base is where device addresses start: each zone has a subnet of its
// own (a power of two at least perZone wide), its devices the first
// addresses in it.
var base = netip.MustParseAddr("10.0.0.0")

// perZone is how many devices each zone holds (the last one may hold fewer).
func (p Plan) perZone() int { return (p.Devices + p.Zones - 1) / p.Zones }

// zoneBits is the width of a zone's subnet in address bits.
func (p Plan) zoneBits() int {
	b := 1
	for 1<<b < p.perZone()+1 { // +1: no device takes the subnet's .0
		b++
	}
	return b
}

// addr is device i's address.
func (p Plan) addr(i int) netip.Addr {
	v, _ := inof.RouterIDFrom(base) // an IPv4 address as a number
	v += inof.RouterID(i/p.perZone())<<p.zoneBits() + inof.RouterID(i%p.perZone()) + 1
	return v.Addr()
}

// ZoneMembers returns zone z's one member: its subnet. (Zones by address
// range are as valid, but the zone index scans range members one by one:
// a thousand of them cost about 10 µs per device, see docs/performance.md.)
func (p Plan) ZoneMembers(z int) []zones.Member {
	pfx := netip.PrefixFrom(p.addr(z*p.perZone()), 32-p.zoneBits()).Masked()
	return []zones.Member{{Kind: zones.MemberPrefix, Prefix: pfx}}
}

// SwitchID is switch s's router-id (and its feeder's source address):
// 127.1.x.y.
func SwitchID(s int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 1, byte((s + 1) >> 8), byte(s + 1)})
}

// Record is one device record as it goes on the wire.
type Record struct {
	Key, Value []byte
	RT         record.RouteTarget
}

// switchOf is the switch that publishes device i.
func (p Plan) switchOf(i int) int {
	if p.Rack {
		return (i / p.perZone()) % p.Switches
	}
	return i % p.Switches
}

// SwitchRecords returns the records switch s publishes. Without Rack its
// devices are s, s+Switches, s+2·Switches…, so that every switch has
// devices in every zone; with Rack, every device of its zones. One device
// in ten is a target, the rest hosts. With Sets the devices of one zone go
// in device set records, as full as the record limit allows.
func (p Plan) SwitchRecords(s int) ([]Record, error) {
	sw, _ := inof.RouterIDFrom(SwitchID(s))
	now := time.Now().Truncate(time.Millisecond)
	var out []Record
	var set *record.DeviceSet
	setZone, setSize := -1, 0
	flush := func() error {
		if set == nil || len(set.Devices) == 0 {
			return nil
		}
		k, v, err := record.Encode(set, 1)
		if err != nil {
			return fmt.Errorf("scale: set of zone %d: %w", setZone, err)
		}
		out = append(out, Record{Key: k, Value: v, RT: record.ZoneRT(ASN, ZoneName(setZone))})
		set.Devices = nil
		return nil
	}
	for i := range p.Devices {
		if p.switchOf(i) != s {
			continue
		}
		d := inof.Device{Addr: p.addr(i), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
		if i%10 == 0 {
			d.Role, d.Port, d.NQN = inof.RoleTarget, 4420, fmt.Sprintf("nqn.2014-08.org.example:t%d", i)
		}
		r := &record.Device{Report: inof.Report{Switch: sw, Device: d, Status: inof.Status{State: inof.StateActive, Changed: now}, AccessPort: fmt.Sprintf("swp%d", i%48+1), Since: now},
			Epoch: 1}
		z := i / p.perZone()
		if !p.Sets {
			k, v, err := record.Encode(r, 1)
			if err != nil {
				return nil, fmt.Errorf("scale: device %d: %w", i, err)
			}
			out = append(out, Record{Key: k, Value: v, RT: record.ZoneRT(ASN, ZoneName(z))})
			continue
		}
		size := record.DeviceSetEntrySize(r)
		if z != setZone || setSize+size > record.DeviceSetCapacity(1) {
			if err := flush(); err != nil {
				return nil, err
			}
			if z != setZone {
				set = &record.DeviceSet{Switch: sw, Set: uint64(z) + 1}
			} else {
				set.Shard++
			}
			setZone, setSize = z, 0
		}
		set.Devices = append(set.Devices, *r)
		setSize += size
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// Devices is how many devices recs carry.
func Devices(recs []Record) int {
	n := 0
	for _, r := range recs {
		if r.Key[0] == byte(record.TypeDeviceSet) {
			n += int(r.Value[2])<<8 | int(r.Value[3])
		} else {
			n++
		}
	}
	return n
}
