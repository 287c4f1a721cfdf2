package bgp

import (
	"io"
	"net/netip"
	"testing"
	"time"
)

func TestProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100000A:00B3":                         "10.0.0.1",
		"0100007F:1F90":                         "127.0.0.1",
		"0000000000000000FFFF00000B00000A:C350": "10.0.0.11", // IPv4-mapped
		"00000000000000000000000001000000:0016": "::1",
	} {
		got, ok := procAddr(in)
		if !ok || got != netip.MustParseAddr(want) {
			t.Errorf("procAddr(%q) = %v %v, want %s", in, got, ok, want)
		}
	}
	if _, ok := procAddr("zz:00"); ok {
		t.Error("garbage parsed")
	}
}

// TestShutdownSessionsEndsOwnConnection: a connection this process holds is
// found through /proc and shut down; the far end reads EOF at once.
func TestShutdownSessionsEndsOwnConnection(t *testing.T) {
	_, far := loopbackConn(t, netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.1"))
	n, err := shutdownSessions(netip.Addr{}, netip.MustParseAddr("127.0.0.1"))
	if err != nil || n == 0 {
		t.Fatalf("shut down %d connections: %v", n, err)
	}
	far.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := far.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("far end read %v, want EOF", err)
	}
}
