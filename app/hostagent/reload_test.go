package hostagent

import (
	"testing"

	"github.com/openinof/inof/inof"
)

// TestReloadDisconnectPolicy: a reload from disconnect_on forced to all
// makes the next non-forced inactive (link down) disconnect, which it did
// not before; Ready is closed once the agent serves; an invalid reload is
// refused and changes nothing.
func TestReloadDisconnectPolicy(t *testing.T) {
	o := testOptions(t)
	o.DisconnectOn = DisconnectForced
	nv := newFakeNVMe()
	h := start(t, o, newFakeClock(), nv)
	<-h.agent.Ready()
	h.notify(active("10.0.0.100", 1))
	nv.expect(t, "connect")
	h.notify(inactive("10.0.0.100", 2, inof.ReasonLinkDown)) // kept under forced
	h.notify(active("10.0.0.101", 3))
	nv.expect(t, "connect") // the sentinel's calls come next: no disconnect

	bad := o
	bad.DisconnectOn = "sometimes"
	if err := h.agent.Reload(bad); err == nil {
		t.Fatal("an invalid policy accepted")
	}
	next := o
	next.DisconnectOn = DisconnectAll
	if err := h.agent.Reload(next); err != nil {
		t.Fatal(err)
	}
	h.notify(inactive("10.0.0.101", 4, inof.ReasonLinkDown))
	nv.expect(t, "list-subsys", "disconnect")
	if len(nv.devices()) != 1 {
		t.Fatalf("controllers %v, want the first one kept", nv.devices())
	}
}
