package linuxstats

import (
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

func slicesIndex(s []string, v string) int { return slices.Index(s, v) }

func TestRxErrors(t *testing.T) {
	if got := RxErrors(&netlink.LinkStatistics{RxErrors: 7, RxCrcErrors: 3, RxFrameErrors: 2}); got != 7 {
		t.Errorf("rx_errors counting CRC and frame errors: %d, want 7", got)
	}
	if got := RxErrors(&netlink.LinkStatistics{RxErrors: 1, RxCrcErrors: 3, RxFrameErrors: 2}); got != 5 {
		t.Errorf("a driver counting CRC and frame errors apart: %d, want 5", got)
	}
}

func TestOptionsRejected(t *testing.T) {
	for _, o := range []Options{{Priorities: []uint8{8}}, {PauseStat: "rx_pause"}, {PauseStat: "rx_%d_%d"}} {
		if _, err := Open(o); err == nil || !strings.Contains(err.Error(), "linux stats") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
