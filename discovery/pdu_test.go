package discovery

import (
	"bytes"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"
)

func samplePDUs() []PDU {
	var q SQE
	q.SetHeader(opFabrics, 7)
	q[4] = fcConnect
	q.SetSGL(SGL{Length: 1024, Type: sglDataOffset})
	d := ConnectData{CntlID: dynamicController, SubNQN: DiscoveryNQN, HostNQN: "nqn.2014-08.org.nvmexpress:uuid:1"}
	return []PDU{
		&ICReq{HPDA: 0, HDGST: true, DDGST: false, MaxR2T: 3},
		&ICResp{CPDA: 0, HDGST: true, DDGST: true, MaxH2CData: maxH2CData},
		&CapsuleCmd{SQE: q, Data: d.Marshal()},
		&CapsuleCmd{SQE: q},
		&CapsuleResp{CQE: CQE{Result: 0x0070f002, SQHead: 3, CID: 9, Status: StatusConnectInvalidParam | StatusDNR}},
		&C2HData{CID: 4, Offset: 4096, Last: true, Data: bytes.Repeat([]byte{0xab}, 100)},
		&C2HData{CID: 4, Offset: 0, Last: true, Success: true, Data: []byte{1, 2, 3, 4}},
		&H2CData{CID: 5, TTag: 2, Offset: 8, Data: []byte{9, 9}},
		&TermReq{FES: FESInvalidHeader, FEI: 2, Header: bytes.Repeat([]byte{1}, 72)},
		&TermReq{FromHost: true, FES: FESHeaderDigest},
	}
}

func framings() []Framing {
	return []Framing{{}, {HeaderDigest: true}, {DataDigest: true}, {HeaderDigest: true, DataDigest: true, DataAlign: 32}}
}

// TestRoundTrip encodes every PDU kind under every framing and decodes it
// back to the same value.
func TestRoundTrip(t *testing.T) {
	for _, f := range framings() {
		for _, p := range samplePDUs() {
			b := Encode(p, f)
			got, err := Decode(b, f)
			if err != nil {
				t.Fatalf("%s under %+v: %v", p.PDUType(), f, err)
			}
			if !reflect.DeepEqual(normalize(got), normalize(p)) {
				t.Fatalf("%s under %+v: got %+v, want %+v", p.PDUType(), f, got, p)
			}
			if f.DataAlign > 4 {
				if c, ok := p.(*C2HData); ok && len(c.Data) > 0 && int(b[3])%f.DataAlign != 0 {
					t.Fatalf("C2HData pdo %d not aligned to %d", b[3], f.DataAlign)
				}
			}
		}
	}
}

// normalize makes empty data nil so that DeepEqual compares contents.
func normalize(p PDU) PDU {
	switch p := p.(type) {
	case *CapsuleCmd:
		c := *p
		if len(c.Data) == 0 {
			c.Data = nil
		}
		return &c
	case *TermReq:
		c := *p
		if len(c.Header) == 0 {
			c.Header = nil
		}
		return &c
	case *C2HData:
		c := *p
		if len(c.Data) == 0 {
			c.Data = nil
		}
		return &c
	case *H2CData:
		c := *p
		if len(c.Data) == 0 {
			c.Data = nil
		}
		return &c
	}
	return p
}

// TestDecodeErrors checks that each malformed field is named.
func TestDecodeErrors(t *testing.T) {
	var q SQE
	q.SetHeader(opIdentify, 1)
	cmd := Encode(&CapsuleCmd{SQE: q}, Framing{})
	withData := Encode(&CapsuleCmd{SQE: q, Data: []byte{1, 2, 3, 4}}, Framing{HeaderDigest: true, DataDigest: true})
	mut := func(b []byte, f func([]byte)) []byte {
		c := bytes.Clone(b)
		f(c)
		return c
	}
	cases := []struct {
		name string
		b    []byte
		f    Framing
		fes  FES
		fei  uint32
	}{
		{"short", []byte{4, 0, 72}, Framing{}, FESInvalidHeader, 4},
		{"plen mismatch", mut(cmd, func(b []byte) { b[4] = 10 }), Framing{}, FESInvalidHeader, 4},
		{"unknown type", mut(cmd, func(b []byte) { b[0] = 0x0c }), Framing{}, FESInvalidHeader, 0},
		{"hlen", mut(cmd, func(b []byte) { b[2] = 70 }), Framing{}, FESInvalidHeader, 2},
		{"hdgst flag not negotiated", mut(cmd, func(b []byte) { b[1] = flagHDGST }), Framing{}, FESInvalidHeader, 1},
		{"hdgst missing", cmd, Framing{HeaderDigest: true}, FESInvalidHeader, 1},
		{"hdgst wrong", mut(withData, func(b []byte) { b[72] ^= 1 }), Framing{HeaderDigest: true, DataDigest: true}, FESHeaderDigest, 0},
		{"pdo inside header", mut(withData, func(b []byte) { b[3] = 10; fixHdgst(b) }), Framing{HeaderDigest: true, DataDigest: true}, FESInvalidHeader, 3},
		{"response carries data", mut(append(Encode(&CapsuleResp{}, Framing{}), 1, 2, 3, 4), func(b []byte) { b[4] = 28 }), Framing{}, FESInvalidHeader, 4},
		{"icreq flags", mut(Encode(&ICReq{}, Framing{}), func(b []byte) { b[1] = 1 }), Framing{}, FESInvalidHeader, 1},
	}
	for _, c := range cases {
		_, err := Decode(c.b, c.f)
		var pe *ProtocolError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: err %v, want a ProtocolError", c.name, err)
		}
		if pe.FES != c.fes || pe.FEI != c.fei {
			t.Errorf("%s: fes %d fei %d, want %d %d (%v)", c.name, pe.FES, pe.FEI, c.fes, c.fei, err)
		}
	}
	// A bad data digest on a command is not fatal: the command is named.
	bad := mut(withData, func(b []byte) { b[len(b)-1] ^= 0xff })
	p, err := Decode(bad, Framing{HeaderDigest: true, DataDigest: true})
	var dd *DataDigestError
	if !errors.As(err, &dd) || dd.CID != 1 || p == nil {
		t.Fatalf("bad data digest: %v, %v", p, err)
	}
}

// fixHdgst recomputes the header digest of a CapsuleCmd after a mutation.
func fixHdgst(b []byte) {
	c := Encode(&CapsuleCmd{}, Framing{}) // for hlen only
	hlen := int(c[2])
	sum := crc32.Checksum(b[:hlen], crcTable)
	b[hlen], b[hlen+1], b[hlen+2], b[hlen+3] = byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24)
}

// FuzzDecode feeds arbitrary bytes to the decoder under every framing: it
// must never panic, and whatever it accepts must encode to bytes it
// accepts again as the same PDU.
func FuzzDecode(f *testing.F) {
	for _, fr := range framings() {
		for _, p := range samplePDUs() {
			f.Add(Encode(p, fr), fr.HeaderDigest, fr.DataDigest)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, hd, dd bool) {
		fr := Framing{HeaderDigest: hd, DataDigest: dd}
		p, err := Decode(b, fr)
		if err != nil {
			return
		}
		again, err := Decode(Encode(p, fr), fr)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", p.PDUType(), err)
		}
		if !reflect.DeepEqual(normalize(again), normalize(p)) {
			t.Fatalf("round trip changed %+v into %+v", p, again)
		}
	})
}
