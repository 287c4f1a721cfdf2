package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLeanImports: inofctl does not link the daemon side (GoBGP, bbolt,
// netlink, Prometheus) nor the Markdown generator: their package
// initialization ran at every start and made each zone change a few
// milliseconds slower (issue #16, BenchmarkPrivZoneChange).
func TestLeanImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, heavy := range []string{"github.com/osrg/gobgp/", "go.etcd.io/bbolt", "github.com/vishvananda/netlink",
		"github.com/prometheus/", "github.com/russross/blackfriday", "github.com/openinof/inof/bgp"} {
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, heavy) {
				t.Errorf("inofctl links %s", dep)
				break
			}
		}
	}
}
