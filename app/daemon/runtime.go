package daemon

import (
	"fmt"
	"log/slog"

	"github.com/openinof/inof/internal/gcheadroom"
)

// RuntimeOptions tune the Go runtime a daemon runs on.
type RuntimeOptions struct {
	// GCHeadroomMiB keeps the garbage collector's heap goal at least this
	// many MiB above the live heap (internal/gcheadroom): a daemon with a
	// small live heap that makes a lot of short-lived garbage collects
	// less often. 0 leaves Go's default pacing; the GOGC environment
	// variable, when set, wins over it.
	GCHeadroomMiB int `yaml:"gc_headroom_mib"`
}

// DefaultGCHeadroomMiB is gc_headroom_mib's default: under churn the
// collector took 12 % of a switch agent's CPU and 28 % of a reflector's
// with Go's default pacing (docs/history/performance.md, "Churn, fourth round");
// about this much more memory is its price, and none once the live heap is
// larger.
const DefaultGCHeadroomMiB = 64

// maxGCHeadroomMiB bounds gc_headroom_mib (64 GiB): a larger value is a
// typo.
const maxGCHeadroomMiB = 64 << 10

// DefaultRuntimeOptions are the defaults of the runtime section.
func DefaultRuntimeOptions() RuntimeOptions {
	return RuntimeOptions{GCHeadroomMiB: DefaultGCHeadroomMiB}
}

// Validate reports an invalid field.
func (o RuntimeOptions) Validate() error {
	if o.GCHeadroomMiB < 0 || o.GCHeadroomMiB > maxGCHeadroomMiB {
		return fmt.Errorf("runtime.gc_headroom_mib %d: want 0 (Go's default) to %d", o.GCHeadroomMiB, maxGCHeadroomMiB)
	}
	return nil
}

// StartRuntime applies o to this process until the returned stop is
// called, and logs what is in force.
func StartRuntime(o RuntimeOptions, log *slog.Logger) (stop func()) {
	t := gcheadroom.Start(uint64(o.GCHeadroomMiB) << 20)
	log.Info("garbage collector headroom", "headroom", t.String())
	return t.Stop
}
