package discovery

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// DiscoveryNQN is the well-known NQN of every discovery subsystem.
const DiscoveryNQN = "nqn.2014-08.org.nvmexpress.discovery"

// Admin and fabrics opcodes this controller knows.
const (
	opGetLogPage   = 0x02
	opIdentify     = 0x06
	opSetFeatures  = 0x09
	opGetFeatures  = 0x0a
	opAsyncEvent   = 0x0c
	opKeepAlive    = 0x18
	opFabrics      = 0x7f
	fcPropertySet  = 0x00
	fcConnect      = 0x01
	fcPropertyGet  = 0x04
	cnsController  = 0x01
	cnsCSCtrl      = 0x06 // I/O command set specific controller (old hosts ask)
	lidDiscovery   = 0x70
	fidAsyncConfig = 0x0b
	fidKeepAlive   = 0x0f
)

// Controller properties (fabrics Property Get/Set offsets).
const (
	propCAP  = 0x00
	propVS   = 0x08
	propCC   = 0x14
	propCSTS = 0x1c
)

// SGL descriptor types (identifier byte: type << 4 | subtype).
const (
	sglDataOffset    = 0x01 // data block, address is an offset in the capsule
	sglTransportData = 0x5a // transport SGL data block: data moves in C2HData/R2T
)

// AENDiscoveryChange is the completion dword 0 of an Asynchronous Event
// Request that reports a discovery log change: log page 0x70, notice type
// 2, information 0xf0.
const AENDiscoveryChange = 0x0070f002

// aecDiscoveryChange is the async event configuration bit (Set Features
// 0x0B) and the OAES bit of the discovery log change notice.
const aecDiscoveryChange = 1 << 31

// SQE is a 64-byte NVMe submission queue entry, little endian.
type SQE [sqeLen]byte

// Opcode is byte 0.
func (s *SQE) Opcode() uint8 { return s[0] }

// CID is the command identifier.
func (s *SQE) CID() uint16 { return binary.LittleEndian.Uint16(s[2:4]) }

// FCType is a fabrics command's type (byte 4).
func (s *SQE) FCType() uint8 { return s[4] }

// DW returns command dword n (0..15).
func (s *SQE) DW(n int) uint32 { return binary.LittleEndian.Uint32(s[n*4:]) }

// SGL returns the data pointer as an SGL descriptor.
func (s *SQE) SGL() SGL {
	return SGL{Addr: binary.LittleEndian.Uint64(s[24:32]), Length: binary.LittleEndian.Uint32(s[32:36]), Type: s[39]}
}

// SetHeader sets opcode and command identifier, with the SGL flag fabrics
// commands need (PSDT 01b).
func (s *SQE) SetHeader(op uint8, cid uint16) {
	s[0], s[1] = op, 0x40
	binary.LittleEndian.PutUint16(s[2:4], cid)
}

// SetDW sets command dword n.
func (s *SQE) SetDW(n int, v uint32) { binary.LittleEndian.PutUint32(s[n*4:], v) }

// SetSGL sets the data pointer.
func (s *SQE) SetSGL(g SGL) {
	binary.LittleEndian.PutUint64(s[24:32], g.Addr)
	binary.LittleEndian.PutUint32(s[32:36], g.Length)
	s[36], s[37], s[38], s[39] = 0, 0, 0, g.Type
}

// SGL is an SGL descriptor in a command's data pointer.
type SGL struct {
	Addr   uint64
	Length uint32
	Type   uint8
}

// Status is an NVMe completion status without the phase bit: DNR (0x4000),
// status code type (bits 10:8) and status code (bits 7:0).
type Status uint16

// Completion statuses this controller returns.
const (
	StatusSuccess             Status = 0x000
	StatusInvalidOpcode       Status = 0x001
	StatusInvalidField        Status = 0x002
	StatusInternal            Status = 0x006
	StatusCommandSequence     Status = 0x00c
	StatusSGLLengthInvalid    Status = 0x00f
	StatusSGLTypeInvalid      Status = 0x011
	StatusTransientTransport  Status = 0x022
	StatusAERLimit            Status = 0x105
	StatusFeatureNotSaveable  Status = 0x10d
	StatusConnectFormat       Status = 0x180
	StatusConnectInvalidParam Status = 0x182
	StatusDNR                 Status = 0x4000
)

// Code is the status without DNR.
func (s Status) Code() Status { return s &^ StatusDNR }

