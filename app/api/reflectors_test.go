package api_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apitest"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/inof"
)

// TestListReflectors: the reflectors' clocks are compared with the serving
// reflector's wall clock; this one is marked refused by its peers only
// beyond inof.MaxGenerationSkew; a daemon without the view answers
// UNIMPLEMENTED.
func TestListReflectors(t *testing.T) {
	ctx := context.Background()
	b, c := fabric(t, api.ServeOptions{})
	apply(t, c, createZone("red", "10.0.0.1"))
	resp, err := c.ListReflectors(ctx, &inofv1.ListReflectorsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if rs := resp.GetReflectors(); len(rs) != 1 || !rs[0].GetSelf() || rs[0].GetRevision() != zoning(t, c).GetRevision() ||
		rs[0].GetGeneration() == 0 || rs[0].GetRefusedByPeers() || resp.GetMaxSkewMs() != inof.MaxGenerationSkew.Milliseconds() {
		t.Fatalf("one reflector: %v", resp)
	}

	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	rid := inof.MustParseRouterID
	b.SetReflectors(api.ReflectorsStatus{Now: now, Reflectors: []api.ReflectorStatus{
		{RouterID: rid("10.0.0.1"), Self: true, Generation: inof.GenerationAt(now.Add(inof.MaxGenerationSkew + time.Minute))},
		{RouterID: rid("10.0.0.2"), Address: "10.0.0.2", Generation: inof.GenerationAt(now.Add(time.Minute)) + 3, Writer: rid("10.0.0.3")},
		{Address: "10.0.0.4", Session: "active", Behind: 2},
	}})
	resp, err = c.ListReflectors(ctx, &inofv1.ListReflectorsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	rs := resp.GetReflectors()
	if len(rs) != 3 || !resp.GetNow().AsTime().Equal(now) {
		t.Fatalf("three reflectors: %v", resp)
	}
	if r := rs[0]; !r.GetRefusedByPeers() || r.GetAheadMs() != (inof.MaxGenerationSkew+time.Minute).Milliseconds() {
		t.Errorf("this reflector, 6 min ahead: %v", r)
	}
	if r := rs[1]; r.GetRefusedByPeers() || r.GetAheadMs() != time.Minute.Milliseconds() || r.GetWriter() != "10.0.0.3" ||
		!r.GetClock().AsTime().Equal(now.Add(time.Minute)) {
		t.Errorf("a peer 1 min ahead: %v", r)
	}
	if r := rs[2]; r.GetRouterId() != "" || r.GetClock() != nil || r.GetAheadMs() != 0 || r.GetBehindParts() != 2 || r.GetSession() != "active" {
		t.Errorf("a peer not heard from: %v", r)
	}

	_, sock := apitest.Serve(t, struct{ api.Backend }{b}, api.ServeOptions{})
	if _, err := dialUnix(t, sock).ListReflectors(ctx, &inofv1.ListReflectorsRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("a daemon without reflectors: %v", err)
	}
}
