package discovery

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
	"strconv"
)

// Transport is a discovery log entry's transport type (TRTYPE).
type Transport uint8

// Transport types.
const (
	TransportRDMA Transport = 1
	TransportTCP  Transport = 3
)

// DefaultPort is the NVMe-oF I/O service port (trsvcid) an entry gets when
// the target registered none.
const DefaultPort = 4420

// Entry is one target a host may connect to: a discovery log page entry.
type Entry struct {
	Transport Transport
	Addr      netip.Addr
	Port      uint16 // trsvcid; 0 means DefaultPort
	// NQN is the target's subsystem NQN. An entry without one (nvme-snsd
	// targets never announce it) is a referral to the discovery controller
	// at the same address and port: the host asks the target itself.
	NQN string
	// Current marks the entry that describes this discovery controller
	// itself (SUBTYPE 3, TP 8010): where the host reached it, with explicit
	// persistent connections supported.
	Current bool
}

// Compare orders entries by address, port, NQN and transport.
func (e Entry) Compare(o Entry) int {
	return cmp.Or(e.Addr.Compare(o.Addr), cmp.Compare(e.port(), o.port()), cmp.Compare(e.NQN, o.NQN),
		cmp.Compare(e.Transport, o.Transport))
}

func (e Entry) port() uint16 {
	if e.Port == 0 {
		return DefaultPort
	}
	return e.Port
}

// Subtype is the entry's SUBTYPE: 2 (NVMe subsystem) or 1 (referral to a
// discovery subsystem) when it has no NQN.
func (e Entry) Subtype() uint8 {
	switch {
	case e.Current:
		return 3
	case e.NQN == "":
		return 1
	}
	return 2
}

// Sizes of the discovery log page (Get Log Page 0x70).
const (
	logHeaderLen = 1024
	logEntryLen  = 1024
	identifyLen  = 4096
)

// discoveryLog returns the discovery log page for entries (sorted, at most
// one of each) with generation counter gen, after the entry that describes
// the controller itself, if self is set.
func discoveryLog(gen uint64, self *Entry, entries []Entry) []byte {
	if self != nil {
		entries = append([]Entry{*self}, entries...)
	}
	b := make([]byte, logHeaderLen+logEntryLen*len(entries))
	binary.LittleEndian.PutUint64(b[0:8], gen)
	binary.LittleEndian.PutUint64(b[8:16], uint64(len(entries)))
	// recfmt (bytes 16:17) is 0.
	for i, e := range entries {
		putEntry(b[logHeaderLen+i*logEntryLen:][:logEntryLen], e)
	}
	return b
}

// eflagsEPCSD is the entry flag "explicit persistent connection support
// for discovery".
const eflagsEPCSD = 1 << 1

func putEntry(b []byte, e Entry) {
	b[0] = byte(e.Transport)
	b[1] = 1 // adrfam IPv4
	if e.Addr.Is6() && !e.Addr.Is4In6() {
		b[1] = 2
	}
	b[2] = e.Subtype()
	b[3] = 0                                 // treq: secure channel not specified
	binary.LittleEndian.PutUint16(b[4:6], 1) // portid
	binary.LittleEndian.PutUint16(b[6:8], dynamicController)
	binary.LittleEndian.PutUint16(b[8:10], discoveryAdminSize) // asqsz
	if e.Current {
		binary.LittleEndian.PutUint16(b[10:12], eflagsEPCSD)
	}
	copy(b[32:64], strconv.Itoa(int(e.port())))
	nqn := e.NQN
	if nqn == "" || e.Current {
		nqn = DiscoveryNQN
	}
	copy(b[256:512], nqn)
	copy(b[512:768], e.Addr.Unmap().String())
	if e.Transport == TransportRDMA {
		// tsas: queue pair type connected, provider type not specified,
		// connection management RDMA_CM.
		b[768], b[769], b[770] = 1, 1, 1
	}
	// TCP tsas: sectype 0, no security.
}

