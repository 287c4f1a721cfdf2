package sim

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/lossless"
)

func smallScenario(t *testing.T) Scenario {
	t.Helper()
	p := lossless.Default()
	s, err := FromProfile(p, p.Ports[0], 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.Duration, s.Warmup = time.Millisecond, 200*time.Microsecond
	return s
}

// Same seed, same result; another seed, another run.
func TestDeterministic(t *testing.T) {
	s := smallScenario(t)
	a, b := mustRun(t, s), mustRun(t, s)
	if a.Table() != b.Table() || a.Events != b.Events {
		t.Fatal("two runs with one seed differ")
	}
	s.Seed = 2
	if c := mustRun(t, s); c.Table() == a.Table() {
		t.Error("another seed gave the identical table")
	}
}

func TestTableAndSVG(t *testing.T) {
	res := mustRun(t, smallScenario(t))
	tab := res.Table()
	for _, want := range []string{"storage", "other", "Jain", "pause frames", "CNPs", "latency p99", "queue p50"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
	var buf bytes.Buffer
	if err := res.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName   xml.Name   `xml:"svg"`
		Polylines []struct{} `xml:"polyline"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("SVG does not parse: %v", err)
	}
	if got, want := len(doc.Polylines), 1+len(res.Flows); got != want {
		t.Errorf("%d polylines, want queue + %d flows", got, len(res.Flows))
	}
}

func TestProgressAndCancel(t *testing.T) {
	s := smallScenario(t)
	var calls int
	var last time.Duration
	s.Progress = func(done, total time.Duration) {
		calls++
		if done < last || total != s.Duration {
			t.Errorf("progress %v of %v after %v", done, total, last)
		}
		last = done
	}
	mustRun(t, s)
	if calls < 50 {
		t.Errorf("%d progress calls, want about 100", calls)
	}
	s.Progress = nil
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, s); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
}

func TestValidate(t *testing.T) {
	s := smallScenario(t)
	s.Flows[0].PayloadBytes = 0
	s.ECN.KminBytes = s.ECN.KmaxBytes
	_, err := Run(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "payload") || !strings.Contains(err.Error(), "Kmin") {
		t.Errorf("want payload and Kmin errors, got %v", err)
	}
}

// The DCQCN reaction point: a cut by α/2 with the target kept, then F
// fast-recovery steps halving the distance, then additive increase.
func TestRP(t *testing.T) {
	d := PaperDCQCN40G()
	r := newRP(40e9, d, 0)
	if !r.onCNP(1, d) || r.rc != 20e9 || r.rt != 40e9 {
		t.Fatalf("first cut with α = 1: rc %g rt %g", r.rc, r.rt)
	}
	for range d.FastRecoverySteps {
		r.onTimer(d)
	}
	if want := 40e9 - 20e9/32; r.rc != want {
		t.Errorf("after %d fast-recovery steps rc = %g, want %g", d.FastRecoverySteps, r.rc, want)
	}
	r.onTimer(d)
	if r.rt != 40e9 { // additive increase is capped at line rate
		t.Errorf("rt %g above line rate", r.rt)
	}
	r.advanceAlpha(ps(10*d.AlphaPeriod)+1, d)
	want := (1 - d.G) + d.G // the period with the CNP
	for range 9 {
		want *= 1 - d.G
	}
	if diff := r.alpha - want; diff > 1e-12 || diff < -1e-12 {
		t.Errorf("α after 10 periods = %g, want %g", r.alpha, want)
	}
}

func TestHistQuantile(t *testing.T) {
	var h hist
	for v := range int64(10000) {
		h.add(v)
	}
	if q := h.quantile(0.99); q < 9700 || q > 9900 {
		t.Errorf("p99 of 0..9999 = %d", q)
	}
	if h.max != 9999 || h.quantile(0) != 0 {
		t.Errorf("max %d, p0 %d", h.max, h.quantile(0))
	}
}
