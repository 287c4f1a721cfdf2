package wire

import (
	"errors"
	"net/netip"
	"testing"
)

func TestAddrRoundTrip(t *testing.T) {
	for _, s := range []string{"10.1.2.3", "fd00::1"} {
		a := netip.MustParseAddr(s)
		b := AppendAddr([]byte{0xff}, a)
		if len(b) != 1+AddrLen(a) {
			t.Fatalf("%s: %d bytes, AddrLen says %d", s, len(b)-1, AddrLen(a))
		}
		r := NewReader(b[1:])
		if got := r.Addr(); got != a || r.Done() != nil {
			t.Fatalf("%s: read %s, done %v", s, got, r.Done())
		}
	}
}

func TestReaderStickyErrors(t *testing.T) {
	r := NewReader([]byte{1, 2, 3})
	if r.U16() != 0x0102 {
		t.Fatal("U16")
	}
	if r.U32() != 0 || !errors.Is(r.Err(), ErrTruncated) {
		t.Fatalf("short read: err %v", r.Err())
	}
	if r.U8() != 0 || r.Str() != "" {
		t.Fatal("reads after an error must return zero values")
	}
	r = NewReader([]byte{9, 1})
	if r.Addr().IsValid() || r.Err() == nil {
		t.Fatal("family 9 accepted")
	}
	r = NewReader([]byte{2, 'h', 'i', 0})
	if r.Str() != "hi" || r.Done() == nil {
		t.Fatal("trailing byte not reported")
	}
}