// String names the status.
func (s Status) String() string {
	name := ""
	switch s.Code() {
	case StatusSuccess:
		name = "success"
	case StatusInvalidOpcode:
		name = "invalid opcode"
	case StatusInvalidField:
		name = "invalid field"
	case StatusInternal:
		name = "internal error"
	case StatusCommandSequence:
		name = "command sequence error"
	case StatusSGLLengthInvalid:
		name = "data SGL length invalid"
	case StatusSGLTypeInvalid:
		name = "SGL descriptor type invalid"
	case StatusTransientTransport:
		name = "transient transport error"
	case StatusAERLimit:
		name = "async event request limit exceeded"
	case StatusFeatureNotSaveable:
		name = "feature not saveable"
	case StatusConnectFormat:
		name = "connect incompatible format"
	case StatusConnectInvalidParam:
		name = "connect invalid parameters"
	default:
		name = fmt.Sprintf("status %#03x", uint16(s.Code()))
	}
	if s&StatusDNR != 0 {
		name += " (dnr)"
	}
	return name
}

// CQE is a 16-byte completion queue entry.
type CQE struct {
	Result uint64 // dwords 0 and 1
	SQHead uint16
	SQID   uint16
	CID    uint16
	Status Status
}

func (c *CQE) encode(b []byte) {
	binary.LittleEndian.PutUint64(b[0:8], c.Result)
	binary.LittleEndian.PutUint16(b[8:10], c.SQHead)
	binary.LittleEndian.PutUint16(b[10:12], c.SQID)
	binary.LittleEndian.PutUint16(b[12:14], c.CID)
	binary.LittleEndian.PutUint16(b[14:16], uint16(c.Status)<<1)
}

func (c *CQE) decode(b []byte) {
	c.Result = binary.LittleEndian.Uint64(b[0:8])
	c.SQHead = binary.LittleEndian.Uint16(b[8:10])
	c.SQID = binary.LittleEndian.Uint16(b[10:12])
	c.CID = binary.LittleEndian.Uint16(b[12:14])
	c.Status = Status(binary.LittleEndian.Uint16(b[14:16]) >> 1)
}

// Connect data (fabrics Connect, 1024 bytes of in-capsule data).
const (
	connectDataLen     = 1024
	connectCntlidOff   = 16
	connectSubNQNOff   = 256
	connectHostNQNOff  = 512
	nqnFieldLen        = 256
	maxNQNLen          = 223
	connectQIDOff      = 42 // in the SQE
	connectSQSizeOff   = 44
	connectRecfmtOff   = 40
	connectKATOOff     = 48
	iattrConnectData   = 1 << 16 // connect invalid parameters: the offset is in the data
	dynamicController  = 0xffff
	discoveryAdminSize = 32
)

// ConnectData is what a fabrics Connect carries in its capsule.
type ConnectData struct {
	HostID  [16]byte
	CntlID  uint16
	SubNQN  string
	HostNQN string
}

// Marshal returns the 1024-byte wire form.
func (d *ConnectData) Marshal() []byte {
	b := make([]byte, connectDataLen)
	copy(b[0:16], d.HostID[:])
	binary.LittleEndian.PutUint16(b[connectCntlidOff:], d.CntlID)
	copy(b[connectSubNQNOff:connectSubNQNOff+nqnFieldLen], d.SubNQN)
	copy(b[connectHostNQNOff:connectHostNQNOff+nqnFieldLen], d.HostNQN)
	return b
}

// parseConnectData reads the connect data; bad reports the byte offset of
// the first invalid field (or -1).
func parseConnectData(b []byte) (d ConnectData, bad int) {
	if len(b) < connectDataLen {
		return d, 0
	}
	copy(d.HostID[:], b[0:16])
	d.CntlID = binary.LittleEndian.Uint16(b[connectCntlidOff:])
	var ok bool
	if d.SubNQN, ok = nqnField(b[connectSubNQNOff : connectSubNQNOff+nqnFieldLen]); !ok {
		return d, connectSubNQNOff
	}
	if d.HostNQN, ok = nqnField(b[connectHostNQNOff : connectHostNQNOff+nqnFieldLen]); !ok {
		return d, connectHostNQNOff
	}
	return d, -1
}

// nqnField reads a NUL-terminated NQN that nqnOK accepts.
func nqnField(b []byte) (string, bool) {
	n := bytes.IndexByte(b, 0)
	if n < 0 {
		n = len(b)
	}
	if !nqnOK(b[:n]) {
		return "", false
	}
	return string(b[:n]), true
}

// nqnOK reports whether b is an NQN this controller takes from a host or
// puts in a log page: 1..223 bytes of printable ASCII without blanks and
// without the bytes that separate options where the NQN is handed on to
// the kernel's /dev/nvme-fabrics ("," and "=") or quoted (`\`, '"', '\”).
// It is the ASCII subset of inof.ValidateWireNQN (this package imports
// nothing of the module).
func nqnOK[T string | []byte](b T) bool {
	if len(b) == 0 || len(b) > maxNQNLen {
		return false
	}
	for i := range len(b) {
		switch c := b[i]; {
		case c <= 0x20 || c > 0x7e:
			return false
		case c == ',' || c == '=' || c == '\\' || c == '"' || c == '\'':
			return false
		}
	}
	return true
}
