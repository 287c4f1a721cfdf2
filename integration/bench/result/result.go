// Package result is the one format every `make bench` program writes its
// figures in, so that one table can be printed and one JSON file kept for the
// whole run, whichever program measured each row.
//
// Each program writes a JSON array of Row to DIR/NAME.json (DIR is
// $BENCH_OUT, default bench-out/); Merge reads every such file back.
package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one measured figure. Distributions fill N, P50, P99 and Max; a
// single figure (a rate, a size) fills Value. Stock and Ratio compare with the
// same figure measured on stock GoBGP (or the kernel's keep-alive) in the same
// run; Ratio is ours/stock.
type Row struct {
	// Group is the table section, e.g. "end to end", "scale", "churn".
	Group string `json:"group"`
	// Name says what was measured, e.g. "target link down → inactive at host on another leaf".
	Name string `json:"name"`
	// Unit of P50, P99, Max, Value and Stock, e.g. "ms", "s", "MB", "events/s".
	Unit  string  `json:"unit"`
	N     int     `json:"n,omitempty"`
	P50   float64 `json:"p50,omitempty"`
	P99   float64 `json:"p99,omitempty"`
	Max   float64 `json:"max,omitempty"`
	Value float64 `json:"value,omitempty"`
	// Stock is the same figure for the baseline named in Baseline.
	Stock    float64 `json:"stock,omitempty"`
	Baseline string  `json:"baseline,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"`
	// Goal is the target from the issue, as text (never asserted).
	Goal string `json:"goal,omitempty"`
	Note string `json:"note,omitempty"`
}

// Dir returns $BENCH_OUT, or "bench-out" when it is unset.
func Dir() string {
	if d := os.Getenv("BENCH_OUT"); d != "" {
		return d
	}
	return "bench-out"
}

// Durations fills N, P50, P99 and Max of r from samples, in r.Unit ("ns",
// "µs", "us", "ms" or "s"). It returns r unchanged when samples is empty.
func Durations(r Row, samples []time.Duration) (Row, error) {
	if len(samples) == 0 {
		return r, nil
	}
	scale, err := unitScale(r.Unit)
	if err != nil {
		return r, err
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	r.N = len(s)
	r.P50 = float64(quantile(s, 0.50)) / scale
	r.P99 = float64(quantile(s, 0.99)) / scale
	r.Max = float64(s[len(s)-1]) / scale
	return r, nil
}

func unitScale(unit string) (float64, error) {
	switch unit {
	case "ns":
		return float64(time.Nanosecond), nil
	case "µs", "us":
		return float64(time.Microsecond), nil
	case "ms":
		return float64(time.Millisecond), nil
	case "s":
		return float64(time.Second), nil
	}
	return 0, fmt.Errorf("result: unit %q is not a time unit", unit)
}

// quantile is the nearest-rank quantile of sorted samples.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Write stores rows as DIR/NAME.json, creating DIR.
func Write(dir, name string, rows []Row) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return fmt.Errorf("result: encode %s: %w", name, err)
	}
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	return nil
}

// Merge reads every DIR/*.json written by Write except skip (the merged
// file itself), in name order.
func Merge(dir, skip string) ([]Row, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	sort.Strings(paths)
	var all []Row
	var errs []error
	for _, p := range paths {
		if filepath.Base(p) == skip {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var rows []Row
		if err := json.Unmarshal(b, &rows); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		all = append(all, rows...)
	}
	return all, errors.Join(errs...)
}

// Table prints rows as one aligned table, grouped in the order groups first
// appear.
func Table(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tn\tp50\tp99\tmax\tvalue\tstock\tours/stock\tgoal\t")
	var groups []string
	for _, r := range rows {
		if !slices.Contains(groups, r.Group) {
			groups = append(groups, r.Group)
		}
	}
	for _, g := range groups {
		fmt.Fprintf(tw, "[%s]\t\t\t\t\t\t\t\t\t\n", g)
		for _, r := range rows {
			if r.Group != g {
				continue
			}
			fmt.Fprintf(tw, "  %s (%s)\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
				r.Name, r.Unit, count(r.N), num(r.P50), num(r.P99), num(r.Max), num(r.Value),
				stock(r), ratio(r.Ratio), r.Goal)
		}
	}
	return tw.Flush()
}

func count(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func num(v float64) string {
	switch {
	case v == 0:
		return "-"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return strings.TrimSuffix(fmt.Sprintf("%.2f", v), ".00")
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func stock(r Row) string {
	if r.Stock == 0 {
		return "-"
	}
	if r.Baseline == "" {
		return num(r.Stock)
	}
	return num(r.Stock) + " (" + r.Baseline + ")"
}

func ratio(v float64) string {
	if v == 0 {
		return "-"
	}
	if math.Abs(v) < 0.1 {
		return fmt.Sprintf("%.2g×", v) // 0.00053×, not 0.00×
	}
	return fmt.Sprintf("%.2f×", v)
}
