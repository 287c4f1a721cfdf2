package topo

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// LatencyReport collects the notify latencies scenario tests measure, one
// row per scenario, for a summary printed after every test ran. Its zero
// value is ready; it is safe for concurrent use.
type LatencyReport struct {
	mu   sync.Mutex
	rows []latencyRow
}

type latencyRow struct {
	scenario string
	samples  []time.Duration // sorted
}

// Record logs through tb the line
//
//	scenario NAME: notify latency p50=… p99=… (n=…)
//
// (plus the minimum and maximum) and keeps the figures for Summary. A
// record without samples is an error of the test.
func (r *LatencyReport) Record(tb testing.TB, scenario string, samples []time.Duration) {
	tb.Helper()
	if len(samples) == 0 {
		tb.Errorf("scenario %s: no notify latency measured", scenario)
		return
	}
	row := latencyRow{scenario: scenario, samples: slices.Clone(samples)}
	slices.Sort(row.samples)
	tb.Logf("%s", row)
	r.mu.Lock()
	r.rows = append(r.rows, row)
	r.mu.Unlock()
}

// Summary is one line per recorded scenario, in the order they were
// recorded, under a heading; empty if nothing was recorded.
func (r *LatencyReport) Summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("notify latency per scenario:\n")
	for _, row := range r.rows {
		fmt.Fprintf(&b, "  %s\n", row)
	}
	return b.String()
}

// String is the row's report line, figures rounded to the microsecond.
func (row latencyRow) String() string {
	us := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	return fmt.Sprintf("scenario %s: notify latency p50=%v p99=%v (n=%d, min %v, max %v)", row.scenario,
		us(Percentile(row.samples, 0.50)), us(Percentile(row.samples, 0.99)), len(row.samples),
		us(row.samples[0]), us(row.samples[len(row.samples)-1]))
}

// Percentile returns the nearest-rank p-quantile (0 ≤ p ≤ 1) of sorted
// samples; zero when there are none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(p*float64(len(sorted)-1)+0.5)]
}
