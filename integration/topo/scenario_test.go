package topo_test

import (
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
)

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var out []time.Duration
		for _, v := range n {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	for _, tc := range []struct {
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.5, 7 * time.Millisecond},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.5, 6 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0, time.Millisecond},
	} {
		if got := topo.Percentile(tc.samples, tc.p); got != tc.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tc.samples, tc.p, got, tc.want)
		}
	}
}

func TestLatencyReport(t *testing.T) {
	var r topo.LatencyReport
	if s := r.Summary(); s != "" {
		t.Fatalf("empty report summary %q, want empty", s)
	}
	r.Record(t, "b", []time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond})
	r.Record(t, "a", []time.Duration{time.Second})
	want := "notify latency per scenario:\n" +
		"  scenario b: notify latency p50=2ms p99=3ms (n=3, min 1ms, max 3ms)\n" +
		"  scenario a: notify latency p50=1s p99=1s (n=1, min 1s, max 1s)\n"
	if s := r.Summary(); s != want {
		t.Errorf("summary\n%s\nwant\n%s", s, want)
	}
}

func TestLogTime(t *testing.T) {
	at, err := topo.LogTime(`time=2026-11-30T17:10:20.625Z level=INFO msg=notify port=p2 host=10.100.2.2`)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 30, 17, 10, 20, 625e6, time.UTC); !at.Equal(want) {
		t.Errorf("LogTime = %v, want %v", at, want)
	}
	for _, line := range []string{`level=INFO msg=notify`, `xtime=2026-11-30T17:10:20.625Z`, `time=yesterday msg=x`} {
		if _, err := topo.LogTime(line); err == nil || !strings.Contains(err.Error(), "topo:") {
			t.Errorf("LogTime(%q): error %v, want a topo error", line, err)
		}
	}
}
