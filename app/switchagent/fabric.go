package switchagent

import (
	"context"
	"net/netip"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/bfd"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/bgp/table"
	"github.com/openinof/inof/zones"
)

// fabricSide is the agent's side toward the rest of the fabric, in one of two
// modes: BGP toward the route reflectors (bgpFabric, fabric_bgp.go), or
// none at all (directFabric, direct.go: the switch keeps the zone store
// and every device is on it). The loop calls it, from its own goroutine,
// to carry out the engine's decisions and to take what the side's
// goroutines hand it; the loop itself never asks which mode runs.
type fabricSide interface {
	// start opens what the side needs before the engine is built, given
	// the zone records saved; it returns the zone records to start from.
	start(ctx context.Context, saved zones.Records, restarting bool) (zones.Records, error)
	// join puts the restored state out (restored: Engine.Restore's output)
	// once the agent's tasks exist, before the access ports open.
	join(ctx context.Context, saved savedState, restored Output, closed bool) error
	// run starts the side's goroutines (Agent.tasks).
	run()
	// stop ends what start began (after the loop ended and saved).
	stop()
	// healthy reports whether the side still works (for /healthz).
	healthy() error

	// records and events are what the side's goroutines hand the loop
	// (nil channels where the mode has none); onRecords and handle take
	// them in the loop.
	records() <-chan bgp.RecordEvent
	onRecords(ctx context.Context, ev bgp.RecordEvent)
	events() <-chan fabricEvent
	handle(ctx context.Context, ev fabricEvent)
	// nextTick is when the side wants tick called next.
	nextTick() (time.Time, bool)
	tick(ctx context.Context, now time.Time)

	// publish puts one engine step's local records out.
	publish(ctx context.Context, out Output)
	// subscribe makes ms (zone names or everyZone) the memberships wanted.
	subscribe(ctx context.Context, ms []string)
	// published returns what is published, for the state file.
	published() []table.PublishedDevice
	// recordFormat is the record format in force (safe from any goroutine).
	recordFormat() record.Format
	// reconfigure applies a reload's live keys the side owns.
	reconfigure(next Options) error

	// backend is the admin API's backend, built on the switch's view.
	backend(view switchBackend) api.Backend
	// neighbors and bfdManager are the sessions, for the API and the
	// metrics (none in direct mode).
	neighbors(ctx context.Context) ([]bgp.NeighborStatus, error)
	bfdManager() *bfd.Manager
	// speakerStats is the BGP speaker's counters (zero in direct mode).
	speakerStats() bgp.Stats
	setStats() table.SetPublisherStats
	// refusals counts the records refused for their sender, by reason.
	refusals() map[string]uint64
}

// fabricEvent is what a fabric side's goroutine hands the loop; the same
// side handles it there (fabricSide.handle).
type fabricEvent struct {
	kind fabricEventKind
	addr netip.Addr    // sessionUp, endOfRIB: the reflector
	done chan struct{} // committed: closed once in force
}

type fabricEventKind uint8

const (
	// sessionUp: a reflector session came up (bgpFabric).
	sessionUp fabricEventKind = iota + 1
	// allLost: the switch lost its last reflector session (bgpFabric).
	allLost
	// endOfRIB: a reflector sent End-of-RIB while the hold waits for one
	// (bgpFabric).
	endOfRIB
	// committed: zoning was committed to the store (directFabric).
	committed
)
