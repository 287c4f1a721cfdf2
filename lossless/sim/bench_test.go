package sim

import (
	"context"
	"testing"
	"time"

	"github.com/openinof/inof/lossless"
)

// BenchmarkIncast8to1 is 10 ms of an 8-to-1 RoCE incast at 100G with
// 1048 B frames (the cost model of spec/incast-sim.md); it reports events
// per second of wall time and events per run.
func BenchmarkIncast8to1(b *testing.B) {
	p := lossless.Default()
	s, err := FromProfile(p, p.Ports[0], 8, 0)
	if err != nil {
		b.Fatal(err)
	}
	for i := range s.Flows {
		s.Flows[i].PayloadBytes = 1048 - roceHeaderBytes
	}
	s.Duration, s.Warmup = 10*time.Millisecond, time.Millisecond
	b.ReportAllocs()
	var events int64
	for b.Loop() {
		res, err := Run(context.Background(), s)
		if err != nil {
			b.Fatal(err)
		}
		events += res.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}
