package table

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/bgp/bgptest"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// slowPublisher delays every send a little, so that changes arrive while
// a set record is in flight and group commit batches them.
type slowPublisher struct {
	RecordPublisher
	rnd func() time.Duration
}

func (s slowPublisher) Publish(ctx context.Context, r record.Record, rts ...record.RouteTarget) error {
	time.Sleep(s.rnd())
	return s.RecordPublisher.Publish(ctx, r, rts...)
}

func (s slowPublisher) Withdraw(ctx context.Context, key []byte) error {
	time.Sleep(s.rnd())
	return s.RecordPublisher.Withdraw(ctx, key)
}

// propertyFabric is one fake fabric of the property test: a publishing
// switch and receivers with different subscriptions.
type propertyFabric struct {
	pub       *devNode
	receivers []*devNode
}

func newPropertyFabric(t *testing.T, subs [][]record.RouteTarget) propertyFabric {
	clients := map[string][]record.RouteTarget{"127.0.0.2": nil}
	for i, rts := range subs {
		clients[fmt.Sprintf("127.0.0.%d", i+3)] = rts
	}
	cs := fakeStar(t, clients)
	pf := propertyFabric{pub: cs["127.0.0.2"]}
	for i := range subs {
		pf.receivers = append(pf.receivers, cs[fmt.Sprintf("127.0.0.%d", i+3)])
	}
	return pf
}

// TestPropertySetsMatchPerDevice: any sequence of device changes (state
// changes, zone moves that add or drop route targets, withdraws, publisher
// restarts with saved epochs) published through device sets, with shards
// small enough to split and merge and sends slow enough to batch, leaves
// every receiver with the same device table as per-device publication of
// the same sequence; and no receiver of the sets ever sees a device
// vanish (the sign of a lost switch) unless it was withdrawn while active.
func TestPropertySetsMatchPerDevice(t *testing.T) {
	seeds, ops := 12, 160
	if testing.Short() {
		seeds = 3
	}
	var splits, merges uint64
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			st := runSetProperty(t, uint64(seed), ops)
			splits, merges = splits+st.Splits, merges+st.Merges
		})
	}
	if splits == 0 || merges == 0 {
		t.Fatalf("%d shard splits and %d merges in every run: the test no longer covers them", splits, merges)
	}
}

