package l2proto

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// captured is one frame of a capture file.
type captured struct {
	at   time.Time
	data []byte
}

// readPcap reads a classic little-endian microsecond pcap of Ethernet frames
// from testdata/snsd (copies of ../shared/spec/snsd-captures).
func readPcap(t testing.TB, name string) []captured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "snsd", name))
	if err != nil {
		t.Fatalf("read capture: %v", err)
	}
	if len(b) < 24 || binary.LittleEndian.Uint32(b) != 0xa1b2c3d4 {
		t.Fatalf("%s: not a little-endian microsecond pcap", name)
	}
	if lt := binary.LittleEndian.Uint32(b[20:]); lt != 1 {
		t.Fatalf("%s: link type %d, want Ethernet", name, lt)
	}
	var out []captured
	for b = b[24:]; len(b) >= 16; {
		sec, usec := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
		incl := int(binary.LittleEndian.Uint32(b[8:]))
		if len(b) < 16+incl {
			t.Fatalf("%s: truncated record", name)
		}
		out = append(out, captured{time.Unix(int64(sec), int64(usec)*1000), b[16 : 16+incl]})
		b = b[16+incl:]
	}
	if len(out) == 0 {
		t.Fatalf("%s: no frames", name)
	}
	return out
}
