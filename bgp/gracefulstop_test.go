package bgp

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	gr := GracefulRestart{Enabled: true, RestartTime: 60 * time.Second, Notification: true}
	r := startReflector(t, addr("127.0.0.1"), Options{GracefulRestart: gr})
	zone := record.ZoneRT(testASN, "prod")
	b := startClient(t, addr("127.0.0.2"), Options{GracefulRestart: gr})
	connect(t, r, b, nil)
	if err := b.Subscribe(ctx, zone); err != nil {
		t.Fatal(err)
	}
	const publishers, per = 4, 5
	for p := range publishers {
		a := startClient(t, addr(fmt.Sprintf("127.0.0.%d", 3+p)), Options{GracefulRestart: gr})
		connect(t, r, a, nil)
		for i := range per {
			if err := a.Publish(ctx, device(routerID(a), i), zone); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.view.waitFor(t, "every record", func(m map[string]RecordEvent) bool { return len(m) == publishers*per })

	r.Stop()
	waitState(t, b, r.addr, func(s SessionState) bool { return s != StateEstablished })
	if w := b.view.withdrawCount(); w != 0 {
		t.Fatalf("b saw %d withdraws when the reflector stopped", w)
	}
	if n := len(b.view.records); n != publishers*per {
		t.Fatalf("b holds %d records after the reflector's stop, want %d", n, publishers*per)
	}
}
