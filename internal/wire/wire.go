// Package wire holds the byte-level helpers the record codecs of bgp and
// zones share: the family-tagged address encoding and a big-endian reader
// that remembers its first short read. It knows nothing of records.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// ErrTruncated reports a read past the end of the input.
var ErrTruncated = errors.New("truncated")

// AppendAddr appends a as family(1: 4|6) followed by 4 or 16 address bytes.
func AppendAddr(b []byte, a netip.Addr) []byte {
	if a.Is4() {
		a4 := a.As4()
		return append(append(b, 4), a4[:]...)
	}
	a16 := a.As16()
	return append(append(b, 6), a16[:]...)
}

// AddrLen is the encoded size of a: 5 for IPv4, 17 for IPv6.
func AddrLen(a netip.Addr) int {
	if a.Is4() {
		return 5
	}
	return 17
}

// Reader reads big-endian fields. After the first error every read returns
// zero values and Err reports that first error.
type Reader struct {
	b   []byte
	err error
}

// NewReader returns a reader over b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err returns the first error met, or nil.
func (r *Reader) Err() error { return r.err }

// Len is the number of unread bytes.
func (r *Reader) Len() int { return len(r.b) }

// Bytes returns the next n bytes (aliasing the input), or nil after an error.
func (r *Reader) Bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = fmt.Errorf("%w: need %d bytes, have %d", ErrTruncated, n, len(r.b))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// U8 reads one byte.
func (r *Reader) U8() uint8 {
	if v := r.Bytes(1); v != nil {
		return v[0]
	}
	return 0
}

// U16 reads a big-endian uint16.
func (r *Reader) U16() uint16 {
	if v := r.Bytes(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

// U32 reads a big-endian uint32.
func (r *Reader) U32() uint32 {
	if v := r.Bytes(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

// U64 reads a big-endian uint64.
func (r *Reader) U64() uint64 {
	if v := r.Bytes(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// Str reads a string prefixed by a one-byte length.
func (r *Reader) Str() string { return string(r.Bytes(int(r.U8()))) }

// Addr reads an address in the AppendAddr encoding.
func (r *Reader) Addr() netip.Addr { return r.AddrOf(r.U8()) }

// AddrOf reads the bytes of an address of the given family (4 or 6), for
// encodings that share one family byte between several addresses.
func (r *Reader) AddrOf(family byte) netip.Addr {
	switch family {
	case 4:
		if v := r.Bytes(4); v != nil {
			return netip.AddrFrom4([4]byte(v))
		}
	case 6:
		if v := r.Bytes(16); v != nil {
			return netip.AddrFrom16([16]byte(v))
		}
	default:
		if r.err == nil {
			r.err = fmt.Errorf("address family %d", family)
		}
	}
	return netip.Addr{}
}

// Done returns the first error, or an error if bytes are left over.
func (r *Reader) Done() error {
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%d trailing bytes", len(r.b))
	}
	return nil
}
