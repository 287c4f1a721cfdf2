package bgp

import (
	"context"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v3/api"
)

// Reflector policies (docs/design.md §3), installed once at start.
//
// Client records must never cross between reflectors (GoBGP leaves ghost
// routes when a best path moves to a copy learned from another reflector),
// so toward peer reflectors a reflector exports only the configuration
// records it originates itself (local, with the fabric-wide configuration
// route target) and its own route-target memberships; each reject is scoped
// to its family, or the default route target would be rejected too. Opaque
// records received from a peer reflector are kept out of the Loc-RIB by the
// import policy, so they are never reflected to clients; the configuration
// replicator reads them from the Adj-RIB-In and re-originates what is newer.
//
// Configuration records come from reflectors only: the import policy keeps
// any received record with the configuration route target out of the
// Loc-RIB (a peer reflector's are out already), so a client cannot push
// configuration to the other clients.
//
// Clients marked NoDefaultRT do not get the default route-target membership.
//
// GoBGP treats an empty neighbor set as "match every neighbor", so each set
// always holds the sentinel 0.0.0.0/32, which no neighbor can have.

const (
	setPeerReflectors = "inof-peer-reflectors"
	setNoDefaultRT    = "inof-no-default-rt"
	setConfigRT       = "inof-config-rt"
	policyExport      = "inof-reflector-export"
	policyImport      = "inof-reflector-import"
	sentinelNeighbor  = "0.0.0.0/32"
)

func (g *GoBGP) definePolicies(ctx context.Context) error {
	rt := ConfigRT(g.cfg.ASN)
	sets := []*api.DefinedSet{
		{DefinedType: api.DefinedType_NEIGHBOR, Name: setPeerReflectors, List: []string{sentinelNeighbor}},
		{DefinedType: api.DefinedType_NEIGHBOR, Name: setNoDefaultRT, List: []string{sentinelNeighbor}},
		{DefinedType: api.DefinedType_EXT_COMMUNITY, Name: setConfigRT, List: []string{fmt.Sprintf("rt:^%d:%d$", rt.Global, rt.Local)}},
	}
	for _, s := range sets {
		if err := g.srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: s}); err != nil {
			return fmt.Errorf("bgp: defined set %s: %w", s.Name, err)
		}
	}
	peers := &api.MatchSet{Type: api.MatchSet_ANY, Name: setPeerReflectors}
	stmt := func(name string, c *api.Conditions, action api.RouteAction) *api.Statement {
		return &api.Statement{Name: name, Conditions: c, Actions: &api.Actions{RouteAction: action}}
	}
	export := &api.Policy{Name: policyExport, Statements: []*api.Statement{
		stmt(policyExport+"-no-default-rt", &api.Conditions{
			NeighborSet: &api.MatchSet{Type: api.MatchSet_ANY, Name: setNoDefaultRT},
			AfiSafiIn:   []*api.Family{familyRTC}, RouteType: api.Conditions_ROUTE_TYPE_LOCAL}, api.RouteAction_REJECT),
		stmt(policyExport+"-own-config", &api.Conditions{NeighborSet: peers, AfiSafiIn: []*api.Family{familyOpaque},
			RouteType:       api.Conditions_ROUTE_TYPE_LOCAL,
			ExtCommunitySet: &api.MatchSet{Type: api.MatchSet_ANY, Name: setConfigRT}}, api.RouteAction_ACCEPT),
		stmt(policyExport+"-no-records", &api.Conditions{NeighborSet: peers, AfiSafiIn: []*api.Family{familyOpaque}},
			api.RouteAction_REJECT),
		stmt(policyExport+"-no-client-rtc", &api.Conditions{NeighborSet: peers, AfiSafiIn: []*api.Family{familyRTC},
			RouteType: api.Conditions_ROUTE_TYPE_INTERNAL}, api.RouteAction_REJECT),
	}}
	imp := &api.Policy{Name: policyImport, Statements: []*api.Statement{
		stmt(policyImport+"-no-relay", &api.Conditions{NeighborSet: peers, AfiSafiIn: []*api.Family{familyOpaque}},
			api.RouteAction_REJECT),
		// Configuration comes from reflectors only: a client's record with
		// the configuration route target is never reflected to the others.
		stmt(policyImport+"-no-client-config", &api.Conditions{AfiSafiIn: []*api.Family{familyOpaque},
			RouteType:       api.Conditions_ROUTE_TYPE_INTERNAL,
			ExtCommunitySet: &api.MatchSet{Type: api.MatchSet_ANY, Name: setConfigRT}}, api.RouteAction_REJECT),
	}}
	for _, p := range []*api.Policy{export, imp} {
		if err := g.srv.AddPolicy(ctx, &api.AddPolicyRequest{Policy: p}); err != nil {
			return fmt.Errorf("bgp: policy %s: %w", p.Name, err)
		}
	}
	for dir, name := range map[api.PolicyDirection]string{api.PolicyDirection_EXPORT: policyExport, api.PolicyDirection_IMPORT: policyImport} {
		err := g.srv.AddPolicyAssignment(ctx, &api.AddPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
			Name: "global", Direction: dir, Policies: []*api.Policy{{Name: name}}, DefaultAction: api.RouteAction_ACCEPT}})
		if err != nil {
			return fmt.Errorf("bgp: assign %s: %w", name, err)
		}
	}
	return nil
}

// setNeighborSets adds (or removes) the neighbor to the policy sets its
// options call for.
func (g *GoBGP) setNeighborSets(ctx context.Context, n Neighbor, add bool) error {
	for _, s := range []struct {
		name string
		in   bool
	}{{setPeerReflectors, n.PeerReflector}, {setNoDefaultRT, n.NoDefaultRT}} {
		if !s.in {
			continue
		}
		set := &api.DefinedSet{DefinedType: api.DefinedType_NEIGHBOR, Name: s.name, List: []string{hostPrefix(n.Address)}}
		var err error
		if add {
			err = g.srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: set})
		} else {
			err = g.srv.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: set})
		}
		if err != nil {
			return fmt.Errorf("bgp: neighbor set %s: %w", s.name, err)
		}
	}
	return nil
}

func hostPrefix(a netip.Addr) string { return netip.PrefixFrom(a, a.BitLen()).String() }
