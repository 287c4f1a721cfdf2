//go:build privileged

package lossless

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/lossless"
)

func TestMain(m *testing.M) { os.Exit(topo.Main(m)) }

// fakeDCB logs each invocation's arguments, one line per call, into the
// file named by its first line's directory (set per host below).
const fakeDCB = `#!/bin/sh
printf '%%s\n' "$*" >>%s
`

// TestPrivLosslessProfileReachesHosts: inofctl lossless set on a reflector
// → BGP config record → switch agent → inof-host (lossless.server = the
// switch's API, apply on) runs the dcb commands for the new profile; a
// second change is applied again, an unchanged profile is not.
func TestPrivLosslessProfileReachesHosts(t *testing.T) {
	netns.RequireRoot(t)
	dir := t.TempDir()
	swSock := filepath.Join(dir, "sw1.sock")
	dcbLog := filepath.Join(dir, "dcb.log")
	dcbBin := filepath.Join(dir, "dcb")
	if err := os.WriteFile(dcbBin, []byte(fmt.Sprintf(fakeDCB, dcbLog)), 0o755); err != nil {
		t.Fatal(err)
	}
	f := topo.Start(t, topo.Spec{
		Reflectors: []string{"rr1"},
		Switches:   []string{"sw1"},
		Devices:    []topo.Device{{Name: "h1", NICs: []topo.NIC{{Switch: "sw1", Role: "host", Protocol: "rdma"}}}},
		SwitchConfig: func(_ string, cfg map[string]any) {
			cfg["api"] = map[string]any{"socket": swSock}
		},
		HostConfig: func(_ string, cfg map[string]any) {
			cfg["lossless"] = map[string]any{"server": swSock, "apply": true, "interval": "1s",
				"dcb_path": dcbBin, "port_class": "server"}
		},
	})
	if err := f.WaitEstablished(topo.StartTimeout); err != nil {
		t.Fatal(err)
	}
	rr, h1 := f.Node("rr1"), f.Node("h1")
	nic := h1.Links[0].IfName

	set := func(cable uint32) time.Time {
		t.Helper()
		p := lossless.Default()
		p.Name = fmt.Sprintf("lab-%dm", cable)
		p.Ports[0].CableMeters = cable
		y, err := p.YAML()
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, p.Name+".yaml")
		if err := os.WriteFile(file, y, 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		if out, err := rr.Inofctl("lossless", "set", file, "--yes"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return at
	}
	calls := func() []string {
		b, _ := os.ReadFile(dcbLog)
		if len(b) == 0 {
			return nil
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	waitPFC := func(cable uint32, at time.Time) {
		t.Helper()
		want := fmt.Sprintf("pfc set dev %s prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay %d", nic, cable)
		err := topo.Poll(30*time.Second, func() (bool, error) {
			for _, c := range calls() {
				if c == want {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("h1 never ran %q; dcb calls: %q\nh1 log:\n%s", want, calls(), h1.Log())
		}
		t.Logf("profile with %d m cables: inofctl lossless set → dcb at h1 in %v", cable, time.Since(at).Round(time.Millisecond))
		// pfc is not the last step: count the commands once the host
		// says the whole profile ran.
		if _, err := h1.WaitLog(0, fmt.Sprintf(`lossless profile applied.*lab-%dm`, cable), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	waitPFC(7, set(7))
	n := len(calls())
	if n != 5 {
		t.Fatalf("h1 ran %d dcb commands for one profile, want 5 (apptrust, app, ets, pfc, buffer): %q", n, calls())
	}
	waitPFC(9, set(9))
	if got := len(calls()); got != 2*n {
		t.Fatalf("after the second profile h1 ran %d dcb commands, want %d: %q", got, 2*n, calls())
	}
	// The same profile again changes nothing on the switch or the host:
	// h1 keeps fetching it (interval 1 s) and runs nothing more.
	since := h1.LogSize()
	if _, err := h1.WaitMetric(10*time.Second, func(v float64) bool { return v >= 2 },
		"inof_host_lossless_profiles_total", "outcome", "applied"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // three more fetches of the same profile
	if got := len(calls()); got != 2*n {
		t.Fatalf("an unchanged profile was applied again: %d dcb commands, want %d\n%s", got, 2*n, h1.Log()[since:])
	}
}
