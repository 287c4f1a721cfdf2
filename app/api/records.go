package api

import (
	"net/netip"
	"slices"

	"github.com/openinof/inof/inof"
)

// Shown returns, per address, the report the API shows among the reports
// a daemon holds (inof.Report.Preferred decides between two switches that
// report one address), sorted by address.
func Shown(rs []inof.Report) []Device {
	best := make(map[netip.Addr]inof.Report, len(rs))
	for _, r := range rs {
		if cur, ok := best[r.Addr]; !ok || r.Preferred(cur) {
			best[r.Addr] = r
		}
	}
	out := make([]Device, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Device) int { return a.Addr.Compare(b.Addr) })
	return out
}
