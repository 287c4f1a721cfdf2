package result

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestDurationsQuantiles(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	r, err := Durations(Row{Unit: "ms"}, s)
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 100 || r.P50 != 50 || r.P99 != 99 || r.Max != 100 {
		t.Fatalf("got n=%d p50=%v p99=%v max=%v, want 100 50 99 100", r.N, r.P50, r.P99, r.Max)
	}
	if _, err := Durations(Row{Unit: "MB"}, s); err == nil {
		t.Fatal("a size unit was accepted for durations")
	}
}

func TestWriteMergeTable(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, "b", []Row{{Group: "scale", Name: "100k records", Unit: "s", Value: 4.2, Stock: 8.4, Baseline: "GoBGP", Ratio: 0.5}}); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, "a", []Row{{Group: "end to end", Name: "link down", Unit: "ms", N: 500, P50: 1.2, P99: 3.4, Max: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, "all", []Row{{Group: "x", Name: "merged before"}}); err != nil {
		t.Fatal(err)
	}
	rows, err := Merge(dir, "all.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Name != "link down" || rows[1].Name != "100k records" {
		t.Fatalf("merge gave %+v", rows)
	}
	var b bytes.Buffer
	if err := Table(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"[end to end]", "link down (ms)", "3.40", "[scale]", "8.40 (GoBGP)", "0.50×"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestRatioKeepsSmallValues(t *testing.T) {
	for v, want := range map[float64]string{0: "-", 0.00053: "0.00053×", 0.05: "0.05×", 0.96: "0.96×", 1.67: "1.67×"} {
		if got := ratio(v); got != want {
			t.Errorf("ratio(%v) = %q, want %q", v, got, want)
		}
	}
}
