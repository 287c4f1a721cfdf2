package fabric

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// This file models what nvme-snsd accepts, from the fact sheet
// (shared/spec/snsd-wire.md §5–§6), independently of l2proto's decoder, so
// the notifications our switch sends are judged by the host's rules and not
// by our own codec.

// snsdGroup is the only destination nvme-snsd accepts a notification on.
var snsdGroup = []byte{0x01, 0x80, 0xC2, 0x00, 0x00, 0x0D}

// snsdNotice is one notify root TLV nvme-snsd would accept and ACK.
type snsdNotice struct {
	Version        uint8
	Types          []uint8 // sub-TLV types in frame order
	Target, Host   netip.Addr
	Seq            []byte // raw, echoed in the ACK
	State, Reason  uint32
	Role, Protocol uint8
	Port           uint16
	NQN            string
}

// snsdAccept runs nvme-snsd's receive-side checks (§6, in its order) on
// one frame for a host owning hostIPs, and returns the notify root TLVs it
// would accept. A frame-level failure returns an error and nothing; a root
// TLV that is incomplete is dropped silently by snsd, and reported here as
// an error next to the accepted ones so the test can require that none is
// dropped.
func snsdAccept(frame []byte, hostIPs []netip.Addr) ([]snsdNotice, []error, error) {
	if len(frame) < 22 || len(frame) > 1514 {
		return nil, nil, fmt.Errorf("frame length %d outside 22..1514", len(frame))
	}
	if et := binary.BigEndian.Uint16(frame[12:]); et != 0x88A7 {
		return nil, nil, fmt.Errorf("EtherType %#04x at offset 12, want 0x88a7 (untagged)", et)
	}
	if !bytes.Equal(frame[:6], snsdGroup) {
		return nil, nil, fmt.Errorf("destination %x, want 01:80:c2:00:00:0d", frame[:6])
	}
	ver := frame[14]
	if ver > 1 {
		return nil, nil, fmt.Errorf("header version %d > 1", ver)
	}
	tlvLen := int(binary.BigEndian.Uint16(frame[16:]))
	if tlvLen == 0 || tlvLen > len(frame)-22 {
		return nil, nil, fmt.Errorf("tlv_len %d: zero or beyond the frame (%d bytes)", tlvLen, len(frame))
	}
	var out []snsdNotice
	var dropped []error
	roots := frame[22 : 22+tlvLen]
	for len(roots) >= 3 {
		typ, l := roots[0], int(binary.BigEndian.Uint16(roots[1:]))
		if typ&0x3F != 0x21 || 3+l > len(roots) {
			break // snsd stops parsing at the first root that is no notify
		}
		n, err := snsdRoot(ver, roots[3:3+l], hostIPs)
		if err != nil {
			dropped = append(dropped, err)
		} else {
			out = append(out, n)
		}
		roots = roots[3+l:]
	}
	if len(out) == 0 && len(dropped) == 0 {
		return nil, nil, errors.New("no notify root TLV")
	}
	return out, dropped, nil
}

