package bgp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/openinof/inof/bgp/record"
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
// configuration to the other clients. (GoBGP's policies cannot look into
// an opaque key, so a client's configuration-typed record under another
// route target is reflected; every switch refuses it for lacking the
// configuration route target, and the reflector quarantines its sender.)
//
// Every record a client sends gets the client's session address as its
// next hop (import action "peer-address"): a client cannot forge it, and a
// switch peers from its router-id, so a receiver checks that the switch a
// device record's key names is the one that sent it (docs/security.md).
//
// A quarantined client (Quarantine) has every record refused by the first
// import statement; its session stays up.
//
// A silent client (clientloss.go: its session ended while BFD still sees
// it) has its records, kept stale by graceful restart, imported with a
// lower LOCAL_PREF (demotedLocalPref), so that at the other switches
// another reflector's fresh copies win over them and they serve only where
// no other copy is left.
//
// Clients marked NoDefaultRT do not get the default route-target membership.
//
// Switch records (record.Switch, route target record.SwitchInfoRT) are exported to
// no neighbor: a reflector reads them from its Adj-RIB-In.
//
// GoBGP treats an empty neighbor set as "match every neighbor", so each set
// always holds the sentinel 0.0.0.0/32, which no neighbor can have.

const (
	setPeerReflectors = "inof-peer-reflectors"
	setNoDefaultRT    = "inof-no-default-rt"
	setConfigRT       = "inof-config-rt"
	setQuarantine     = "inof-quarantine"
	setSilent         = "inof-silent-clients"
	setSwitchRT       = "inof-switch-rt"
	policyExport      = "inof-reflector-export"
	policyImport      = "inof-reflector-import"
	sentinelNeighbor  = "0.0.0.0/32"
	// demotedLocalPref is the LOCAL_PREF of a silent client's records
	// (GoBGP's default, which every other record has, is 100).
	demotedLocalPref = 50
)

// policies keeps a reflector's policies and neighbor sets in GoBGP: it
// installs them at start (definePolicies) and moves neighbors in and out
// of the sets (the speaker for its options and the quarantine, clientLoss
// for the silent set).
type policies struct {
	gobgp func() policyAPI
	asn   uint32
}

// policyAPI is what policies calls of GoBGP's API (its *server.BgpServer).
type policyAPI interface {
	AddDefinedSet(context.Context, *api.AddDefinedSetRequest) error
	DeleteDefinedSet(context.Context, *api.DeleteDefinedSetRequest) error
	AddPolicy(context.Context, *api.AddPolicyRequest) error
	AddPolicyAssignment(context.Context, *api.AddPolicyAssignmentRequest) error
	ResetPeer(context.Context, *api.ResetPeerRequest) error
}

