//go:build privileged

package cdc

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/openinof/inof/integration/netns"
	"github.com/openinof/inof/integration/topo"
)

// browse runs python3-zeroconf's DNS-SD browser for _nvme-disc._tcp inside
// a namespace for seconds and returns the services it found, one line each
// ("FOUND name port addresses txt").
func browse(t *testing.T, ns *netns.NS, seconds int) []string {
	t.Helper()
	// Debian's python3, where the python3-zeroconf package installs.
	py := netns.RequireTool(t, "/usr/bin/python3")
	if err := exec.Command(py, "-c", "import zeroconf").Run(); err != nil {
		netns.Missing(t, "python3-zeroconf")
	}
	_, file, _, _ := runtime.Caller(0)
	out, err := ns.Command(py, filepath.Join(filepath.Dir(file), "testdata", "browse.py"), fmt.Sprint(seconds)).CombinedOutput()
	if err != nil {
		t.Fatalf("browse in %s: %v\n%s", ns.Name, err, out)
	}
	var found []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "FOUND") || strings.HasPrefix(l, "UNRESOLVED") {
			found = append(found, l)
		}
	}
	return found
}

// TestPrivMDNSAdvertisement (TP 8009): a host on an access port of a switch
// that serves discovery finds the controller with a stock DNS-SD browser
// (python3-zeroconf, nothing of ours): one _nvme-disc._tcp service with the
// discovery port, TXT p=tcp and the discovery NQN, at the switch's address
// on that port. Browsing from the fabric side (the switch's uplink) finds
// nothing, and a switch without discovery advertises nothing.
func TestPrivMDNSAdvertisement(t *testing.T) {
	requireRoles(t)
	f := topo.Start(t, spec())
	h1 := f.Node("h1")
	hl := h1.Links[0]
	gw := hl.Prefix.Masked().Addr().Next()
	hl.Switch.NS.Addr(hl.Port, netip.PrefixFrom(gw, hl.Prefix.Bits()).String())
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := topo.Poll(wait, func() (bool, error) {
		got = browse(t, h1.NS, 4)
		return len(got) == 1, fmt.Errorf("found %q", got)
	}); err != nil {
		t.Fatalf("access port: %v", err)
	}
	want := fmt.Sprintf("FOUND iNOF discovery 10-0-0-11._nvme-disc._tcp.local. %d %s nqn=nqn.2014-08.org.nvmexpress.discovery;p=tcp", port, gw)
	if got[0] != want {
		t.Fatalf("access port: %q\nwant %q", got[0], want)
	}
	if up := browse(t, f.Bridge(), 4); len(up) != 0 {
		t.Fatalf("the uplink side found %q", up)
	}
	// leaf2 serves no discovery: its hosts find nothing.
	t1 := f.Node("t1")
	tl := t1.Links[0]
	tl.Switch.NS.Addr(tl.Port, netip.PrefixFrom(tl.Prefix.Masked().Addr().Next(), tl.Prefix.Bits()).String())
	if other := browse(t, t1.NS, 4); len(other) != 0 {
		t.Fatalf("leaf2's port found %q", other)
	}
}
