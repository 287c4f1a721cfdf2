package discovery

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Discovery Information Management (TP 8010): a host registers itself
// with a discovery controller (admin opcode 0x21). The data is a 1024-byte
// header naming the entity (type host, its NQN, name and version) and
// Discovery Information Entries in the log entry format, basic (1024
// bytes) or extended (plus a length and extended attributes: the host ID,
// a symbolic name), as libnvme's nvmf_dim sends them.

const opDIM = 0x21

// DIM tasks (command dword 10, bits 3:0).
const (
	TaskRegister   = 0
	TaskDeregister = 1
	TaskUpdate     = 2
)

// DIM data layout.
const (
	dimHeaderLen    = 1024
	dimEIDOff       = 24
	dimENameOff     = 280
	dimEVerOff      = 536
	dimENameLen     = 256
	dimEVerLen      = 64
	dimEntfmtBasic  = 1
	dimEntfmtExt    = 2
	dimEtypeHost    = 1
	dimEKType       = 0x5f
	extDIEHeaderLen = 1032 // a log entry, TEL (4), NUMEXAT (2), reserved (2)
	exatHostID      = 1
	exatSymName     = 2
	maxDIMData      = 8 << 10 // what fits in the admin queue's in-capsule data
	uuidLen         = 16
)

// Registration is a host that registered itself (DIM) over one
// connection. Its address is the connection's source address.
type Registration struct {
	HostNQN  string
	HostID   [16]byte
	Addr     netip.Addr
	Name     string // ENAME: the host's name
	Version  string // EVER: its operating system
	Symbolic string // the symbolic name extended attribute
}

// Registrar takes the hosts that register with the controller. Its methods
// are called from connection goroutines and must not block for long.
type Registrar interface {
	// Register announces a registration, new or updated.
	Register(r Registration)
	// Deregister ends one: the host deregistered, or its connection ended
	// (disconnect, keep-alive loss), as why says.
	Deregister(r Registration, why string)
}

// errDIM is a DIM command's data refused (Invalid Field).
var errDIM = errors.New("invalid DIM data")