func (ps *policies) definePolicies(ctx context.Context) error {
	rt := record.ConfigRT(ps.asn)
	sets := []*api.DefinedSet{
		{DefinedType: api.DefinedType_NEIGHBOR, Name: setPeerReflectors, List: []string{sentinelNeighbor}},
		{DefinedType: api.DefinedType_NEIGHBOR, Name: setNoDefaultRT, List: []string{sentinelNeighbor}},
		{DefinedType: api.DefinedType_NEIGHBOR, Name: setQuarantine, List: []string{sentinelNeighbor}},
		{DefinedType: api.DefinedType_NEIGHBOR, Name: setSilent, List: []string{sentinelNeighbor}},
		{DefinedType: api.DefinedType_EXT_COMMUNITY, Name: setConfigRT, List: []string{fmt.Sprintf("rt:^%d:%d$", rt.Global, rt.Local)}},
		{DefinedType: api.DefinedType_EXT_COMMUNITY, Name: setSwitchRT, List: []string{fmt.Sprintf("rt:^%d:%d$", record.SwitchInfoRT.Global, record.SwitchInfoRT.Local)}},
	}
	for _, s := range sets {
		if err := ps.gobgp().AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: s}); err != nil {
			return fmt.Errorf("bgp: defined set %s: %w", s.Name, err)
		}
	}
	peers := &api.MatchSet{Type: api.MatchSet_ANY, Name: setPeerReflectors}
	stmt := func(name string, c *api.Conditions, action api.RouteAction) *api.Statement {
		return &api.Statement{Name: name, Conditions: c, Actions: &api.Actions{RouteAction: action}}
	}
	export := &api.Policy{Name: policyExport, Statements: []*api.Statement{
		// Switch records are for the reflectors alone.
		stmt(policyExport+"-no-switch-records", &api.Conditions{AfiSafiIn: []*api.Family{familyOpaque},
			ExtCommunitySet: &api.MatchSet{Type: api.MatchSet_ANY, Name: setSwitchRT}}, api.RouteAction_REJECT),
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
		stmt(policyImport+"-quarantine", &api.Conditions{AfiSafiIn: []*api.Family{familyOpaque},
			NeighborSet: &api.MatchSet{Type: api.MatchSet_ANY, Name: setQuarantine}}, api.RouteAction_REJECT),
		stmt(policyImport+"-no-relay", &api.Conditions{NeighborSet: peers, AfiSafiIn: []*api.Family{familyOpaque}},
			api.RouteAction_REJECT),
		// A silent client's records lose to other reflectors' copies; the
		// policy goes on.
		{Name: policyImport + "-silent", Conditions: &api.Conditions{AfiSafiIn: []*api.Family{familyOpaque},
			NeighborSet: &api.MatchSet{Type: api.MatchSet_ANY, Name: setSilent}},
			Actions: &api.Actions{LocalPref: &api.LocalPrefAction{Value: demotedLocalPref}}},
		// Configuration comes from reflectors only: a client's record with
		// the configuration route target is never reflected to the others.
		stmt(policyImport+"-no-client-config", &api.Conditions{AfiSafiIn: []*api.Family{familyOpaque},
			RouteType:       api.Conditions_ROUTE_TYPE_INTERNAL,
			ExtCommunitySet: &api.MatchSet{Type: api.MatchSet_ANY, Name: setConfigRT}}, api.RouteAction_REJECT),
		// What is left is a client's record: its next hop becomes the
		// client's session address, and the policy goes on (accept).
		{Name: policyImport + "-origin", Conditions: &api.Conditions{AfiSafiIn: []*api.Family{familyOpaque},
			RouteType: api.Conditions_ROUTE_TYPE_INTERNAL},
			Actions: &api.Actions{Nexthop: &api.NexthopAction{PeerAddress: true}}},
	}}
	for _, p := range []*api.Policy{export, imp} {
		if err := ps.gobgp().AddPolicy(ctx, &api.AddPolicyRequest{Policy: p}); err != nil {
			return fmt.Errorf("bgp: policy %s: %w", p.Name, err)
		}
	}
	for dir, name := range map[api.PolicyDirection]string{api.PolicyDirection_EXPORT: policyExport, api.PolicyDirection_IMPORT: policyImport} {
		err := ps.gobgp().AddPolicyAssignment(ctx, &api.AddPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
			Name: "global", Direction: dir, Policies: []*api.Policy{{Name: name}}, DefaultAction: api.RouteAction_ACCEPT}})
		if err != nil {
			return fmt.Errorf("bgp: assign %s: %w", name, err)
		}
	}
	return nil
}

// setNeighborSets adds (or removes) the neighbor to the policy sets its
// options call for.
func (ps *policies) setNeighborSets(ctx context.Context, n Neighbor, add bool) error {
	for _, s := range []struct {
		name string
		in   bool
	}{{setPeerReflectors, n.PeerReflector}, {setNoDefaultRT, n.NoDefaultRT}} {
		if !s.in {
			continue
		}
		if err := ps.neighborSet(ctx, s.name, n.Address, add); err != nil {
			return err
		}
	}
	return nil
}

func hostPrefix(a netip.Addr) string { return netip.PrefixFrom(a, a.BitLen()).String() }

// demoteClient puts a client into the silent set (or takes it out) and
// applies the import policy again to what it sent.
func (ps *policies) demoteClient(ctx context.Context, addr netip.Addr, on bool) error {
	if err := ps.neighborSet(ctx, setSilent, addr, on); err != nil {
		return err
	}
	if err := ps.gobgp().ResetPeer(ctx, &api.ResetPeerRequest{Address: addr.String(), Soft: true,
		Direction: api.ResetPeerRequest_IN}); err != nil {
		return fmt.Errorf("bgp: silent set %s: re-applying the import policy: %w", addr, err)
	}
	return nil
}

// neighborSet adds addr to the neighbor set name or removes it.
func (ps *policies) neighborSet(ctx context.Context, name string, addr netip.Addr, add bool) error {
	set := &api.DefinedSet{DefinedType: api.DefinedType_NEIGHBOR, Name: name, List: []string{hostPrefix(addr)}}
	var err error
	if add {
		err = ps.gobgp().AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: set})
	} else {
		err = ps.gobgp().DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: set})
	}
	if err != nil {
		return fmt.Errorf("bgp: neighbor set %s: %w", name, err)
	}
	return nil
}

// Quarantine implements Speaker: the neighbor enters (or leaves) the
// quarantine set, and its received records go through the import policy
// again, so what it sent is withdrawn (or accepted again) at once.
func (g *GoBGP) Quarantine(ctx context.Context, addr netip.Addr, on bool) error {
	if g.cfg.Role != RoleReflector {
		return errors.New("bgp: quarantine is a reflector's")
	}
	if err := g.policies.neighborSet(ctx, setQuarantine, addr, on); err != nil {
		return fmt.Errorf("bgp: quarantine %s: %w", addr, err)
	}
	if err := g.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: addr.String(), Soft: true,
		Direction: api.ResetPeerRequest_IN}); err != nil {
		return fmt.Errorf("bgp: quarantine %s: re-applying the import policy: %w", addr, err)
	}
	return nil
}
