package discovery

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// PDUType is the type byte of an NVMe/TCP PDU's common header.
type PDUType uint8

// NVMe/TCP PDU types (NVMe/TCP transport specification, PDU types table).
const (
	TypeICReq       PDUType = 0x00
	TypeICResp      PDUType = 0x01
	TypeH2CTermReq  PDUType = 0x02
	TypeC2HTermReq  PDUType = 0x03
	TypeCapsuleCmd  PDUType = 0x04
	TypeCapsuleResp PDUType = 0x05
	TypeH2CData     PDUType = 0x06
	TypeC2HData     PDUType = 0x07
	TypeR2T         PDUType = 0x09
)

// String names the PDU type.
func (t PDUType) String() string {
	switch t {
	case TypeICReq:
		return "ICReq"
	case TypeICResp:
		return "ICResp"
	case TypeH2CTermReq:
		return "H2CTermReq"
	case TypeC2HTermReq:
		return "C2HTermReq"
	case TypeCapsuleCmd:
		return "CapsuleCmd"
	case TypeCapsuleResp:
		return "CapsuleResp"
	case TypeH2CData:
		return "H2CData"
	case TypeC2HData:
		return "C2HData"
	case TypeR2T:
		return "R2T"
	}
	return fmt.Sprintf("pdu(%#02x)", uint8(t))
}

// Common header flags.
const (
	flagHDGST   = 0x01 // a header digest follows the PDU header
	flagDDGST   = 0x02 // a data digest follows the PDU data
	flagLast    = 0x04 // last data PDU of a transfer (H2CData, C2HData)
	flagSuccess = 0x08 // C2HData: the command succeeded, no CapsuleResp follows
)

// Sizes of the fixed parts.
const (
	commonHeaderLen = 8
	digestLen       = 4
	icLen           = 128 // ICReq and ICResp, hlen = plen
	sqeLen          = 64
	cqeLen          = 16
	cmdHeaderLen    = commonHeaderLen + sqeLen // CapsuleCmd hlen
	respHeaderLen   = commonHeaderLen + cqeLen // CapsuleResp hlen
	dataHeaderLen   = 24                       // H2CData, C2HData, R2T
	termHeaderLen   = 24                       // H2CTermReq, C2HTermReq
	// maxTermData is the most of an offending PDU header a TermReq carries.
	maxTermData = 152
)

// headerLen returns the hlen a PDU type must carry, false for types this
// codec does not know.
func headerLen(t PDUType) (int, bool) {
	switch t {
	case TypeICReq, TypeICResp:
		return icLen, true
	case TypeH2CTermReq, TypeC2HTermReq:
		return termHeaderLen, true
	case TypeCapsuleCmd:
		return cmdHeaderLen, true
	case TypeCapsuleResp:
		return respHeaderLen, true
	case TypeH2CData, TypeC2HData, TypeR2T:
		return dataHeaderLen, true
	}
	return 0, false
}

// digested reports whether PDUs of type t carry the negotiated header
// digest (every type but the connection setup and termination PDUs).
func digested(t PDUType) bool {
	switch t {
	case TypeICReq, TypeICResp, TypeH2CTermReq, TypeC2HTermReq:
		return false
	}
	return true
}

// carriesData reports whether PDUs of type t may carry data covered by the
// data digest.
func carriesData(t PDUType) bool {
	return t == TypeCapsuleCmd || t == TypeH2CData || t == TypeC2HData
}

// FES is a fatal error status of a TermReq PDU.
type FES uint16

// Fatal error statuses (NVMe/TCP, H2CTermReq/C2HTermReq).
const (
	FESInvalidHeader  FES = 0x01 // invalid PDU header field (FEI: its byte offset)
	FESSequence       FES = 0x02 // PDU sequence error
	FESHeaderDigest   FES = 0x03 // header digest error
	FESDataRange      FES = 0x04 // data transfer out of range
	FESDataLimit      FES = 0x05 // data transfer limit exceeded
	FESUnsupportedPar FES = 0x06 // unsupported parameter (FEI: its byte offset)
)

// ProtocolError is a fatal transport error: the receiver ends the connection
// with a TermReq carrying FES and FEI.
type ProtocolError struct {
	FES    FES
	FEI    uint32 // field error information (byte offset of the bad field)
	Reason string
}

// Error implements error.
func (e *ProtocolError) Error() string {
	return fmt.Sprintf("nvme/tcp: %s (fes %d, fei %d)", e.Reason, e.FES, e.FEI)
}

func protoErr(fes FES, fei uint32, format string, a ...any) error {
	return &ProtocolError{FES: fes, FEI: fei, Reason: fmt.Sprintf(format, a...)}
}

// DataDigestError reports a command capsule whose data digest is wrong: the
// command must complete with a transient transport error, the connection
// stays up.
type DataDigestError struct{ CID uint16 }

