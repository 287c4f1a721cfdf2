package bgp

import (
	"context"
	"fmt"

	api "github.com/osrg/gobgp/v3/api"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/openinof/inof/bgp/record"
)

// Publish implements Speaker.
func (g *GoBGP) Publish(ctx context.Context, r record.Record, rts ...record.RouteTarget) error {
	key, value, err := record.Encode(r, len(rts))
	if err != nil {
		return err
	}
	path, err := opaquePath(key, value, rts)
	if err != nil {
		return err
	}
	if err := g.addPath(ctx, path); err != nil {
		return fmt.Errorf("bgp: publish: %w", err)
	}
	g.published.Add(1)
	return nil
}

// Withdraw implements Speaker.
func (g *GoBGP) Withdraw(ctx context.Context, key []byte) error {
	nlri, err := anypb.New(&api.OpaqueNLRI{Key: key})
	if err != nil {
		return err
	}
	err = g.srv.DeletePath(ctx, &api.DeletePathRequest{Family: familyOpaque,
		Path: &api.Path{Family: familyOpaque, Nlri: nlri, IsWithdraw: true}})
	if err != nil {
		return fmt.Errorf("bgp: withdraw: %w", err)
	}
	g.withdrawn.Add(1)
	return nil
}

// Subscribe implements Speaker; AnyRT subscribes to every record.
func (g *GoBGP) Subscribe(ctx context.Context, rt record.RouteTarget) error {
	if err := g.addPath(ctx, g.membership(rt)); err != nil {
		return fmt.Errorf("bgp: subscribe %s: %w", rt, err)
	}
	return nil
}

// membership is the RT-constraint path of a subscription.
func (g *GoBGP) membership(rt record.RouteTarget) *api.Path {
	if rt == record.AnyRT {
		return rtcPath(0, nil)
	}
	return rtcPath(g.cfg.ASN, &rt)
}

// Unsubscribe implements Speaker.
func (g *GoBGP) Unsubscribe(ctx context.Context, rt record.RouteTarget) error {
	p := g.membership(rt)
	if err := g.srv.DeletePath(ctx, &api.DeletePathRequest{Family: familyRTC, Path: p}); err != nil {
		return fmt.Errorf("bgp: unsubscribe %s: %w", rt, err)
	}
	return nil
}

func (g *GoBGP) addPath(ctx context.Context, p *api.Path) error {
	_, err := g.srv.AddPath(ctx, &api.AddPathRequest{Path: p})
	return err
}

// isOpaque compares families by field (proto.Equal reflects, and this runs
// for every path).
func isOpaque(f *api.Family) bool {
	return f.GetAfi() == familyOpaque.Afi && f.GetSafi() == familyOpaque.Safi
}

// opaquePath builds the GoBGP path of one record: ORIGIN, MP_REACH (next
// hop 0.0.0.0) and the route targets.
func opaquePath(key, value []byte, rts []record.RouteTarget) (*api.Path, error) {
	nlri, err := anypb.New(&api.OpaqueNLRI{Key: key, Value: value})
	if err != nil {
		return nil, err
	}
	attrs, err := baseAttrs(familyOpaque, nlri)
	if err != nil {
		return nil, err
	}
	if len(rts) > 0 {
		ec := &api.ExtendedCommunitiesAttribute{}
		for _, rt := range rts {
			a, err := rtAny(rt)
			if err != nil {
				return nil, err
			}
			ec.Communities = append(ec.Communities, a)
		}
		a, err := anypb.New(ec)
		if err != nil {
			return nil, err
		}
		attrs = append(attrs, a)
	}
	return &api.Path{Family: familyOpaque, Nlri: nlri, Pattrs: attrs}, nil
}

func baseAttrs(f *api.Family, nlri *anypb.Any) ([]*anypb.Any, error) {
	origin, err := anypb.New(&api.OriginAttribute{Origin: 0})
	if err != nil {
		return nil, err
	}
	mp, err := anypb.New(&api.MpReachNLRIAttribute{Family: f, NextHops: []string{"0.0.0.0"}, Nlris: []*anypb.Any{nlri}})
	if err != nil {
		return nil, err
	}
	return []*anypb.Any{origin, mp}, nil
}

// rtcPath builds an RT-constraint membership path; rt nil is the default
// route target (every route target).
func rtcPath(asn uint32, rt *record.RouteTarget) *api.Path {
	m := &api.RouteTargetMembershipNLRI{Asn: asn}
	if rt != nil {
		a, err := rtAny(*rt)
		if err != nil {
			panic(err) // both message types are always registered
		}
		m.Rt = a
	}
	nlri, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	attrs, err := baseAttrs(familyRTC, nlri)
	if err != nil {
		panic(err)
	}
	return &api.Path{Family: familyRTC, Nlri: nlri, Pattrs: attrs}
}

func rtAny(rt record.RouteTarget) (*anypb.Any, error) {
	if rt.Global <= 0xFFFF {
		return anypb.New(&api.TwoOctetAsSpecificExtended{IsTransitive: true, SubType: 0x02, Asn: rt.Global, LocalAdmin: rt.Local})
	}
	return anypb.New(&api.FourOctetAsSpecificExtended{IsTransitive: true, SubType: 0x02, Asn: rt.Global, LocalAdmin: rt.Local & 0xFFFF})
}
