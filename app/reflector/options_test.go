package reflector

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
)

// TestOptionsValidateListsEveryError: one error per problem, all at once.
func TestOptionsValidateListsEveryError(t *testing.T) {
	o := DefaultOptions()
	o.RouterID = "fd00::1"
	o.ClusterID = "x"
	o.Listen.Port = 0
	o.Listen.Addresses = []string{"10.0.0.300"}
	o.HoldTime = 2500 * time.Millisecond
	o.Keepalive = 5 * time.Second
	o.Password = strings.Repeat("p", 81)
	o.GracefulRestart.RestartTime = 5000 * time.Second
	o.BFD.DetectMult = 0
	o.PruneInterval = 0
	o.MaxDevices = 0
	o.MetricsListen = "nohostport"
	o.Clients = []ClientOptions{{Address: "10.0.1.1"}, {Address: "10.0.1.1", LocalAddress: "10.0.0.1"}, {}}
	o.Reflectors = []PeerOptions{{Address: "10.0.1.1", Port: 70000}}
	o.API.Listen = "0.0.0.0:7443"
	o.API.TLSCert = "/etc/inof/api.crt"
	err := o.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	wants := []string{
		"asn: must be set",
		`router_id "fd00::1": want a non-zero IPv4 address`,
		`cluster_id "x": want a non-zero IPv4 address`,
		`listen.addresses[0] "10.0.0.300": not an IP address`,
		"listen.port 0: want 1..65535",
		"hold_time 2.5s: want whole seconds",
		"keepalive 5s: want whole seconds, at least 1s and below hold_time",
		"password: 81 bytes",
		"graceful_restart.restart_time 1h23m20s",
		"bfd.detect_mult: must be at least 1",
		"max_devices 0: must be positive",
		"prune_interval 0s: must be positive",
		`metrics_listen "nohostport"`,
		"clients[0]: BFD needs local_address",
		"clients[1].address 10.0.1.1: already listed as clients[0].address",
		"clients[2].address: must be set",
		"clients[2]: BFD needs local_address",
		"reflectors[0].address 10.0.1.1: already listed as clients[1].address",
		"reflectors[0].port 70000",
		"api.listen: needs api.tls_cert, api.tls_key and a way to tell callers apart",
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q", w)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != len(wants) {
		t.Errorf("%d error lines, want %d:\n%s", n, len(wants), msg)
	}
}

// TestOptionsToSpeaker: the options map to the speaker and its neighbors
// as documented: peer reflectors active and plain, clients passive
// route-reflector clients, passwords overridden per neighbor, BFD timers
// from the defaults unless a client overrides them or disables BFD.
func TestOptionsToSpeaker(t *testing.T) {
	o := DefaultOptions()
	o.ASN, o.RouterID, o.ClusterID, o.LocalAddress = 65001, "10.0.0.1", "10.0.0.100", "10.0.0.1"
	o.Password = "global"
	o.Listen.Addresses = []string{"10.0.0.1"}
	o.Reflectors = []PeerOptions{{Address: "10.0.0.2", Port: 1179}}
	o.Clients = []ClientOptions{
		{Address: "10.0.1.1", Password: "own", BFD: ClientBFDOptions{DetectMult: 5}},
		{Address: "10.0.1.2", NoDefaultRT: true, BFD: ClientBFDOptions{Disabled: true}},
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	so := o.speakerOptions(true)
	if so.ASN != 65001 || so.RouterID != netip.MustParseAddr("10.0.0.1") || so.ClusterID != netip.MustParseAddr("10.0.0.100") ||
		so.ListenPort != 179 || len(so.ListenAddresses) != 1 || !so.GracefulRestart.Enabled || !so.GracefulRestart.Restarting ||
		so.GracefulRestart.RestartTime != 120*time.Second || so.BFDConfirm.Disabled || so.BFDConfirm.Hold != 0 {
		t.Fatalf("speaker options %+v", so)
	}
	ns := o.neighbors()
	if len(ns) != 3 {
		t.Fatalf("%d neighbors", len(ns))
	}
	peer, c1, c2 := ns[0], ns[1], ns[2]
	if !peer.PeerReflector || peer.RRClient || peer.Passive || peer.Port != 1179 || peer.Password != "global" ||
		peer.LocalAddress != netip.MustParseAddr("10.0.0.1") || peer.BFD != nil || peer.HoldTime != 9*time.Second {
		t.Errorf("peer reflector %+v", peer)
	}
	if !c1.RRClient || !c1.Passive || c1.Password != "own" || c1.BFD == nil ||
		*c1.BFD != (bgp.NeighborBFD{DesiredMinTx: 100 * time.Millisecond, RequiredMinRx: 100 * time.Millisecond, DetectMult: 5}) {
		t.Errorf("client 1 %+v bfd %+v", c1, c1.BFD)
	}
	if !c2.NoDefaultRT || c2.BFD != nil || c2.Password != "global" {
		t.Errorf("client 2 %+v", c2)
	}
	// Of two reflectors, exactly one connects: the lower address.
	o.LocalAddress = "10.0.0.3"
	if ns := o.neighbors(); !ns[0].Passive {
		t.Errorf("10.0.0.3 connects to the lower 10.0.0.2: %+v", ns[0])
	}
	o.LocalAddress = "10.0.0.1"
	o.GracefulRestart.Enabled = false
	if o.speakerOptions(true).GracefulRestart.Restarting {
		t.Error("Restarting without graceful restart")
	}
}
