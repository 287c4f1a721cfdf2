package bfd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/openinof/inof/internal/reason"
)

// State is a BFD session state (RFC 5880 §4.1).
type State uint8

// Session states.
const (
	AdminDown State = 0
	Down      State = 1
	Init      State = 2
	Up        State = 3
)

// String names the state as the API, the logs and the metrics show it.
func (s State) String() string {
	return [...]string{"admin-down", "down", "init", "up"}[s&3]
}

// Diag is a diagnostic code (RFC 5880 §4.1).
type Diag uint8

// Diagnostic codes.
const (
	DiagNone              Diag = 0
	DiagControlExpired    Diag = 1
	DiagEchoFailed        Diag = 2
	DiagNeighborDown      Diag = 3
	DiagForwardingReset   Diag = 4
	DiagPathDown          Diag = 5
	DiagConcatenatedDown  Diag = 6
	DiagAdminDown         Diag = 7
	DiagReverseConcatDown Diag = 8
)

func (d Diag) String() string {
	names := [...]string{"none", "control-detection-time-expired", "echo-failed", "neighbor-signaled-down",
		"forwarding-plane-reset", "path-down", "concatenated-path-down", "administratively-down",
		"reverse-concatenated-path-down"}
	if int(d) < len(names) {
		return names[d]
	}
	return fmt.Sprintf("diag(%d)", uint8(d))
}

// Packet is a BFD control packet without authentication.
type Packet struct {
	Version        uint8 // always 1 on send
	Diag           Diag
	State          State
	Poll           bool
	Final          bool
	CPIndependent  bool
	AuthPresent    bool
	Demand         bool
	Multipoint     bool
	DetectMult     uint8
	MyDisc         uint32
	YourDisc       uint32
	DesiredMinTx   time.Duration // microsecond resolution on the wire
	RequiredMinRx  time.Duration
	RequiredEchoRx time.Duration
}

// PacketLen is the length of a control packet without authentication.
const PacketLen = 24

// Decode errors; every error from Unmarshal wraps one of them, so drops can
// be counted per reason (DropReason).
var (
	ErrShort      = errors.New("packet too short")
	ErrVersion    = errors.New("version is not 1")
	ErrLength     = errors.New("bad length field")
	ErrDetectMult = errors.New("detect multiplier 0")
	ErrMultipoint = errors.New("multipoint bit set")
	ErrMyDisc     = errors.New("my discriminator 0")
	ErrAuth       = errors.New("authentication not configured")
)

// Marshal encodes p (Version is written as 1).
func (p *Packet) Marshal() []byte {
	b := make([]byte, PacketLen)
	p.marshalTo(b)
	return b
}

// marshalTo encodes p into b, which holds at least PacketLen bytes.
func (p *Packet) marshalTo(b []byte) {
	b[0] = 1<<5 | byte(p.Diag)&0x1F
	b[1] = byte(p.State&3) << 6
	flag := func(on bool, bit byte) {
		if on {
			b[1] |= bit
		}
	}
	flag(p.Poll, 0x20)
	flag(p.Final, 0x10)
	flag(p.CPIndependent, 0x08)
	flag(p.AuthPresent, 0x04)
	flag(p.Demand, 0x02)
	flag(p.Multipoint, 0x01)
	b[2] = p.DetectMult
	b[3] = PacketLen
	binary.BigEndian.PutUint32(b[4:], p.MyDisc)
	binary.BigEndian.PutUint32(b[8:], p.YourDisc)
	binary.BigEndian.PutUint32(b[12:], usec(p.DesiredMinTx))
	binary.BigEndian.PutUint32(b[16:], usec(p.RequiredMinRx))
	binary.BigEndian.PutUint32(b[20:], usec(p.RequiredEchoRx))
}

func usec(d time.Duration) uint32 {
	us := d / time.Microsecond
	if us > 0xFFFFFFFF {
		return 0xFFFFFFFF
	}
	return uint32(us)
}

// Unmarshal decodes and checks a received control packet with the checks
// of RFC 5880 §6.8.6 that need no session: version, length, detect
// multiplier, multipoint, my discriminator, and authentication (which we do
// not configure, so a packet that carries it is dropped).
func (p *Packet) Unmarshal(b []byte) error {
	if len(b) < PacketLen {
		return fmt.Errorf("%w: %d bytes", ErrShort, len(b))
	}
	*p = Packet{
		Version:        b[0] >> 5,
		Diag:           Diag(b[0] & 0x1F),
		State:          State(b[1] >> 6),
		Poll:           b[1]&0x20 != 0,
		Final:          b[1]&0x10 != 0,
		CPIndependent:  b[1]&0x08 != 0,
		AuthPresent:    b[1]&0x04 != 0,
		Demand:         b[1]&0x02 != 0,
		Multipoint:     b[1]&0x01 != 0,
		DetectMult:     b[2],
		MyDisc:         binary.BigEndian.Uint32(b[4:]),
		YourDisc:       binary.BigEndian.Uint32(b[8:]),
		DesiredMinTx:   time.Duration(binary.BigEndian.Uint32(b[12:])) * time.Microsecond,
		RequiredMinRx:  time.Duration(binary.BigEndian.Uint32(b[16:])) * time.Microsecond,
		RequiredEchoRx: time.Duration(binary.BigEndian.Uint32(b[20:])) * time.Microsecond,
	}
	l := int(b[3])
	switch {
	case p.Version != 1:
		return fmt.Errorf("%w: %d", ErrVersion, p.Version)
	case p.AuthPresent && l < PacketLen+2, !p.AuthPresent && l < PacketLen, l > len(b):
		return fmt.Errorf("%w: %d with %d bytes", ErrLength, l, len(b))
	case p.DetectMult == 0:
		return ErrDetectMult
	case p.Multipoint:
		return ErrMultipoint
	case p.MyDisc == 0:
		return ErrMyDisc
	case p.AuthPresent:
		return ErrAuth
	}
	return nil
}

// DropReason maps an error to a counter label.
func DropReason(err error) string { return dropReasons.Of(err) }

var dropReasons = reason.Table{{Err: ErrShort, Name: "short"}, {Err: ErrVersion, Name: "version"}, {Err: ErrLength, Name: "length"},
	{Err: ErrDetectMult, Name: "detect-mult"}, {Err: ErrMultipoint, Name: "multipoint"}, {Err: ErrMyDisc, Name: "my-discriminator"},
	{Err: ErrAuth, Name: "auth"}, {Err: errTTL, Name: "ttl"}, {Err: errYourDisc, Name: "your-discriminator-zero"},
	{Err: errUnknownDisc, Name: "unknown-discriminator"}, {Err: errNoSession, Name: "no-session"}}

// DropReasons lists every label DropReason returns.
func DropReasons() []string { return dropReasons.Names() }

// States lists the session states.
func States() []State { return []State{AdminDown, Down, Init, Up} }

// Receive-path errors that need more than the packet.
var (
	errTTL         = errors.New("TTL is not 255")
	errYourDisc    = errors.New("your discriminator 0 while not Down")
	errUnknownDisc = errors.New("your discriminator matches no session")
	errNoSession   = errors.New("no session for this source")
)
