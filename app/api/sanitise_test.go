package api_test

import (
	"context"
	"net/netip"
	"testing"
	"unicode/utf8"

	"github.com/openinof/inof/app/api"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
)

// TestInvalidUTF8NeverBreaksAnswers: a device whose NQN is not UTF-8 (one
// an older switch let in) and an event quoting it are answered over real
// gRPC with the text made valid, where gRPC used to fail the whole call
// ("string field contains invalid UTF-8") and end the event stream; the
// feed's own attribute map is not changed.
func TestInvalidUTF8NeverBreaksAnswers(t *testing.T) {
	const bad = "nqn.2014-08.org.example:\xff\xfe\x1b[2J"
	feed := api.NewFeed(api.FeedOptions{})
	attrs := map[string]string{"nqn": bad, "identity": "switch", "k\xff": "v"}
	feed.Publish(api.Event{Kind: "registration", Subject: "10.0.9.9", Message: "registered " + bad, Attributes: attrs})
	b, c := fabric(t, api.ServeOptions{Events: feed})
	devs := append(testDevices(), api.Device{Device: inof.Device{Addr: netip.MustParseAddr("10.0.9.9"), Role: inof.RoleTarget,
		Protocol: inof.ProtocolTCP, NQN: bad}, Switch: inof.MustParseRouterID("192.0.2.1"), Status: inof.Status{State: inof.StateActive}})
	b.SetDevices(devs...)

	resp, err := c.ListDevices(context.Background(), &inofv1.ListDevicesRequest{})
	if err != nil {
		t.Fatalf("ListDevices: %v", err)
	}
	found := false
	for _, d := range resp.GetDevices() {
		if d.GetAddress() == "10.0.9.9" {
			found = true
			if d.GetNqn() != inof.ValidUTF8(bad) {
				t.Errorf("NQN %q, want %q", d.GetNqn(), inof.ValidUTF8(bad))
			}
		}
	}
	if !found || len(resp.GetDevices()) != len(devs) {
		t.Errorf("%d devices, the hostile one found: %v", len(resp.GetDevices()), found)
	}
	evs := drain(t, c, &inofv1.WatchEventsRequest{})
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	e := evs[0]
	if !utf8.ValidString(e.GetMessage()) || e.GetAttributes()["nqn"] != inof.ValidUTF8(bad) || e.GetAttributes()["k\uFFFD"] != "v" {
		t.Errorf("event %+v", e)
	}
	if attrs["nqn"] != bad || attrs["k\xff"] != "v" {
		t.Errorf("the feed's map was changed: %q", attrs)
	}
}