// ParseLog decodes a whole discovery log page (the header and every entry
// it counts). Entries of unknown transport or address keep what they have.
// The entry of the controller itself (SUBTYPE 3) is returned with Current
// set.
func ParseLog(b []byte) (gen uint64, entries []Entry, ok bool) {
	if len(b) < logHeaderLen {
		return 0, nil, false
	}
	gen, n := binary.LittleEndian.Uint64(b[0:8]), binary.LittleEndian.Uint64(b[8:16])
	if n > uint64((len(b)-logHeaderLen)/logEntryLen) {
		return gen, nil, false
	}
	for i := range int(n) {
		r := b[logHeaderLen+i*logEntryLen:][:logEntryLen]
		e := Entry{Transport: Transport(r[0])}
		e.Addr, _ = netip.ParseAddr(cString(r[512:768]))
		p, _ := strconv.ParseUint(cString(r[32:64]), 10, 16)
		e.Port = uint16(p)
		switch r[2] {
		case 3:
			e.Current = true
		case 2:
			e.NQN = cString(r[256:512])
		}
		entries = append(entries, e)
	}
	return gen, entries, true
}

// cString reads a NUL- or space-padded ASCII field.
func cString(b []byte) string {
	n := len(b)
	for i, c := range b {
		if c == 0 {
			n = i
			break
		}
	}
	for n > 0 && b[n-1] == ' ' {
		n--
	}
	return string(b[:n])
}

// sortEntries sorts entries and drops duplicates.
func sortEntries(es []Entry) []Entry {
	slices.SortFunc(es, Entry.Compare)
	return slices.CompactFunc(es, func(a, b Entry) bool { return a.Compare(b) == 0 })
}

// Identity is what Identify Controller reports besides the fixed
// capabilities.
type Identity struct {
	Serial   string // SN, at most 20 bytes
	Model    string // MN, at most 40 bytes
	Firmware string // FR, at most 8 bytes
}

// Values this controller reports.
const (
	dctypeCDC  = 2          // Identify DCTYPE: centralized discovery controller
	versionVS  = 0x00010300 // NVMe 1.3
	maxCommand = 128        // MAXCMD
	aerLimit   = 4          // outstanding Asynchronous Event Requests
	mqes       = 127        // CAP.MQES: 128 entries, 0's based
	// capValue: MQES, CQR (contiguous queues required), TO 15 (7.5 s), CSS
	// NVM (bit 37) and I/O command sets (bit 43), MPSMIN = MPSMAX = 4 KiB.
	capValue = mqes | 1<<16 | 15<<24 | 1<<37 | 1<<43
)

// identifyController returns the Identify Controller data structure of a
// discovery controller (CNS 1).
func identifyController(id Identity, cntlid uint16, cdc bool) []byte {
	b := make([]byte, identifyLen)
	ascii := func(off, n int, s string) {
		for i := range n {
			b[off+i] = ' '
		}
		copy(b[off:off+n], s)
	}
	ascii(4, 20, id.Serial)
	ascii(24, 40, id.Model)
	ascii(64, 8, id.Firmware)
	// MDTS (77) 0: no limit.
	binary.LittleEndian.PutUint16(b[78:], cntlid)
	binary.LittleEndian.PutUint32(b[80:], versionVS)
	binary.LittleEndian.PutUint32(b[92:], aecDiscoveryChange) // OAES
	b[111] = 2                                                // CNTRLTYPE: discovery controller
	b[258] = 3                                                // ACL, 0's based
	b[259] = aerLimit - 1                                     // AERL, 0's based
	b[261] = 1 << 2                                           // LPA: extended data (offsets) for Get Log Page
	binary.LittleEndian.PutUint16(b[320:], 10)                // KAS: 100 ms units
	b[512], b[513] = 0x66, 0x44                               // SQES, CQES
	binary.LittleEndian.PutUint16(b[514:], maxCommand)
	binary.LittleEndian.PutUint32(b[536:], 1|1<<20)    // SGLS: SGLs; offsets in the capsule
	copy(b[768:1024], DiscoveryNQN)                    // SUBNQN
	binary.LittleEndian.PutUint32(b[1792:], sqeLen/16) // IOCCSZ
	binary.LittleEndian.PutUint32(b[1796:], cqeLen/16) // IORCSZ
	// ICDOFF (1800) 0; FCATT (1802) 0: dynamic controller model.
	b[1803] = 1 // MSDBD
	if cdc {
		// DCTYPE: a centralized discovery controller (TP 8010): hosts
		// register with it (DIM); libnvme registers only with a DDC or
		// a CDC.
		b[1806] = dctypeCDC
	}
	return b
}