// parseDIM decodes the DIM data of a host entity with one entry.
func parseDIM(b []byte) (Registration, string, error) {
	var r Registration
	if len(b) < dimHeaderLen {
		return r, "", fmt.Errorf("%w: %d bytes", errDIM, len(b))
	}
	tdl := binary.LittleEndian.Uint32(b[0:4])
	nument := binary.LittleEndian.Uint64(b[8:16])
	entfmt := binary.LittleEndian.Uint16(b[16:18])
	etype := binary.LittleEndian.Uint16(b[18:20])
	switch {
	case uint64(tdl) != uint64(len(b)):
		return r, "", fmt.Errorf("%w: TDL %d, %d bytes sent", errDIM, tdl, len(b))
	case etype != dimEtypeHost:
		return r, "", fmt.Errorf("%w: entity type %d (only hosts register here)", errDIM, etype)
	case nument != 1:
		return r, "", fmt.Errorf("%w: %d entries (a host registers one)", errDIM, nument)
	case entfmt != dimEntfmtBasic && entfmt != dimEntfmtExt:
		return r, "", fmt.Errorf("%w: entry format %d", errDIM, entfmt)
	}
	var ok bool
	if r.HostNQN, ok = nqnField(b[dimEIDOff : dimEIDOff+nqnFieldLen]); !ok {
		return r, "", fmt.Errorf("%w: entity identifier is no NQN", errDIM)
	}
	if r.Name, ok = textField(b[dimENameOff : dimENameOff+dimENameLen]); !ok {
		return r, "", fmt.Errorf("%w: entity name is not printable ASCII", errDIM)
	}
	if r.Version, ok = textField(b[dimEVerOff : dimEVerOff+dimEVerLen]); !ok {
		return r, "", fmt.Errorf("%w: entity version is not printable ASCII", errDIM)
	}
	die := b[dimHeaderLen:]
	want := logEntryLen
	if entfmt == dimEntfmtExt {
		want = extDIEHeaderLen
	}
	if len(die) < want {
		return r, "", fmt.Errorf("%w: entry of %d bytes", errDIM, len(die))
	}
	if Transport(die[0]) != TransportTCP {
		return r, "", fmt.Errorf("%w: transport %d (NVMe/TCP only)", errDIM, die[0])
	}
	traddr, ok := textField(die[512:768])
	if !ok {
		return r, "", fmt.Errorf("%w: transport address is not printable ASCII", errDIM)
	}
	if nqn, ok := nqnField(die[256:512]); ok && nqn != r.HostNQN {
		return r, "", fmt.Errorf("%w: entry NQN %q is not the entity's %q", errDIM, nqn, r.HostNQN)
	}
	if entfmt == dimEntfmtExt {
		tel := binary.LittleEndian.Uint32(die[1024:1028])
		numexat := int(binary.LittleEndian.Uint16(die[1028:1030]))
		if uint64(tel) > uint64(len(die)) || tel < extDIEHeaderLen {
			return r, "", fmt.Errorf("%w: entry length %d", errDIM, tel)
		}
		exats := die[extDIEHeaderLen:tel]
		for range numexat {
			if len(exats) < 4 {
				return r, "", fmt.Errorf("%w: extended attributes past the entry", errDIM)
			}
			typ, n := binary.LittleEndian.Uint16(exats[0:2]), int(binary.LittleEndian.Uint16(exats[2:4]))
			if len(exats) < 4+n {
				return r, "", fmt.Errorf("%w: extended attribute %d of %d bytes past the entry", errDIM, typ, n)
			}
			v := exats[4 : 4+n]
			switch typ {
			case exatHostID:
				if n < uuidLen {
					return r, "", fmt.Errorf("%w: host ID of %d bytes", errDIM, n)
				}
				copy(r.HostID[:], v)
			case exatSymName:
				if r.Symbolic, ok = textField(v); !ok {
					return r, "", fmt.Errorf("%w: symbolic name is not printable ASCII", errDIM)
				}
			}
			exats = exats[4+n:]
		}
	}
	return r, traddr, nil
}

// textField reads a NUL- or space-padded field of printable ASCII
// (spaces allowed); false if it holds anything else before its padding, so
// that a control character or a terminal escape never enters the fabric.
func textField(b []byte) (string, bool) {
	s := cString(b)
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return "", false
		}
	}
	return s, true
}

// MarshalDIM encodes a host's registration as libnvme does: one extended
// entry with the host ID and, if set, the symbolic name. An empty traddr
// lets the controller take the connection's address.
func MarshalDIM(r Registration, traddr string) []byte {
	exat := func(typ uint16, v []byte) []byte {
		n := (len(v) + 3) &^ 3
		b := make([]byte, 4+n)
		binary.LittleEndian.PutUint16(b[0:2], typ)
		binary.LittleEndian.PutUint16(b[2:4], uint16(n))
		copy(b[4:], v)
		for i := 4 + len(v); i < len(b); i++ {
			b[i] = ' '
		}
		return b
	}
	attrs := exat(exatHostID, r.HostID[:])
	numexat := 1
	if r.Symbolic != "" {
		attrs = append(attrs, exat(exatSymName, []byte(r.Symbolic))...)
		numexat++
	}
	tel := extDIEHeaderLen + len(attrs)
	b := make([]byte, dimHeaderLen+tel)
	binary.LittleEndian.PutUint32(b[0:4], uint32(len(b)))
	binary.LittleEndian.PutUint64(b[8:16], 1)
	binary.LittleEndian.PutUint16(b[16:18], dimEntfmtExt)
	binary.LittleEndian.PutUint16(b[18:20], dimEtypeHost)
	binary.LittleEndian.PutUint16(b[22:24], dimEKType)
	copy(b[dimEIDOff:dimEIDOff+nqnFieldLen], r.HostNQN)
	copy(b[dimENameOff:dimENameOff+dimENameLen], r.Name)
	copy(b[dimEVerOff:dimEVerOff+dimEVerLen], r.Version)
	die := b[dimHeaderLen:]
	die[0] = byte(TransportTCP)
	die[1] = 1 // IPv4
	copy(die[256:512], r.HostNQN)
	copy(die[512:768], traddr)
	binary.LittleEndian.PutUint32(die[1024:1028], uint32(tel))
	binary.LittleEndian.PutUint16(die[1028:1030], uint16(numexat))
	copy(die[extDIEHeaderLen:], attrs)
	return b
}