func runSetProperty(t *testing.T, seed uint64, ops int) SetPublisherStats {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 26))
	zones := []record.RouteTarget{record.ZoneRT(bgptest.ASN, "red"), record.ZoneRT(bgptest.ASN, "blue"), record.ZoneRT(bgptest.ASN, "green"), record.ZoneRT(bgptest.ASN, "yellow")}
	subs := [][]record.RouteTarget{{zones[0]}, {zones[1]}, {zones[0], zones[1]}, {zones[2]}, zones, {record.AnyRT}}
	per, sets := newPropertyFabric(t, subs), newPropertyFabric(t, subs)
	const sw = inof.RouterID(0x7f000002)

	perPub, err := NewDevicePublisher(DevicePublisherOptions{Speaker: per.pub})
	if err != nil {
		t.Fatal(err)
	}
	slow := slowPublisher{RecordPublisher: sets.pub, rnd: func() time.Duration { return time.Duration(rand.IntN(300)) * time.Microsecond }}
	// Half the seeds space a shard's sends (group commit over an
	// interval, as switches run it), the others send as soon as they can.
	spacing := time.Duration(seed%2) * time.Millisecond
	newSetPub := func(clock *inof.Clock) *SetPublisher {
		p, err := NewSetPublisher(SetPublisherOptions{Speaker: slow, Switch: sw, Clock: clock, MaxRecord: 420, MinInterval: spacing})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	setPub := newSetPub(nil)
	t.Cleanup(func() { setPub.Close() })

	const devices = 14
	last := map[record.DeviceID]inof.State{} // what each published device was last published as
	mayVanish := map[record.DeviceID]bool{}
	marker := *bgptest.Device(sw, 999)
	checkpoints := 0
	var splits, merges uint64 // of publishers before a restart
	var trace []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(strings.Join(trace, "\n"))
		}
	})
	checkpoint := func() {
		t.Helper()
		if err := setPub.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		checkpoints++
		marker.Device.Port = uint16(checkpoints)
		if err := perPub.Publish(ctx, marker, zones...); err != nil {
			t.Fatal(err)
		}
		if err := setPub.Publish(ctx, marker, zones...); err != nil {
			t.Fatal(err)
		}
		for i := range subs {
			for _, n := range []*devNode{per.receivers[i], sets.receivers[i]} {
				n.dev.waitFor(t, "marker", func(tb *DeviceTable) bool {
					m, ok := tb.Get(marker.ID())
					return ok && m.Device.Port == marker.Device.Port
				})
			}
			want, got := withoutEpochs(per.receivers[i].dev.table.Records()), withoutEpochs(sets.receivers[i].dev.table.Records())
			if !slices.EqualFunc(want, got, func(a, b record.Device) bool { return sameRecord(a, b) }) {
				t.Fatalf("receiver %d (%v), checkpoint %d:\n per-device %s\n sets       %s", i, subs[i], checkpoints, summary(want), summary(got))
			}
		}
	}

	for op := range ops {
		i := rng.IntN(devices)
		rec := *bgptest.Device(sw, i)
		id := rec.ID()
		switch k := rng.IntN(20); {
		case k < 13: // publish: a state, some zones, strings of some length
			rec.AccessPort = "swp" + strings.Repeat("x", rng.IntN(24))
			rec.Device.NQN = fmt.Sprintf("nqn.2014-08.org.example:%s%d", strings.Repeat("n", rng.IntN(40)), i)
			rec.Changed = time.UnixMilli(int64(3000 + op))
			if rng.IntN(3) == 0 {
				rec.State, rec.Reason = inof.StateInactive, []inof.Reason{inof.ReasonLinkDown, inof.ReasonAgeOut}[rng.IntN(2)]
			}
			var rts []record.RouteTarget
			if rng.IntN(3) > 0 { // most devices in two popular sets, so shards fill and empty
				rts = [][]record.RouteTarget{{zones[0]}, {zones[0], zones[1]}}[rng.IntN(2)]
			}
			for len(rts) == 0 {
				for _, z := range zones {
					if rng.IntN(3) == 0 {
						rts = append(rts, z)
					}
				}
			}
			if err := perPub.Publish(ctx, rec, rts...); err != nil {
				t.Fatal(err)
			}
			if err := setPub.Publish(ctx, rec, rts...); err != nil {
				t.Fatal(err)
			}
			last[id] = rec.State
			trace = append(trace, fmt.Sprintf("%d publish %s %s/%s %v", op, id.Addr, rec.State, rec.Reason, rts))
		case k < 17: // withdraw
			if st, ok := last[id]; ok && st == inof.StateActive {
				mayVanish[id] = true
			}
			delete(last, id)
			trace = append(trace, fmt.Sprintf("%d withdraw %s", op, id.Addr))
			if err := perPub.Withdraw(ctx, id); err != nil {
				t.Fatal(err)
			}
			if err := setPub.Withdraw(ctx, id); err != nil {
				t.Fatal(err)
			}
		case k < 18: // restart both publishers from what they saved, with clocks behind
			trace = append(trace, fmt.Sprintf("%d restart", op))
			if err := setPub.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			savedPer, savedSets := perPub.Published(), setPub.Published()
			st := setPub.Stats()
			splits, merges = splits+st.Splits, merges+st.Merges
			setPub.Close()
			behind := func() *inof.Clock { return inof.NewClock(func() time.Time { return time.UnixMilli(1) }) }
			if perPub, err = NewDevicePublisher(DevicePublisherOptions{Speaker: per.pub, Clock: behind()}); err != nil {
				t.Fatal(err)
			}
			if err := perPub.Republish(ctx, savedPer); err != nil {
				t.Fatal(err)
			}
			setPub = newSetPub(behind())
			if err := setPub.Republish(ctx, savedSets); err != nil {
				t.Fatal(err)
			}
		default:
			checkpoint()
		}
	}
	checkpoint()
	for i, n := range sets.receivers {
		for id, chs := range n.dev.historyCopy() {
			for _, ch := range chs {
				if ch.Vanished && !mayVanish[id] {
					t.Fatalf("receiver %d (%v) saw %s vanish, never withdrawn while active: %s", i, subs[i], id.Addr, changeSummary(chs))
				}
			}
		}
	}
	st := setPub.Stats()
	st.Splits, st.Merges = st.Splits+splits, st.Merges+merges
	t.Logf("seed %d: %d changes in %d set records and %d withdraws; %d splits, %d merges; %d sets, %d shards now",
		seed, st.Changes, st.Updates, st.Withdraws, st.Splits, st.Merges, st.Sets, st.Shards)
	return st
}

func withoutEpochs(rs []record.Device) []record.Device {
	for i := range rs {
		rs[i].Epoch = 0
	}
	return rs
}

func sameRecord(a, b record.Device) bool {
	return a.Report.Switch == b.Report.Switch && a.Device == b.Device && a.State == b.State && a.Reason == b.Reason &&
		a.Changed.Equal(b.Changed) && a.AccessPort == b.AccessPort && a.Since.Equal(b.Since)
}

func summary(rs []record.Device) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s:%s/%s ", r.Device.Addr, r.State, r.Reason)
	}
	return b.String()
}

func changeSummary(chs []DeviceChange) string {
	var b strings.Builder
	for _, ch := range chs {
		if ch.Record == nil {
			fmt.Fprintf(&b, "gone(vanished %v) ", ch.Vanished)
			continue
		}
		fmt.Fprintf(&b, "%d:%s/%s@%d ", ch.Record.Epoch, ch.Record.State, ch.Record.Reason, ch.Record.Changed.UnixMilli())
	}
	return b.String()
}