// Error implements error.
func (e *DataDigestError) Error() string {
	return fmt.Sprintf("nvme/tcp: data digest error in command %d", e.CID)
}

// ErrPDUTooLong reports a PDU longer than the receiver accepts.
var ErrPDUTooLong = errors.New("nvme/tcp: PDU longer than allowed")

// Framing is what the connection negotiated: the digests every PDU after
// the ICReq/ICResp exchange carries, and the alignment of the data in the
// PDUs this side sends (the peer's PDA: (pda+1)*4 bytes).
type Framing struct {
	HeaderDigest bool
	DataDigest   bool
	DataAlign    int // 0 means 4 (no padding beyond the header)
}

// PDU is one NVMe/TCP PDU: *ICReq, *ICResp, *TermReq, *CapsuleCmd,
// *CapsuleResp, *H2CData or *C2HData.
type PDU interface {
	// PDUType is the type the PDU has on the wire.
	PDUType() PDUType
}

// ICReq opens a connection (host to controller).
type ICReq struct {
	PFV    uint16 // PDU format version, 0
	HPDA   uint8  // host PDU data alignment: (HPDA+1)*4 bytes
	HDGST  bool   // host asks for header digests
	DDGST  bool   // host asks for data digests
	MaxR2T uint32 // 0's based outstanding R2Ts per command
}

// ICResp answers an ICReq (controller to host).
type ICResp struct {
	PFV        uint16
	CPDA       uint8 // controller PDU data alignment
	HDGST      bool  // header digests enabled
	DDGST      bool  // data digests enabled
	MaxH2CData uint32
}

// TermReq ends a connection after a fatal transport error; FromHost
// selects H2CTermReq over C2HTermReq.
type TermReq struct {
	FromHost bool
	FES      FES
	FEI      uint32
	Header   []byte // the offending PDU header (at most 152 bytes)
}

// CapsuleCmd carries a submission queue entry and its in-capsule data.
type CapsuleCmd struct {
	SQE  SQE
	Data []byte
}

// CapsuleResp carries a completion queue entry.
type CapsuleResp struct{ CQE CQE }

// C2HData carries data of a command from controller to host.
type C2HData struct {
	CID     uint16
	Offset  uint32 // of this PDU's data in the command's buffer
	Last    bool
	Success bool // the command completed: no CapsuleResp follows
	Data    []byte
}

// H2CData carries data of a command from host to controller (after an
// R2T; this controller never sends R2T, so it only decodes them to refuse
// them).
type H2CData struct {
	CID    uint16
	TTag   uint16
	Offset uint32
	Last   bool
	Data   []byte
}

// PDUType implements PDU.
func (*ICReq) PDUType() PDUType { return TypeICReq }

// PDUType implements PDU.
func (*ICResp) PDUType() PDUType { return TypeICResp }

// PDUType implements PDU.
func (t *TermReq) PDUType() PDUType {
	if t.FromHost {
		return TypeH2CTermReq
	}
	return TypeC2HTermReq
}

// PDUType implements PDU.
func (*CapsuleCmd) PDUType() PDUType { return TypeCapsuleCmd }

// PDUType implements PDU.
func (*CapsuleResp) PDUType() PDUType { return TypeCapsuleResp }

// PDUType implements PDU.
func (*C2HData) PDUType() PDUType { return TypeC2HData }

