package lossless

import (
	"bytes"
	"fmt"
	"text/tabwriter"
)

// RenderTable prints headroom and ECN thresholds for every speed × cable
// combination: both headroom models, the value used, and whether ECN still
// marks before PFC pauses at that speed.
func RenderTable(p Profile, mtu uint32, speedsMbps, cablesM []uint32) ([]byte, error) {
	plans, err := Table(p, mtu, speedsMbps, cablesM)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# iNOF lossless profile %q: headroom and ECN per port speed and cable length (MTU %d, bytes)\n", p.Name, mtu)
	w := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "speed\tcable\tswitch xoff\tswitch xon\tNIC xoff\tNIC min buffer\txoff used\theadroom\tKmin\tKmax\tECN before PFC\t")
	for _, pl := range plans {
		ok := "yes"
		if pl.ECN.KmaxBytes >= p.PFC.XoffThresholdBytes {
			ok = "NO"
		}
		fmt.Fprintf(w, "%dG\t%dm\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n",
			pl.Port.SpeedMbps/1000, pl.Port.CableMeters, pl.Switch.Xoff, pl.Switch.Xon, pl.NIC.Xoff, pl.NIC.MinBuffer,
			pl.XoffBytes, pl.HeadroomBytes, pl.ECN.KminBytes, pl.ECN.KmaxBytes, ok)
	}
	if err := w.Flush(); err != nil {
		return nil, fmt.Errorf("lossless: render table: %w", err)
	}
	return buf.Bytes(), nil
}
