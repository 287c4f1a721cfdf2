package sim

import (
	"bytes"
	"fmt"
	"text/tabwriter"
)

// Table renders the result as text: per class throughput, fairness and
// latency, the queue, PFC and CNP counts, and each flow's rate.
func (r Result) Table() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s: %v measured at %.0fG, %d events\n", r.Scenario, r.Measured, r.LinkGbps, r.Events)
	fmt.Fprintf(&b, "egress %.2f Gb/s (%.1f %% of line rate), Jain %.4f over all flows\n", r.EgressGbps, 100*r.Utilisation, r.JainAll)
	fmt.Fprintf(&b, "queue p50 %d B, p99 %d B, mean %.0f B, max %d B (whole run)\n", r.Queue.P50, r.Queue.P99, r.Queue.Mean, r.Queue.Max)
	fmt.Fprintf(&b, "pause frames %d (whole run %d), XON %d, paused %.2f %% of port time, headroom max %d B\n",
		r.PauseFrames, r.PauseFramesTotal, r.ResumeFrames, 100*r.PausedFraction, r.MaxHeadroomBytes)
	fmt.Fprintf(&b, "CNPs %d (whole run %d)\n\n", r.CNPs, r.CNPsTotal)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "class\tflows\tGb/s\tgoodput Gb/s\t% line\tJain\tdrops\tlatency p50\tlatency p99\t")
	for _, c := range r.Classes {
		if c.Flows == 0 {
			continue
		}
		fmt.Fprintf(w, "%s\t%d\t%.2f\t%.2f\t%.1f\t%.4f\t%d\t%v\t%v\t\n", c.Class, c.Flows, c.Gbps, c.GoodputGbps,
			100*c.GoodputGbps/r.LinkGbps, c.Jain, c.Drops, c.LatencyP50, c.LatencyP99)
	}
	_ = w.Flush() // writes to a bytes.Buffer cannot fail
	b.WriteString("\n")
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "flow\tclass\tGb/s\tgoodput Gb/s\tfinal rate Gb/s\tCNPs\tdrops\t")
	for i, f := range r.Flows {
		fmt.Fprintf(w, "%d\t%s\t%.3f\t%.3f\t%.3f\t%d\t%d\t\n", i, f.Class, f.Gbps, f.GoodputGbps, f.FinalRateGbps, f.CNPs, f.Drops)
	}
	_ = w.Flush() // writes to a bytes.Buffer cannot fail
	return b.String()
}
