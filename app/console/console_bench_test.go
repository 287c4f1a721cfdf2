package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/console"
	"github.com/openinof/inof/inof"
)

// BenchmarkPages renders each page (the handler alone, in-process API
// calls included) for a fabric of 8 leaves, 64 hosts and 64 targets in 8
// zones: the matrix is 64 × 64. It reports the median and the 99th
// percentile per page.
func BenchmarkPages(b *testing.B) {
	s := newSite(b)
	var devs []api.Device
	for i := range 128 {
		role := inof.RoleHost
		if i%2 == 1 {
			role = inof.RoleTarget
		}
		devs = append(devs, api.Device{Device: inof.Device{Addr: netip.AddrFrom4([4]byte{10, 2, byte(i / 100), byte(i % 100)}), Role: role,
			Protocol: inof.ProtocolTCP, Port: 4420}, Switch: inof.RouterID(0xc0000201 + uint32(i%8)), Status: inof.Status{State: inof.StateActive}})
	}
	s.b.SetDevices(devs...)
	for z := range 8 {
		var ms []string
		for i := z; i < len(devs); i += 8 {
			ms = append(ms, devs[i].Addr.String())
		}
		s.commit(b, createZone(fmt.Sprintf("z%d", z), ms...))
	}
	h := console.New(s.fabric, console.Options{Logger: slog.New(slog.DiscardHandler)})
	ctx := api.WithIdentity(context.Background(), api.Identity{Name: "vera", Role: api.RoleViewer})
	for _, path := range []string{"/ui/fabric", "/ui/zones", "/ui/devices", "/ui/devices/10.2.0.1", "/ui/events", "/ui/lossless", "/ui/history"} {
		b.Run(path, func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				rec := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", path, nil))
				took = append(took, time.Since(start))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d", path, rec.Code)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
