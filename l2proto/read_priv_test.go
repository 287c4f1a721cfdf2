//go:build privileged

package l2proto

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// TestPrivReceiveAllocs: a switch port's whole receive path over a real
// AF_PACKET socket (read the frame, decode it, refresh the registry)
// allocates nothing per frame.
func TestPrivReceiveAllocs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and AF_PACKET sockets")
	}
	sw, host := vethPair(t)
	lldp := benchFrames(t)[0].frame
	const runs = 20
	// Queue every frame first (the kernel buffer holds them), so the reads
	// measured below find theirs without the writer running alongside.
	for range runs + 2 {
		if err := host.WriteFrame(lldp); err != nil {
			t.Fatal(err)
		}
	}
	p := newBenchPort(t)
	dec := new(Decoder)
	buf := make([]byte, MaxFrameLen+4)
	recv := func() {
		n, err := sw.ReadFrame(buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf[:n], lldp) {
			t.Fatalf("read %x, want %x", buf[:n], lldp)
		}
		p.handle(dec, "sw1", buf[:n], time.Now())
	}
	recv() // the first frame registers the host
	if a := testing.AllocsPerRun(runs, recv); a != 0 {
		t.Errorf("%v allocations per received frame", a)
	}
	if _, ok := p.cfg.Registry.Lookup("sw1", hostIP); !ok {
		t.Fatal("host not registered")
	}
}
