//go:build privileged

package linuxstats

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openinof/inof/internal/netns"
)

// ipErrors is what `ip -s -j link show` reports as a link's receive errors.
func ipErrors(t *testing.T, ns *netns.NS, name string) (rxErrors, frame uint64) {
	t.Helper()
	out := ns.MustIP("-s", "-s", "-j", "link", "show", name)
	var links []struct {
		Stats64 struct {
			RX struct {
				Errors      uint64 `json:"errors"`
				FrameErrors uint64 `json:"frame_errors"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -j link show %s: %v: %s", name, err, out)
	}
	return links[0].Stats64.RX.Errors, links[0].Stats64.RX.FrameErrors
}

// TestPrivNetlinkErrors reads the netdev statistics of a veth pair in a
// namespace: the error counters agree with iproute2's, a missing link is
// that port's error. (No virtual device counts receive errors on demand,
// so the values are zero here; RxErrors' arithmetic has its own test.)
func TestPrivNetlinkErrors(t *testing.T) {
	ns := netns.New(t, "phl")
	ns.MustIP("link", "add", "pha", "type", "veth", "peer", "name", "phb")
	ns.MustIP("link", "set", "pha", "up")
	ns.MustIP("link", "set", "phb", "up")
	var src *Source
	if err := ns.Do(func() (err error) { src, err = Open(Options{}); return err }); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	got, err := src.Read(context.Background(), []string{"phb", "nosuch"})
	if err != nil {
		t.Fatal(err)
	}
	rx, frame := ipErrors(t, ns, "phb")
	if got[0].Err != nil || !got[0].HasErrors || got[0].Errors != max(rx, frame) || got[0].PauseValid != 0 {
		t.Fatalf("phb: %+v; ip reports rx errors %d, frame errors %d", got[0], rx, frame)
	}
	if got[1].Err == nil || !strings.Contains(got[1].Err.Error(), "nosuch") {
		t.Fatalf("a missing link read without error: %+v", got[1])
	}
	// Ten more links: the second read dumps them all, the third, of two
	// ports among thirteen links, gets the two links one by one and
	// reads the same.
	for i := range 5 {
		ns.MustIP("link", "add", fmt.Sprintf("phc%d", i), "type", "veth", "peer", "name", fmt.Sprintf("phd%d", i))
	}
	for read := range 2 {
		again, err := src.Read(context.Background(), []string{"phb", "nosuch"})
		if err != nil || again[0] != got[0] || again[1].Err == nil || again[1].Err.Error() != got[1].Err.Error() {
			t.Fatalf("read %d: %+v %v, want %+v", read+2, again, err, got)
		}
	}
	if src.links != 13 {
		t.Fatalf("the last dump saw %d links, want 13", src.links)
	}
	// The namespace's own links only: the host's are not visible.
	var outside *Source
	outside, err = Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	if got, err := outside.Read(context.Background(), []string{"phb"}); err != nil || got[0].Err == nil {
		t.Fatalf("a source opened outside the namespace sees its link: %+v %v", got, err)
	}
}

// TestPrivEthtoolByName reads veth's own ethtool statistics by name: the
// path pause counters take on mlxsw and mlx5, on a driver every kernel has.
// veth's peer_ifindex is known, so the value read is checked, not only
// its presence.
func TestPrivEthtoolByName(t *testing.T) {
	ns := netns.New(t, "phe")
	ns.MustIP("link", "add", "pha", "type", "veth", "peer", "name", "phb")
	out := ns.MustIP("-j", "link", "show", "phb")
	var links []struct {
		Ifindex uint64 `json:"ifindex"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		t.Fatalf("ip link show phb: %v: %s", err, out)
	}
	err := ns.Do(func() error {
		e, err := openEthtool()
		if err != nil {
			return err
		}
		defer e.close()
		driver, n, err := e.driver("pha")
		if err != nil || driver != "veth" {
			t.Fatalf("driver %q (%d statistics): %v", driver, n, err)
		}
		names, n, err := e.names("pha")
		if err != nil {
			t.Fatal(err)
		}
		vals, err := e.stats("pha", n)
		if err != nil {
			t.Fatal(err)
		}
		i := slicesIndex(names, "peer_ifindex")
		if i < 0 || vals[i] != links[0].Ifindex {
			t.Fatalf("peer_ifindex: names %v values %v, want %d", names, vals, links[0].Ifindex)
		}
		if _, err := e.stats("pha", n+1); err == nil || !strings.Contains(err.Error(), errLayout.Error()) {
			t.Fatalf("a stale layout read without error: %v", err)
		}

		// The source finds a per-index statistic by its name pattern: veth
		// has per-queue counters named like mlx5's per-priority ones.
		src, err := Open(Options{Priorities: []uint8{0}, PauseStat: "rx_queue_%d_xdp_packets"})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		got, err := src.Read(context.Background(), []string{"pha"})
		if err != nil || got[0].Err != nil || got[0].PauseValid != 1 {
			t.Fatalf("pha: %+v %v", got, err)
		}
		// veth has no pause counters: by driver, none is read.
		auto, err := Open(Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer auto.Close()
		got, err = auto.Read(context.Background(), []string{"pha"})
		if err != nil || got[0].Err != nil || got[0].PauseValid != 0 || !got[0].HasErrors {
			t.Fatalf("pha by driver: %+v %v", got, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
