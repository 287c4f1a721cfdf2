package sim

import (
	"bufio"
	"fmt"
	"io"
)

// Plot geometry, in SVG user units.
const (
	plotW, panelH, marginL, marginT, gapH = 760, 220, 70, 30, 60
)

// palette holds ten 7-character colours the flows cycle through.
const palette = "#1f77b4#ff7f0e#2ca02c#d62728#9467bd#8c564b#e377c2#7f7f7f#bcbd22#17becf"

func colour(i int) string {
	k := i % (len(palette) / 7)
	return palette[7*k : 7*k+7]
}

// WriteSVG draws the run as SVG: egress queue depth (KB) over time on top,
// each flow's delivered rate (Gb/s) below. The picture is written by hand;
// no plotting library is used.
func (r Result) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	s := r.Series
	height := marginT + 2*panelH + gapH + 40
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", plotW+marginL+20, height)
	fmt.Fprintf(bw, `<text x="%d" y="18" font-size="14">%s</text>`+"\n", marginL, escape(r.Scenario))
	tMax := 1.0
	if n := len(s.TimeUs); n > 0 {
		tMax = s.TimeUs[n-1]
	}
	qKB := make([]float64, len(s.QueueBytes))
	qMax := 1.0
	for i, q := range s.QueueBytes {
		qKB[i] = q / 1000
		qMax = max(qMax, qKB[i])
	}
	panel(bw, marginT, "queue depth (KB)", tMax, qMax)
	polyline(bw, marginT, s.TimeUs, qKB, tMax, qMax, "#000")
	top := marginT + panelH + gapH
	rMax := r.LinkGbps
	for _, fr := range s.FlowGbps {
		for _, v := range fr {
			rMax = max(rMax, v)
		}
	}
	panel(bw, top, "per-flow rate (Gb/s)", tMax, rMax)
	for i, fr := range s.FlowGbps {
		polyline(bw, top, s.TimeUs, fr, tMax, rMax, colour(i))
	}
	fmt.Fprintf(bw, `<text x="%d" y="%d">time (µs)</text>`+"\n", marginL+plotW/2-30, height-8)
	fmt.Fprintln(bw, "</svg>")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("sim: write svg: %w", err)
	}
	return nil
}

// panel draws a frame with y and x ticks (0, ½, max).
func panel(w io.Writer, top int, label string, tMax, yMax float64) {
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`+"\n", marginL, top, plotW, panelH)
	fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`+"\n", marginL, top-6, label)
	for _, f := range []float64{0, 0.5, 1} {
		y := float64(top) + float64(panelH)*(1-f)
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%.4g</text>`+"\n", marginL-6, y+4, f*yMax)
		x := float64(marginL) + float64(plotW)*f
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%.4g</text>`+"\n", x, top+panelH+16, f*tMax)
	}
}

func polyline(w io.Writer, top int, xs, ys []float64, xMax, yMax float64, colour string) {
	fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="1" points="`, colour)
	for i := range min(len(xs), len(ys)) {
		x := float64(marginL) + float64(plotW)*xs[i]/xMax
		y := float64(top) + float64(panelH)*(1-min(ys[i]/yMax, 1))
		fmt.Fprintf(w, "%.1f,%.1f ", x, y)
	}
	fmt.Fprintln(w, `"/>`)
}

func escape(s string) string {
	var b []byte
	for _, c := range []byte(s) {
		switch c {
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '&':
			b = append(b, "&amp;"...)
		case '"':
			b = append(b, "&quot;"...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}
