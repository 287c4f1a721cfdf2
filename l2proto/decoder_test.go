package l2proto

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"
)

// captureFiles are all the nvme-snsd captures in testdata/snsd.
var captureFiles = []string{"host-register.pcap", "notify-active.pcap", "notify-inactive.pcap",
	"notify-cancel-port0.pcap", "notify-variants.pcap", "emu-session.pcap", "session-all.pcap",
	"emu-restrain5.pcap", "tcp-config-no-lldp.pcap", "linkflap.pcap"}

// sameFrame compares two decoded frames by value; an empty slice equals a
// nil one (a Decoder keeps its emptied slices).
func sameFrame(a, b Frame) bool {
	if !bytes.Equal(a.Source, b.Source) || (a.LLDP == nil) != (b.LLDP == nil) || (a.Message == nil) != (b.Message == nil) {
		return false
	}
	if a.LLDP != nil {
		x, y := a.LLDP, b.LLDP
		if x.ChassisSubtype != y.ChassisSubtype || !bytes.Equal(x.ChassisID, y.ChassisID) ||
			x.PortSubtype != y.PortSubtype || !bytes.Equal(x.PortID, y.PortID) || x.TTL != y.TTL ||
			(x.Registration == nil) != (y.Registration == nil) ||
			(x.Registration != nil && *x.Registration != *y.Registration) {
			return false
		}
	}
	if a.Message != nil {
		x, y := a.Message, b.Message
		if x.Version != y.Version || !slices.Equal(x.Notifications, y.Notifications) ||
			!slices.Equal(x.Acks, y.Acks) || !slices.Equal(x.Queries, y.Queries) {
			return false
		}
	}
	return true
}

// TestDecoderMatchesDecodeFrame feeds every captured frame, in capture order,
// through one reused Decoder and checks that each result (and error) equals
// DecodeFrame's, so no state leaks from one frame into the next.
func TestDecoderMatchesDecodeFrame(t *testing.T) {
	var dec Decoder
	n := 0
	for _, file := range captureFiles {
		for i, fr := range readPcap(t, file) {
			n++
			want, werr := DecodeFrame(fr.data)
			buf := bytes.Clone(fr.data)
			got, gerr := dec.Decode(buf)
			if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
				t.Fatalf("%s frame %d: Decoder error %v, DecodeFrame error %v", file, i, gerr, werr)
			}
			if !sameFrame(got, want) {
				t.Fatalf("%s frame %d: Decoder %+v, DecodeFrame %+v", file, i, got, want)
			}
			if got.Source == nil {
				continue // rejected
			}
			// DecodeFrame's result owns its memory; the Decoder's Source
			// is a view over the buffer.
			clear(buf)
			if bytes.Equal(want.Source, buf[6:12]) {
				t.Fatalf("%s frame %d: DecodeFrame's Source aliases the frame", file, i)
			}
			if !bytes.Equal(got.Source, buf[6:12]) {
				t.Fatalf("%s frame %d: Decoder's Source is not a view over the frame", file, i)
			}
		}
	}
	t.Logf("%d frames", n)
}

// TestDecodeAllocs: once a Decoder has seen a frame, decoding it again
// allocates nothing, for every captured frame nvme-snsd's side accepts.
func TestDecodeAllocs(t *testing.T) {
	var dec Decoder
	n := 0
	for _, file := range captureFiles {
		for i, fr := range readPcap(t, file) {
			if _, err := DecodeFrame(fr.data); err != nil {
				continue
			}
			if a := testing.AllocsPerRun(20, func() { dec.Decode(fr.data) }); a != 0 {
				t.Errorf("%s frame %d: %v allocations per decode", file, i, a)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no frame decoded")
	}
}

// TestReceiveAllocs: a switch port's receive path allocates nothing for the
// frames hosts send in steady state: a registration refresh, an ACK, a zone
// query.
func TestReceiveAllocs(t *testing.T) {
	p := newBenchPort(t)
	dec := new(Decoder)
	now := time.Now()
	for _, c := range benchFrames(t) {
		if c.name == "notify" {
			continue
		}
		if a := testing.AllocsPerRun(20, func() { p.handle(dec, "sw1", c.frame, now) }); a != 0 {
			t.Errorf("%s: %v allocations per frame", c.name, a)
		}
	}
	if e, ok := p.cfg.Registry.Lookup("sw1", hostIP); !ok || e.PortID != "snsd_veth-h_01" || !bytes.Equal(e.MAC, hostMAC) {
		t.Fatalf("registry entry %+v, %v", e, ok)
	}
	if st := p.cfg.Notifier.Stats(); st.StaleAcks != 21 {
		t.Fatalf("notifier saw %d stale ACKs, want 21", st.StaleAcks)
	}
}

// TestNameCache: the cache returns equal strings for equal bytes, never more
// than maxCachedNames entries, and strings that stay valid after the bytes
// they came from change.
func TestNameCache(t *testing.T) {
	var c nameCache
	b := []byte("nqn.2014-08.org.example:t0000")
	var kept []string
	for i := range 3 * maxCachedNames {
		copy(b[len(b)-4:], fmt.Sprintf("%04d", i))
		s := c.str(b)
		if s != string(b) {
			t.Fatalf("str(%q) = %q", b, s)
		}
		if len(c.m) > maxCachedNames {
			t.Fatalf("cache holds %d names", len(c.m))
		}
		kept = append(kept, s)
	}
	for i, s := range kept {
		if want := fmt.Sprintf("nqn.2014-08.org.example:t%04d", i); s != want {
			t.Fatalf("kept string %d changed to %q", i, s)
		}
	}
	if (*nameCache)(nil).str([]byte("x")) != "x" || c.str(nil) != "" {
		t.Fatal("nil cache or empty name")
	}
}