// dim handles a Discovery Information Management command: the host
// registers, updates or deregisters itself. Its registration is bound to
// its connection: its NQN must be the Connect's, its address (if given)
// the connection's source address, and it ends with the connection.
func (c *conn) dim(p *CapsuleCmd) error {
	q := &p.SQE
	cid := q.CID()
	if c.s.reg == nil {
		return c.complete(cid, 0, StatusInvalidOpcode|StatusDNR)
	}
	tas := q.DW(10) & 0xf
	refuse := func(why string, err error) error {
		c.s.met.dims.WithLabelValues("refused").Inc()
		c.s.rl.warn(c.log, "DIM refused", "host_nqn", c.hostNQN, "why", why, "err", err)
		return c.complete(cid, 0, StatusInvalidField|StatusDNR)
	}
	if tas == TaskDeregister {
		if c.registration != nil {
			c.s.reg.Deregister(*c.registration, "deregistered")
			c.log.Info("host deregistered", "host_nqn", c.hostNQN)
			c.registration = nil
		}
		c.s.met.dims.WithLabelValues("deregister").Inc()
		return c.complete(cid, 0, StatusSuccess)
	}
	if tas != TaskRegister && tas != TaskUpdate {
		return refuse(fmt.Sprintf("task %d", tas), nil)
	}
	if c.kato == 0 {
		// TP 8010: a registration lives as long as an explicit persistent
		// connection; without keep-alive its end could go unnoticed.
		c.s.met.dims.WithLabelValues("refused").Inc()
		c.s.rl.warn(c.log, "DIM refused", "host_nqn", c.hostNQN, "why", "connection without keep-alive (KATO 0)")
		return c.complete(cid, 0, StatusCommandSequence|StatusDNR)
	}
	g := q.SGL()
	if g.Length < dimHeaderLen || g.Length > maxDIMData {
		return refuse("data length", fmt.Errorf("%d bytes", g.Length))
	}
	data, st := inCapsuleData(p, int(g.Length))
	if st != StatusSuccess {
		c.s.met.dims.WithLabelValues("refused").Inc()
		return c.complete(cid, 0, st)
	}
	r, traddr, err := parseDIM(data)
	if err != nil {
		return refuse("malformed", err)
	}
	if r.HostNQN != c.hostNQN {
		return refuse("entity NQN is not the connection's host NQN", fmt.Errorf("%s, connected as %s", r.HostNQN, c.hostNQN))
	}
	if traddr != "" {
		if a, err := netip.ParseAddr(traddr); err != nil || a.Unmap() != c.host {
			return refuse("address is not the connection's", fmt.Errorf("%q from %s", traddr, c.host))
		}
	}
	if !c.host.IsValid() {
		return refuse("no source address", nil)
	}
	r.Addr = c.host
	c.registration = &r
	c.s.reg.Register(r)
	c.s.met.dims.WithLabelValues("register").Inc()
	c.log.Info("host registered", "host_nqn", r.HostNQN, "name", r.Name, "version", r.Version, "symbolic", r.Symbolic)
	return c.complete(cid, 0, StatusSuccess)
}
