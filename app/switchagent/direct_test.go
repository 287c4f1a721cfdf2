package switchagent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apiclient"
	"github.com/openinof/inof/app/api/apitest"
	inofv1 "github.com/openinof/inof/app/api/v1"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/zones"
)

// directOptions makes a test switch a direct-mode one: no reflectors, no
// asn.
func directOptions(ports ...string) func(*Options) {
	return func(o *Options) { o.Reflectors, o.ASN, o.AccessPorts = nil, 0, ports }
}

// commit runs edit through the agent's API backend, starting again on a
// concurrent commit.
func commit(t *testing.T, b api.Backend, edit func(*zones.Tx) error) {
	t.Helper()
	for {
		_, err := b.Commit(context.Background(), edit)
		if errors.Is(err, zones.ErrConflict) {
			continue
		}
		if err != nil {
			t.Error(err)
		}
		return
	}
}

// TestDirectMode: a switch without reflectors keeps the zone store itself.
// Zoning committed through its API is in force when the commit returns:
// a host in the target's zone is told it is active, a host outside hears
// nothing until it joins (active) and the first host is told inactive
// with reason 4 when it leaves. Concurrent commits all land, in the
// store and in force alike, each journaled. The agent publishes nothing
// (its speaker is never started) and lists its own devices. A restart
// reopens the store: the zoning is back and nobody hears anything.
func TestDirectMode(t *testing.T) {
	f := bgp.NewFakeFabric()
	dir := t.TempDir()
	const id = "10.0.0.11"
	ports := []string{"p1", "p2", "p3"}
	near, far := memPorts(id, ports...)
	s := runSwitch(t, f, netip.Addr{}, id, dir, nil, directOptions(ports...), near)
	b := s.agent.API()
	tgt := inof.Device{Addr: netip.MustParseAddr("10.1.0.10"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420,
		NQN: "nqn.2014-08.org.example:t"}
	h1d := inof.Device{Addr: netip.MustParseAddr("10.1.0.21"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	h2d := inof.Device{Addr: netip.MustParseAddr("10.1.0.22"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	<-s.agent.Ready()
	member := func(d inof.Device) zones.Member { return zones.MustParseMember(d.Addr.String()) }
	commit(t, b, func(tx *zones.Tx) error { return tx.CreateZone("z1", member(tgt), member(h1d)) })
	if cfg := s.agent.config.Load(); cfg.Zones["z1"] == nil {
		t.Fatal("z1 not in force when the commit returned")
	}
	target := newSimHost(t, far["p1"], tgt)
	h1, h2 := newSimHost(t, far["p2"], h1d), newSimHost(t, far["p3"], h2d)
	target.register(120)
	h1.register(120)
	h2.register(120)
	h1.waitFor("h1 sees the target", last(tgt.Addr, inof.StateActive, inof.ReasonNone))

	commit(t, b, func(tx *zones.Tx) error { return tx.AddZoneMembers("z1", member(h2d)) })
	h2.waitFor("h2 joins z1", last(tgt.Addr, inof.StateActive, inof.ReasonNone))
	commit(t, b, func(tx *zones.Tx) error { return tx.RemoveZoneMembers("z1", member(h1d)) })
	h1.waitFor("h1 leaves z1", last(tgt.Addr, inof.StateInactive, inof.ReasonZoneChange))

	// Concurrent commits: every one lands, in the store and in force.
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			commit(t, b, func(tx *zones.Tx) error {
				return tx.CreateAlias(fmt.Sprintf("a%d", i), zones.MustParseMember(fmt.Sprintf("10.9.0.%d", i+1)))
			})
		}()
	}
	wg.Wait()
	if got, inForce := len(b.Config().Aliases), len(s.agent.config.Load().Aliases); got != n || inForce != n {
		t.Fatalf("aliases: %d in the store, %d in force, want %d", got, inForce, n)
	}
	journal, err := b.(api.JournalBackend).Journal(context.Background())
	if err != nil || len(journal) != 3+n {
		t.Fatalf("journal: %d entries (%v), want %d", len(journal), err, 3+n)
	}
	if sessions, err := b.Sessions(context.Background()); err != nil || len(sessions) != 0 {
		t.Errorf("sessions in direct mode: %v %v", sessions, err)
	}
	if err := s.agent.Healthy(); err != nil {
		t.Errorf("healthy: %v", err)
	}
	devs, err := b.Devices(context.Background())
	if err != nil || len(devs) != 3 {
		t.Errorf("devices: %+v %v", devs, err)
	}
	if _, direct := s.agent.fab.(*directFabric); !direct {
		t.Errorf("fabric side %T in direct mode", s.agent.fab)
	}
	s.waitSettled(t)
	time.Sleep(100 * time.Millisecond) // the last ACKs
	c1, c2 := h1.count(), h2.count()

	// Restart on the same state directory.
	s.stop()
	near2, far2 := memPorts(id, ports...)
	s2 := runSwitch(t, bgp.NewFakeFabric(), netip.Addr{}, id, dir, nil, directOptions(ports...), near2)
	<-s2.agent.Ready()
	if cfg := s2.agent.API().Config(); cfg.Zones["z1"] == nil || len(cfg.Aliases) != n {
		t.Fatalf("zoning after the restart: %+v", cfg)
	}
	h1b, h2b := newSimHost(t, far2["p2"], h1d), newSimHost(t, far2["p3"], h2d)
	newSimHost(t, far2["p1"], tgt).refresh(120)
	h1b.refresh(120)
	h2b.refresh(120)
	s2.waitSettled(t)
	time.Sleep(200 * time.Millisecond)
	if h1b.count()+h2b.count() != 0 {
		t.Errorf("notifications across the restart: h1 %v, h2 %v (before: %d, %d)", h1b.got, h2b.got, c1, c2)
	}
	commit(t, s2.agent.API(), func(tx *zones.Tx) error { return tx.AddZoneMembers("z1", member(h1d)) })
	h1b.waitFor("h1 back in z1 after the restart", last(tgt.Addr, inof.StateActive, inof.ReasonNone))
}

// TestFabricSwitchReadOnly: with reflectors the API backend takes no
// zoning edit and keeps no journal.
func TestFabricSwitchReadOnly(t *testing.T) {
	f := bgp.NewFakeFabric()
	ra := startReflector(t, f, "10.0.0.12")
	s := startSwitch(t, f, ra, "10.0.0.12", t.TempDir(), "p1")
	b := s.agent.API()
	if _, err := b.Commit(context.Background(), func(*zones.Tx) error { return nil }); !errors.Is(err, errReadOnly) {
		t.Fatalf("commit on a fabric switch: %v", err)
	}
	if _, ok := b.(api.JournalBackend); ok {
		t.Fatal("a fabric switch offers a journal")
	}
}

// TestDirectModeViewerCannotEdit: a direct-mode switch's API is the zone
// authority, so its roles hold there as on a reflector: over real gRPC on
// a unix socket, a viewer reads the zoning and the journal but cannot
// commit, roll back or take a backup, and nothing it tried is in force,
// in the store or in the journal.
func TestDirectModeViewerCannotEdit(t *testing.T) {
	f := bgp.NewFakeFabric()
	ports := []string{"p1"}
	near, _ := memPorts("10.0.0.11", ports...)
	s := runSwitch(t, f, netip.Addr{}, "10.0.0.11", t.TempDir(), nil, directOptions(ports...), near)
	<-s.agent.Ready()
	b := s.agent.API()
	commit(t, b, func(tx *zones.Tx) error { return tx.CreateZone("z1", zones.MustParseMember("10.1.0.10")) })
	_, sock := apitest.Serve(t, b, api.ServeOptions{UnixIdentities: []api.UnixIdentity{
		{User: strconv.Itoa(os.Getuid()), Name: "eve", Role: api.RoleViewer}}})
	conn, err := apiclient.Dial(apiclient.DialOptions{Server: "unix://" + sock})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := inofv1.NewFabricClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if z, err := c.GetZoning(ctx, &inofv1.GetZoningRequest{}); err != nil || len(z.GetZones()) != 1 {
		t.Fatalf("viewer reading the zoning: %v %v", z, err)
	}
	if _, err := c.ListJournal(ctx, &inofv1.ListJournalRequest{}); err != nil {
		t.Fatalf("viewer reading the journal: %v", err)
	}
	create := []*inofv1.Edit{{Edit: &inofv1.Edit_CreateZone{CreateZone: &inofv1.CreateZone{Name: "z2", Members: []string{"10.1.0.20"}}}}}
	for _, action := range []string{"commit", "rollback"} {
		if _, err := c.ApplyZoning(ctx, &inofv1.ApplyZoningRequest{Action: action, Edits: create}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("viewer %s: %v, want PermissionDenied", action, err)
		}
	}
	stream, err := c.Backup(ctx, &inofv1.BackupRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("viewer backup: %v, want PermissionDenied", err)
	}
	if cfg := b.Config(); cfg.Zones["z2"] != nil || s.agent.config.Load().Zones["z2"] != nil {
		t.Error("the viewer's zone is in the store or in force")
	}
	if j, err := b.(api.JournalBackend).Journal(ctx); err != nil || len(j) != 1 {
		t.Errorf("journal after the refused calls: %d entries (%v), want 1", len(j), err)
	}
}

// directPair runs a direct-mode switch, target tgt on port p1 (LLDP TTL
// ttl) and host hd on p2 in one zone, until hd has seen tgt and the
// switch settled, and stops it: its state directory is then ready for a
// restart (runSwitch with id, dir and ports).
func directPair(t *testing.T, ttl uint16) (dir, id string, ports []string, tgt, hd inof.Device) {
	t.Helper()
	id, dir, ports = "10.0.0.11", t.TempDir(), []string{"p1", "p2"}
	tgt = inof.Device{Addr: netip.MustParseAddr("10.1.0.10"), Role: inof.RoleTarget, Protocol: inof.ProtocolTCP, Port: 4420,
		NQN: "nqn.2014-08.org.example:t"}
	hd = inof.Device{Addr: netip.MustParseAddr("10.1.0.21"), Role: inof.RoleHost, Protocol: inof.ProtocolTCP}
	near, far := memPorts(id, ports...)
	s := runSwitch(t, bgp.NewFakeFabric(), netip.Addr{}, id, dir, nil, directOptions(ports...), near)
	<-s.agent.Ready()
	commit(t, s.agent.API(), func(tx *zones.Tx) error {
		return tx.CreateZone("z1", zones.MustParseMember(tgt.Addr.String()), zones.MustParseMember(hd.Addr.String()))
	})
	newSimHost(t, far["p1"], tgt).register(ttl)
	h := newSimHost(t, far["p2"], hd)
	h.register(120)
	h.waitFor("the host sees the target", last(tgt.Addr, inof.StateActive, inof.ReasonNone))
	s.waitSettled(t)
	s.stop()
	return dir, id, ports, tgt, hd
}

// TestRestartAfterDeadlinePassed: a switch down for longer than a
// target's TTL does not age the target out when it starts again (nobody
// read its LLDPDUs meanwhile): the restored registration gets one TTL
// from the restart, the target's next refresh takes it over, and the host
// in its zone hears nothing. Before, the saved deadline, already past,
// told the host reason 6 for a healthy target at once.
func TestRestartAfterDeadlinePassed(t *testing.T) {
	const ttl = 3
	dir, id, ports, tgt, hd := directPair(t, ttl)
	time.Sleep(ttl*time.Second + 500*time.Millisecond) // the saved deadline passes while the switch is down

	near2, far2 := memPorts(id, ports...)
	h2 := newSimHost(t, far2["p2"], hd)
	s2 := runSwitch(t, bgp.NewFakeFabric(), netip.Addr{}, id, dir, nil, directOptions(ports...), near2)
	<-s2.agent.Ready()
	newSimHost(t, far2["p1"], tgt).refresh(ttl)
	h2.refresh(120)
	s2.waitSettled(t)
	time.Sleep(200 * time.Millisecond) // any notification would be on its way
	if n := h2.count(); n != 0 {
		t.Fatalf("the host was told %d notification(s) across the restart: %v", n, h2.got)
	}
}