// PDUType implements PDU.
func (*H2CData) PDUType() PDUType { return TypeH2CData }

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Decode parses one whole PDU (exactly plen bytes) under the negotiated
// framing. A malformed PDU gives a *ProtocolError naming the field; a
// command capsule whose data digest is wrong gives a *DataDigestError. The
// PDU's data aliases b.
func Decode(b []byte, f Framing) (PDU, error) {
	if len(b) < commonHeaderLen {
		return nil, protoErr(FESInvalidHeader, 4, "PDU of %d bytes is shorter than its common header", len(b))
	}
	t, flags, hlen, pdo := PDUType(b[0]), b[1], int(b[2]), int(b[3])
	plen := binary.LittleEndian.Uint32(b[4:8])
	if uint64(plen) != uint64(len(b)) {
		return nil, protoErr(FESInvalidHeader, 4, "plen %d but %d bytes", plen, len(b))
	}
	want, ok := headerLen(t)
	if !ok {
		return nil, protoErr(FESInvalidHeader, 0, "unknown PDU type %#02x", uint8(t))
	}
	if hlen != want {
		return nil, protoErr(FESInvalidHeader, 2, "%s with hlen %d, want %d", t, hlen, want)
	}
	hdgst := f.HeaderDigest && digested(t)
	if (flags&flagHDGST != 0) != hdgst {
		return nil, protoErr(FESInvalidHeader, 1, "%s: header digest flag %t, negotiated %t", t, flags&flagHDGST != 0, hdgst)
	}
	end := hlen
	if hdgst {
		end += digestLen
	}
	if len(b) < end {
		return nil, protoErr(FESInvalidHeader, 4, "%s of %d bytes is shorter than its header (%d)", t, len(b), end)
	}
	if hdgst {
		if got, sum := binary.LittleEndian.Uint32(b[hlen:end]), crc32.Checksum(b[:hlen], crcTable); got != sum {
			return nil, protoErr(FESHeaderDigest, 0, "%s: header digest %#08x, computed %#08x", t, got, sum)
		}
	}
	var data []byte
	ddgstErr := false
	switch {
	case t == TypeH2CTermReq || t == TypeC2HTermReq:
		data = b[hlen:]
		if len(data) > maxTermData {
			return nil, protoErr(FESInvalidHeader, 4, "%s carries %d bytes, at most %d", t, len(data), maxTermData)
		}
	case len(b) > end:
		if !carriesData(t) {
			return nil, protoErr(FESInvalidHeader, 4, "%s carries %d bytes after its header", t, len(b)-end)
		}
		if pdo < end || pdo > len(b) {
			return nil, protoErr(FESInvalidHeader, 3, "%s: pdo %d outside %d..%d", t, pdo, end, len(b))
		}
		ddgst := f.DataDigest
		if (flags&flagDDGST != 0) != ddgst {
			return nil, protoErr(FESInvalidHeader, 1, "%s: data digest flag %t, negotiated %t", t, flags&flagDDGST != 0, ddgst)
		}
		stop := len(b)
		if ddgst {
			stop -= digestLen
			if stop < pdo {
				return nil, protoErr(FESInvalidHeader, 4, "%s: no room for the data digest", t)
			}
			if binary.LittleEndian.Uint32(b[stop:]) != crc32.Checksum(b[pdo:stop], crcTable) {
				ddgstErr = true
			}
		}
		data = b[pdo:stop]
	default:
		if flags&flagDDGST != 0 {
			return nil, protoErr(FESInvalidHeader, 1, "%s: data digest flag without data", t)
		}
	}
	h := b[commonHeaderLen:hlen]
	switch t {
	case TypeICReq, TypeICResp:
		if flags != 0 || pdo != 0 {
			return nil, protoErr(FESInvalidHeader, 1, "%s with flags %#x pdo %d", t, flags, pdo)
		}
		pfv, pda, dg, max := binary.LittleEndian.Uint16(h[0:2]), h[2], h[3], binary.LittleEndian.Uint32(h[4:8])
		if t == TypeICReq {
			return &ICReq{PFV: pfv, HPDA: pda, HDGST: dg&1 != 0, DDGST: dg&2 != 0, MaxR2T: max}, nil
		}
		return &ICResp{PFV: pfv, CPDA: pda, HDGST: dg&1 != 0, DDGST: dg&2 != 0, MaxH2CData: max}, nil
	case TypeH2CTermReq, TypeC2HTermReq:
		return &TermReq{FromHost: t == TypeH2CTermReq, FES: FES(binary.LittleEndian.Uint16(h[0:2])),
			FEI: binary.LittleEndian.Uint32(h[2:6]), Header: data}, nil
	case TypeCapsuleCmd:
		c := &CapsuleCmd{Data: data}
		copy(c.SQE[:], h)
		if ddgstErr {
			return c, &DataDigestError{CID: c.SQE.CID()}
		}
		return c, nil
	case TypeCapsuleResp:
		var r CapsuleResp
		r.CQE.decode(h)
		return &r, nil
	case TypeC2HData, TypeH2CData:
		if ddgstErr {
			return nil, protoErr(FESInvalidHeader, 0, "%s: data digest error", t)
		}
		cid, ttag := binary.LittleEndian.Uint16(h[0:2]), binary.LittleEndian.Uint16(h[2:4])
		off, dl := binary.LittleEndian.Uint32(h[4:8]), binary.LittleEndian.Uint32(h[8:12])
		if uint64(dl) != uint64(len(data)) {
			return nil, protoErr(FESInvalidHeader, 16, "%s: datal %d but %d bytes of data", t, dl, len(data))
		}
		if t == TypeC2HData {
			if flags&flagSuccess != 0 && flags&flagLast == 0 {
				return nil, protoErr(FESInvalidHeader, 1, "C2HData with SUCCESS but not LAST")
			}
			return &C2HData{CID: cid, Offset: off, Last: flags&flagLast != 0, Success: flags&flagSuccess != 0, Data: data}, nil
		}
		return &H2CData{CID: cid, TTag: ttag, Offset: off, Last: flags&flagLast != 0, Data: data}, nil
	}
	return nil, protoErr(FESInvalidHeader, 0, "%s is not handled", t)
}

