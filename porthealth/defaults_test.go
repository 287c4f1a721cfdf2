package porthealth_test

import (
	"slices"
	"testing"
	"time"

	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/porthealth"
)

// TestDefaultsFollowLosslessProfile: the storm defaults are the lossless
// profile's default PFC watchdog (porthealth imports nothing of lossless,
// so this test keeps the two in step).
func TestDefaultsFollowLosslessProfile(t *testing.T) {
	p := lossless.Default()
	th := porthealth.DefaultThresholds()
	ms := func(v uint32) time.Duration { return time.Duration(v) * time.Millisecond }
	if th.StormDetection != ms(p.Watchdog.DetectionMs) || th.StormRecovery != ms(p.Watchdog.RestorationMs) ||
		porthealth.DefaultInterval != ms(p.Watchdog.PollMs) || !slices.Equal(th.Priorities, p.LosslessPriorities) {
		t.Fatalf("defaults %+v, interval %v; lossless watchdog %+v, priorities %v", th, porthealth.DefaultInterval, p.Watchdog, p.LosslessPriorities)
	}
}
