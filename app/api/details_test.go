package api_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/openinof/inof/app/api"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
)

// GetDevice names every switch that reports an address (the shown one
// first), with each one's port, state and times; ListDevices shows the
// shown report's port; the visibility and the kept events come along.
func TestGetDevice(t *testing.T) {
	feed := api.NewFeed(api.FeedOptions{})
	b, c := fabric(t, api.ServeOptions{Events: feed})
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	rep := func(addr, sw, port string, role inof.Role, st inof.State, r inof.Reason, changed time.Time) api.Device {
		return inof.Report{Device: inof.Device{Addr: netip.MustParseAddr(addr), Role: role, Protocol: inof.ProtocolTCP},
			Switch: inof.MustParseRouterID(sw), Status: inof.Status{State: st, Reason: r, Changed: changed},
			AccessPort: port, Since: t0}
	}
	reports := []api.Device{
		rep("10.0.0.1", "192.0.2.1", "Ethernet4", inof.RoleHost, inof.StateActive, 0, t0),
		rep("10.0.1.1", "192.0.2.2", "Ethernet8", inof.RoleTarget, inof.StateInactive, inof.ReasonLinkDown, t0.Add(time.Minute)),
		rep("10.0.1.1", "192.0.2.1", "Ethernet0", inof.RoleTarget, inof.StateActive, 0, t0.Add(time.Second)),
	}
	b.SetReports(reports...)
	b.SetDevices(api.Shown(reports)...)
	b.SetHeld(map[inof.RouterID]time.Time{inof.MustParseRouterID("192.0.2.2"): t0.Add(time.Hour)})
	feed.Publish(api.Event{Kind: "record", Subject: "10.0.1.1", Message: "device joined"})
	feed.Publish(api.Event{Kind: "record", Subject: "10.0.0.1", Message: "other"})
	ctx := context.Background()

	list, err := c.ListDevices(ctx, &inofv1.ListDevicesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]string{}
	for _, d := range list.GetDevices() {
		ports[d.GetAddress()] = d.GetAccessPort()
	}
	if ports["10.0.0.1"] != "Ethernet4" || ports["10.0.1.1"] != "Ethernet0" {
		t.Errorf("ListDevices ports %v: want 10.0.0.1 on Ethernet4, 10.0.1.1 on Ethernet0 (the active report)", ports)
	}

	d, err := c.GetDevice(ctx, &inofv1.GetDeviceRequest{Address: "10.0.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	if d.GetDevice().GetSwitch() != "192.0.2.1" || d.GetDevice().GetAccessPort() != "Ethernet0" {
		t.Errorf("device %v: want the active report of 192.0.2.1 on Ethernet0", d.GetDevice())
	}
	rs := d.GetReports()
	if len(rs) != 2 || !rs[0].GetShown() || rs[0].GetSwitch() != "192.0.2.1" || rs[1].GetSwitch() != "192.0.2.2" ||
		rs[1].GetShown() || rs[1].GetActive() || rs[1].GetReason() != "link-down" || rs[1].GetAccessPort() != "Ethernet8" ||
		!rs[1].GetSince().AsTime().Equal(t0.Add(time.Minute)) || !rs[1].GetHeldUntil().AsTime().Equal(t0.Add(time.Hour)) ||
		!rs[0].GetFirstSeen().AsTime().Equal(t0) || rs[0].GetHeldUntil() != nil {
		t.Errorf("reports %v: want the shown 192.0.2.1 first, then 192.0.2.2 link-down on Ethernet8, held", rs)
	}
	if v := d.GetVisibility(); len(v) != 1 || v[0].GetHost() != "10.0.0.1" || !v[0].GetVisible() {
		t.Errorf("visibility %v: want host 10.0.0.1 seeing it (default zone)", v)
	}
	if ev := d.GetEvents(); len(ev) != 1 || ev[0].GetMessage() != "device joined" {
		t.Errorf("events %v: want the one about 10.0.1.1", ev)
	}
	_, err = c.GetDevice(ctx, &inofv1.GetDeviceRequest{Address: "10.9.9.9"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("unknown device: %v, want NotFound", err)
	}
	_, err = c.GetDevice(ctx, &inofv1.GetDeviceRequest{Address: "bogus"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad address: %v, want InvalidArgument", err)
	}
}

// GetSession joins a BGP session with its BFD session and the peer's
// kept session events; the details ListSessions carries pass through.
func TestGetSession(t *testing.T) {
	feed := api.NewFeed(api.FeedOptions{})
	b, c := fabric(t, api.ServeOptions{Events: feed})
	since := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	b.SetSessions([]api.Session{
		{Peer: "192.0.2.1", Kind: "client", State: "established", Since: since, Received: 3, Advertised: 7,
			RouterID: "192.0.2.1", LocalAddress: "192.0.2.254", HoldTime: 9 * time.Second, Keepalive: 3 * time.Second,
			Passive: true, EndOfRIB: true, BFD: true},
		{Peer: "192.0.2.2", Kind: "client", State: "active"},
	}, []api.BFDSession{{Peer: "192.0.2.1", Local: "192.0.2.254", State: "up", TxInterval: 100 * time.Millisecond,
		RxInterval: 100 * time.Millisecond, DetectMult: 3}})
	feed.Publish(api.Event{Kind: "session", Subject: "192.0.2.1", Message: "BGP session with client 192.0.2.1 lost (now active)"})
	feed.Publish(api.Event{Kind: "record", Subject: "192.0.2.1", Message: "not a session event"})
	feed.Publish(api.Event{Kind: "session", Subject: "192.0.2.2", Message: "another peer"})
	ctx := context.Background()
	d, err := c.GetSession(ctx, &inofv1.GetSessionRequest{Peer: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	s := d.GetSession()
	if s.GetRouterId() != "192.0.2.1" || s.GetLocalAddress() != "192.0.2.254" || s.GetHoldTimeMs() != 9000 ||
		s.GetKeepaliveMs() != 3000 || !s.GetPassive() || !s.GetEndOfRib() || !s.GetBfd() || s.GetAdvertised() != 7 {
		t.Errorf("session %v: details lost", s)
	}
	if d.GetBfd().GetState() != "up" || d.GetBfd().GetDetectMult() != 3 {
		t.Errorf("bfd %v: want the up session", d.GetBfd())
	}
	if ev := d.GetEvents(); len(ev) != 1 || ev[0].GetKind() != "session" || ev[0].GetSubject() != "192.0.2.1" {
		t.Errorf("events %v: want the one session event of 192.0.2.1", ev)
	}
	d, err = c.GetSession(ctx, &inofv1.GetSessionRequest{Peer: "192.0.2.2"})
	if err != nil || d.GetBfd() != nil || d.GetSession().GetState() != "active" {
		t.Errorf("session without BFD: %v, %v", d, err)
	}
	if _, err := c.GetSession(ctx, &inofv1.GetSessionRequest{Peer: "192.0.2.9"}); status.Code(err) != codes.NotFound {
		t.Errorf("unknown peer: %v, want NotFound", err)
	}
}

// WatchEvents keeps only the events that pass the kind, subject and since
// filters.
func TestWatchEventsFilters(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	feed := api.NewFeed(api.FeedOptions{Now: func() time.Time { return now }})
	_, c := fabric(t, api.ServeOptions{Events: feed})
	feed.Publish(api.Event{Kind: "record", Subject: "a", Time: now.Add(-time.Hour)})
	feed.Publish(api.Event{Kind: "session", Subject: "a"})
	feed.Publish(api.Event{Kind: "record", Subject: "b"})
	feed.Publish(api.Event{Kind: "zoning", Subject: "a"})
	for _, tc := range []struct {
		req  *inofv1.WatchEventsRequest
		want string
	}{
		{&inofv1.WatchEventsRequest{}, "a a b a "},
		{&inofv1.WatchEventsRequest{Kinds: []string{"record"}}, "a b "},
		{&inofv1.WatchEventsRequest{Kinds: []string{"record", "zoning"}, Subject: "a"}, "a a "},
		{&inofv1.WatchEventsRequest{Subject: "a", Since: timestamppb.New(now.Add(-time.Minute))}, "a a "},
		{&inofv1.WatchEventsRequest{Since: timestamppb.New(now.Add(time.Minute))}, ""},
	} {
		if got := subjects(drain(t, c, tc.req)); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.req, got, tc.want)
		}
	}
}