// Encode returns the wire form of p under the negotiated framing (digests
// for every PDU but ICReq/ICResp/TermReq; data placed at the alignment).
func Encode(p PDU, f Framing) []byte {
	t := p.PDUType()
	hlen, _ := headerLen(t)
	h := make([]byte, hlen)
	h[0], h[2] = byte(t), byte(hlen)
	var data []byte
	var flags byte
	switch p := p.(type) {
	case *ICReq:
		binary.LittleEndian.PutUint16(h[8:], p.PFV)
		h[10], h[11] = p.HPDA, digestBits(p.HDGST, p.DDGST)
		binary.LittleEndian.PutUint32(h[12:], p.MaxR2T)
	case *ICResp:
		binary.LittleEndian.PutUint16(h[8:], p.PFV)
		h[10], h[11] = p.CPDA, digestBits(p.HDGST, p.DDGST)
		binary.LittleEndian.PutUint32(h[12:], p.MaxH2CData)
	case *TermReq:
		binary.LittleEndian.PutUint16(h[8:], uint16(p.FES))
		binary.LittleEndian.PutUint32(h[10:], p.FEI)
		data = p.Header
		if len(data) > maxTermData {
			data = data[:maxTermData]
		}
		out := append(h, data...)
		binary.LittleEndian.PutUint32(out[4:], uint32(len(out)))
		return out
	case *CapsuleCmd:
		copy(h[8:], p.SQE[:])
		data = p.Data
	case *CapsuleResp:
		p.CQE.encode(h[8:])
	case *C2HData:
		binary.LittleEndian.PutUint16(h[8:], p.CID)
		binary.LittleEndian.PutUint32(h[12:], p.Offset)
		binary.LittleEndian.PutUint32(h[16:], uint32(len(p.Data)))
		data = p.Data
		if p.Last {
			flags |= flagLast
		}
		if p.Success {
			flags |= flagSuccess
		}
	case *H2CData:
		binary.LittleEndian.PutUint16(h[8:], p.CID)
		binary.LittleEndian.PutUint16(h[10:], p.TTag)
		binary.LittleEndian.PutUint32(h[12:], p.Offset)
		binary.LittleEndian.PutUint32(h[16:], uint32(len(p.Data)))
		data = p.Data
		if p.Last {
			flags |= flagLast
		}
	}
	hdgst := f.HeaderDigest && digested(t)
	ddgst := f.DataDigest && len(data) > 0
	if hdgst {
		flags |= flagHDGST
	}
	if ddgst {
		flags |= flagDDGST
	}
	h[1] = flags
	end := hlen
	if hdgst {
		end += digestLen
	}
	pdo := 0
	if len(data) > 0 {
		align := max(f.DataAlign, 4)
		pdo = (end + align - 1) / align * align
		if pdo > 255 {
			pdo = end // cannot be expressed; peers never ask for it
		}
	}
	h[3] = byte(pdo)
	out := make([]byte, 0, pdo+len(data)+digestLen*2)
	out = append(out, h...)
	if hdgst {
		out = append(out, 0, 0, 0, 0) // set below, once plen is known
	}
	if len(data) > 0 {
		out = append(out, make([]byte, pdo-len(out))...)
		out = append(out, data...)
		if ddgst {
			out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(data, crcTable))
		}
	}
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)))
	if hdgst {
		binary.LittleEndian.PutUint32(out[hlen:], crc32.Checksum(out[:hlen], crcTable))
	}
	return out
}

func digestBits(h, d bool) byte {
	var b byte
	if h {
		b |= 1
	}
	if d {
		b |= 2
	}
	return b
}

// ReadPDU reads one PDU from r: the common header, then the rest up to plen,
// refusing a plen below the header or above max. It returns the PDU and its
// raw bytes (for a TermReq that quotes it); on a decode error the raw bytes
// are still returned when they were read.
func ReadPDU(r io.Reader, f Framing, max int) (PDU, []byte, error) {
	var ch [commonHeaderLen]byte
	if _, err := io.ReadFull(r, ch[:]); err != nil {
		return nil, nil, err
	}
	plen := binary.LittleEndian.Uint32(ch[4:8])
	if plen < commonHeaderLen {
		return nil, ch[:], protoErr(FESInvalidHeader, 4, "plen %d is shorter than the common header", plen)
	}
	if uint64(plen) > uint64(max) {
		return nil, ch[:], fmt.Errorf("%w: plen %d, at most %d: %w", ErrPDUTooLong, plen, max,
			&ProtocolError{FES: FESDataLimit, FEI: 4, Reason: "PDU too long"})
	}
	b := make([]byte, plen)
	copy(b, ch[:])
	if _, err := io.ReadFull(r, b[commonHeaderLen:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, b[:commonHeaderLen], err
	}
	p, err := Decode(b, f)
	return p, b, err
}
