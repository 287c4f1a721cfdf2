package l2proto

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/openinof/inof/inof"
)

// TestPortRateLimits: a flood of LLDPDUs or zone queries on one port is cut
// at the port's burst and rate, counted by reason, and what is dropped never
// reaches the registry or OnQuery; the bucket refills with time.
func TestPortRateLimits(t *testing.T) {
	queries := 0
	drops := NewDropCounter(slog.New(slog.NewTextHandler(io.Discard, nil)), 0)
	p := newTestPort(t, SwitchPortConfig{Drops: drops, OnQuery: func(string, ZoneQuery) { queries++ },
		Limits: PortLimits{Registrations: Rate{PerSecond: 2, Burst: 5}, Queries: Rate{PerSecond: 1, Burst: 3}}})
	reg := p.cfg.Registry
	lldp, err := LLDPFrame(hostMAC, lldpFor(hostIP, "snsd_eth0_01", 120, inof.RoleHost))
	if err != nil {
		t.Fatal(err)
	}
	query, err := MessageFrame(hostMAC, &Message{Version: Version1, Queries: []ZoneQuery{{Host: hostIP}}})
	if err != nil {
		t.Fatal(err)
	}
	dec := new(Decoder)
	now := time.Now().Add(time.Hour) // past the buckets' start: both full
	for range 100 {
		p.handle(dec, "sw1", lldp, now)
		p.handle(dec, "sw1", query, now)
	}
	c := drops.Counts()
	if c["rate-registrations"] != 95 || c["rate-queries"] != 97 || queries != 3 {
		t.Fatalf("flood: drops %v, %d queries answered", c, queries)
	}
	if st := reg.Stats(); st.Entries != 1 {
		t.Fatalf("registry %+v", st)
	}
	// Two seconds later: four more LLDPDUs and two more queries pass.
	later := now.Add(2 * time.Second)
	for range 10 {
		p.handle(dec, "sw1", lldp, later)
		p.handle(dec, "sw1", query, later)
	}
	if c := drops.Counts(); c["rate-registrations"] != 95+6 || c["rate-queries"] != 97+8 || queries != 5 {
		t.Fatalf("after refill: drops %v, %d queries answered", c, queries)
	}
}
