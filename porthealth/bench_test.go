package porthealth

import (
	"fmt"
	"testing"
)

// BenchmarkObserve1000Ports feeds one poll of 1,000 ports (pause rising on
// every port, errors steady) to a Detector per op.
func BenchmarkObserve1000Ports(b *testing.B) {
	d := NewDetector(DefaultThresholds())
	samples := make([]Sample, 1000)
	for i := range samples {
		samples[i] = Sample{Port: fmt.Sprintf("Ethernet%d", 4*i), PauseValid: 1 << 3, HasWatchdog: true, HasErrors: true}
	}
	now := t0
	for b.Loop() {
		now = now.Add(DefaultInterval)
		for i := range samples {
			samples[i].Pause[3]++
			d.Observe(now, samples[i])
		}
	}
}
