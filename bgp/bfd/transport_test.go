package bfd

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmsg builds one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

// TestParseControl: the TTL and the destination address come out of the
// control messages recvmmsg returns, in either order and among others;
// truncated or garbled ones give "unknown" (TTL -1, which the receive path
// drops), never a panic.
func TestParseControl(t *testing.T) {
	ttl := binary.NativeEndian.AppendUint32(nil, 255)
	pktinfo := make([]byte, unix.SizeofInet4Pktinfo)
	copy(pktinfo[8:], []byte{10, 88, 0, 1}) // ipi_addr: the header's destination
	copy(pktinfo[4:], []byte{10, 88, 0, 9}) // ipi_spec_dst: not it
	other := cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMP, make([]byte, 16))
	want := netip.MustParseAddr("10.88.0.1")
	for name, b := range map[string][]byte{
		"ttl, pktinfo":        append(cmsg(unix.IPPROTO_IP, unix.IP_TTL, ttl), cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, pktinfo)...),
		"other, pktinfo, ttl": append(append(other, cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, pktinfo)...), cmsg(unix.IPPROTO_IP, unix.IP_TTL, ttl)...),
	} {
		gotTTL, gotDst := parseControl(b)
		if gotTTL != 255 || gotDst != want {
			t.Errorf("%s: TTL %d, dst %s", name, gotTTL, gotDst)
		}
	}
	full := append(cmsg(unix.IPPROTO_IP, unix.IP_TTL, ttl), cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, pktinfo)...)
	for n := range len(full) {
		parseControl(full[:n]) // must not panic
	}
	if got, _ := parseControl(full[:unix.CmsgLen(0)+2]); got != -1 {
		t.Errorf("truncated TTL message: TTL %d, want -1", got)
	}
	bad := append([]byte(nil), full...)
	(*unix.Cmsghdr)(unsafe.Pointer(&bad[0])).SetLen(1 << 20)
	if got, _ := parseControl(bad); got != -1 {
		t.Errorf("length beyond the buffer: TTL %d, want -1", got)
	}
	if got, dst := parseControl(nil); got != -1 || dst.IsValid() {
		t.Errorf("no control messages: TTL %d, dst %s", got, dst)
	}
}
