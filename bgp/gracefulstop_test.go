package bgp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
)

// TestReflectorGracefulStopWithdrawsNothing: a reflector that stops on
// purpose (RFC 8538 negotiated) must leave its clients every record, stale
// under graceful restart, and withdraw none. It reset its sessions one by
// one, and each client whose session went first had its records withdrawn
// from the clients still connected: a switch that had already lost the
// other reflector told its hosts those targets were gone (reason 7; found
// by the soak, both reflectors stopped with SIGTERM, seed
// 12428130709269825763 step 8).
func TestReflectorGracefulStopWithdrawsNothing(t *testing.T) {
	ctx := context.Background()
	gr := bgp.GracefulRestart{Enabled: true, RestartTime: 60 * time.Second, Notification: true}
	r := bgptest.StartReflector(t, bgptest.Addr("127.0.0.1"), bgp.Options{GracefulRestart: gr})
	zone := record.ZoneRT(bgptest.ASN, "prod")
	b := bgptest.StartClient(t, bgptest.Addr("127.0.0.2"), bgp.Options{GracefulRestart: gr})
	bgptest.Connect(t, r, b, nil)
	if err := b.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	const publishers, per = 4, 5
	for p := range publishers {
		a := bgptest.StartClient(t, bgptest.Addr(fmt.Sprintf("127.0.0.%d", 3+p)), bgp.Options{GracefulRestart: gr})
		bgptest.Connect(t, r, a, nil)
		for i := range per {
			if err := a.Publish(ctx, bgptest.Device(a.RouterID(), i), zone); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.View.WaitFor(t, "every record", func(m map[string]bgp.RecordEvent) bool { return len(m) == publishers*per })

	r.Stop()
	bgptest.WaitState(t, b, r.Addr, func(s bgp.SessionState) bool { return s != bgp.StateEstablished })
	if w := b.View.Withdraws(); w != 0 {
		t.Fatalf("b saw %d withdraws when the reflector stopped", w)
	}
	if n := len(b.View.Records()); n != publishers*per {
		t.Fatalf("b holds %d records after the reflector's stop, want %d", n, publishers*per)
	}
}