// snsdRoot decodes one notify root TLV as snsd does: each sub-TLV with the
// length snsd requires sets bit type-1 of a bitmap (others are skipped),
// and only the exact sets 0xF3 (IPv4) and 0xFC (IPv6) are complete.
func snsdRoot(ver uint8, v []byte, hostIPs []netip.Addr) (snsdNotice, error) {
	n := snsdNotice{Version: ver}
	fieldLen := 4
	if ver == 0 {
		fieldLen = 1
	}
	var bits uint8
	for len(v) >= 3 {
		typ, l := v[0], int(binary.BigEndian.Uint16(v[1:]))
		if 3+l > len(v) {
			return n, fmt.Errorf("sub-TLV %d length %d overruns the root", typ, l)
		}
		val := v[3 : 3+l]
		v = v[3+l:]
		n.Types = append(n.Types, typ)
		ok := false
		switch typ {
		case 1, 2:
			if ok = l == 4; ok {
				a := netip.AddrFrom4([4]byte(val))
				if typ == 1 {
					n.Target = a
				} else {
					n.Host = a
				}
			}
		case 3, 4:
			if ok = l == 16; ok {
				a := netip.AddrFrom16([16]byte(val))
				if typ == 3 {
					n.Target = a
				} else {
					n.Host = a
				}
			}
		case 5:
			if ok = l == 4; ok {
				n.Seq = append([]byte(nil), val...)
			}
		case 6, 7:
			if ok = l == fieldLen; ok {
				x := uint32(val[0])
				if fieldLen == 4 {
					x = binary.BigEndian.Uint32(val)
				}
				if typ == 6 {
					n.State = x
				} else {
					n.Reason = x
				}
			}
		case 8:
			if ok = l <= 262; ok {
				var info [262]byte
				copy(info[:], val)
				n.Role, n.Protocol = info[0], info[1]
				n.Port = binary.BigEndian.Uint16(info[4:])
				nqn := info[7:]
				if i := bytes.IndexByte(nqn, 0); i >= 0 {
					nqn = nqn[:i]
				}
				n.NQN = string(nqn)
			}
		}
		if ok && typ >= 1 && typ <= 8 {
			bits |= 1 << (typ - 1)
		}
	}
	if bits != 0xF3 && bits != 0xFC {
		return n, fmt.Errorf("incomplete notification: sub-TLV bitmap %#02x (types %v), want 0xf3 or 0xfc", bits, n.Types)
	}
	found := false
	for _, h := range hostIPs {
		found = found || h == n.Host
	}
	if !found {
		return n, fmt.Errorf("host IP %s is not one of the host's %v", n.Host, hostIPs)
	}
	return n, nil
}

// readPcap returns the frames of a classic little-endian pcap file.
func readPcap(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 24 || binary.LittleEndian.Uint32(b) != 0xa1b2c3d4 || binary.LittleEndian.Uint32(b[20:]) != 1 {
		return nil, fmt.Errorf("%s: not a little-endian Ethernet pcap", path)
	}
	var out [][]byte
	for b = b[24:]; len(b) >= 16; {
		incl := int(binary.LittleEndian.Uint32(b[8:]))
		if len(b) < 16+incl {
			return nil, fmt.Errorf("%s: truncated record", path)
		}
		out = append(out, b[16:16+incl])
		b = b[16+incl:]
	}
	return out, nil
}

// captures is where the repository keeps the nvme-snsd lab captures.
var captures = filepath.Join("..", "..", "l2proto", "testdata", "snsd")

// TestSnsdAcceptModel checks the acceptance model against the lab's
// captures: the notification snsd ACKed passes, and the variants it dropped
// in the lab (unicast destination, no reason TLV, header version 2, 1-byte
// state under version 1) fail, while the version-0 variant it acted on
// passes.
func TestSnsdAcceptModel(t *testing.T) {
	host := []netip.Addr{netip.MustParseAddr("10.77.0.2")}
	active, err := readPcap(filepath.Join(captures, "notify-active.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	var ok int
	for _, fr := range active {
		if fr[12] == 0x88 && fr[13] == 0xA7 && fr[22]&0x3F == 0x21 {
			ns, dropped, err := snsdAccept(fr, host)
			if err != nil || len(dropped) > 0 || len(ns) != 1 || ns[0].State != 1 {
				t.Fatalf("captured active notification: %+v %v %v", ns, dropped, err)
			}
			ok++
		}
	}
	if ok == 0 {
		t.Fatal("no notification in notify-active.pcap")
	}

	variants, err := readPcap(filepath.Join(captures, "notify-variants.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	// The switch's frames, in the order of the lab's variants V1, V2, …
	var sw [][]byte
	for _, fr := range variants {
		if fr[12] == 0x88 && fr[13] == 0xA7 && fr[22]&0x3F == 0x21 {
			sw = append(sw, fr)
		}
	}
	if len(sw) < 6 {
		t.Fatalf("%d notifications in notify-variants.pcap, want at least 6", len(sw))
	}
	for i, want := range []bool{false, false, false, false, false, true} {
		ns, dropped, err := snsdAccept(sw[i], host)
		if got := err == nil && len(dropped) == 0 && len(ns) > 0; got != want {
			t.Errorf("variant V%d accepted %v, want %v (%v %v)", i+1, got, want, err, dropped)
		}
	}
}
