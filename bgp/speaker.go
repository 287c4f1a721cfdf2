package bgp

import (
	"context"
	"net/netip"
	"time"

	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
)

// Speaker is the BGP side of a daemon, whatever implements it: sessions to
// neighbors, records published and received, route-target subscriptions.
// The rest of the module talks BGP only through this interface.
type Speaker interface {
	// Start brings the speaker up; neighbors may be added afterwards. ctx
	// bounds the start only: the speaker runs until Stop.
	Start(ctx context.Context) error
	// Stop tears every session down (peers see a Cease, unless the process
	// dies first), ends every watch and releases the listener.
	Stop()
	// Done is closed once the speaker has stopped, by Stop or by a fatal
	// error of its own (then Err returns it).
	Done() <-chan struct{}
	Err() error
	AddNeighbor(ctx context.Context, n Neighbor) error
	RemoveNeighbor(ctx context.Context, addr netip.Addr) error
	// Publish originates r (replacing any record with the same key) tagged
	// with the route targets. A peer that wants none of the new route
	// targets keeps the old value (see docs/records.md): never drop a route
	// target under one key; DevicePublisher moves devices between zones.
	Publish(ctx context.Context, r record.Record, rts ...record.RouteTarget) error
	// Withdraw removes the record with that key.
	Withdraw(ctx context.Context, key []byte) error
	// Subscribe asks peers (RT-constraint) for records carrying rt; AnyRT
	// asks for every record.
	Subscribe(ctx context.Context, rt record.RouteTarget) error
	Unsubscribe(ctx context.Context, rt record.RouteTarget) error
	// WatchRecords calls fn for the current best record of every key (the
	// initial table) and then for every change, until ctx ends or the
	// speaker stops. Calls come from one goroutine per watch, through a
	// bounded queue; a consumer that falls too far behind is
	// resynchronised from the table (Stats.Resyncs).
	WatchRecords(ctx context.Context, fn func(RecordEvent)) error
	// WatchReceived calls fn for every record received from a neighbor
	// (Adj-RIB-In, before import policy), under the same rules; given
	// types, only for records of those types (the others are not even
	// decoded).
	WatchReceived(ctx context.Context, fn func(RecordEvent), types ...record.Type) error
	// WatchNeighbors calls fn on every session state change until ctx ends
	// or the speaker stops.
	WatchNeighbors(ctx context.Context, fn func(NeighborEvent)) error
	// Neighbors lists the configured neighbors and their session states,
	// without NeighborStatus.Advertised (zero): cheap enough for metrics
	// scrapes and loops.
	Neighbors(ctx context.Context) ([]NeighborStatus, error)
	// NeighborsAdvertised is Neighbors with the records advertised to each
	// neighbor counted. GoBGP counts them by filtering every path for every
	// session in its one main loop (over 90 s at 100 sessions and 100k
	// records, stalling everything else): for an admin's session list,
	// never for a periodic caller.
	NeighborsAdvertised(ctx context.Context) ([]NeighborStatus, error)
	// Quarantine (on a reflector) refuses every record the neighbor sent
	// and sends, or takes them back in (on false); the session stays up.
	// The records it had sent are withdrawn from every other neighbor at
	// once.
	Quarantine(ctx context.Context, addr netip.Addr, on bool) error
	Stats() Stats
}

// Neighbor configures one BGP session.
type Neighbor struct {
	Address      netip.Addr
	Port         uint16     // remote TCP port; 0 means 179
	LocalAddress netip.Addr // source address; unset lets the kernel choose
	ASN          uint32     // 0 means our own AS (iBGP, the iNOF case)
	Passive      bool       // wait for the neighbor to connect
	// RRClient makes the neighbor our route-reflector client (on a
	// reflector, every switch).
	RRClient bool
	// PeerReflector marks another reflector of the fabric: only our own
	// configuration records go to it, never client records (docs/design.md §3).
	PeerReflector bool
	// NoDefaultRT keeps a reflector from sending the default route-target
	// membership to this client: gobgpd 3.10 (Debian 12) crashes on it.
	// Such a client then sends only records some other client subscribed
	// to.
	NoDefaultRT bool
	Password    string // TCP-MD5 (RFC 2385); empty disables
	TTLSecurity bool   // GTSM (RFC 5082): send TTL 255, accept only 255
	// HoldTime and Keepalive default to 9 s and 3 s.
	HoldTime  time.Duration
	Keepalive time.Duration
	// BFD, if set, runs a single-hop BFD session to the neighbor (needs
	// LocalAddress and the speaker's BFD manager).
	BFD *NeighborBFD
}

// NeighborBFD are a neighbor's BFD timers; zero values take bfd's defaults
// (300 ms, 300 ms, 3).
type NeighborBFD struct {
	DesiredMinTx, RequiredMinRx time.Duration
	DetectMult                  uint8
}

// RecordEvent is one change of the best record for a key.
type RecordEvent struct {
	Key       []byte
	Record    record.Record // nil when withdrawn or malformed
	Withdrawn bool          // true also for malformed records (treated as withdraw)
	Err       error         // set when the received value was malformed
	// Source is the neighbor the record came from; invalid for records this
	// speaker originated.
	Source netip.Addr
	// SourceID is that neighbor's BGP identifier (from its OPEN); 0 for
	// records this speaker originated.
	SourceID inof.RouterID
	// NextHop is the record's next hop. A reflector sets it, for every
	// record a client sends, to the address of the client's session
	// (docs/security.md), so a receiver can tell which switch a reflected
	// record came from; a reflector's own records carry its session
	// address. Invalid when the path has none.
	NextHop      netip.Addr
	RouteTargets []record.RouteTarget
	Stale        bool // kept by graceful restart while its neighbor is away
}

// Local reports whether the record was originated by this speaker.
func (e *RecordEvent) Local() bool { return !e.Source.IsValid() }

// SessionState is a BGP FSM state.
type SessionState uint8

// Session states.
const (
	StateUnknown SessionState = iota
	StateIdle
	StateConnect
	StateActive
	StateOpenSent
	StateOpenConfirm
	StateEstablished
)

func (s SessionState) String() string {
	return [...]string{"unknown", "idle", "connect", "active", "opensent", "openconfirm", "established"}[min(int(s), 6)]
}

// SessionStates lists the states a session can be in (metrics show each,
// zero or not).
func SessionStates() []SessionState {
	return []SessionState{StateIdle, StateConnect, StateActive, StateOpenSent, StateOpenConfirm, StateEstablished}
}

// NeighborEvent reports a session state change.
type NeighborEvent struct {
	Address netip.Addr
	State   SessionState
}

// NeighborStatus is a neighbor's configuration and state.
type NeighborStatus struct {
	Neighbor
	State    SessionState
	RouterID netip.Addr // the neighbor's, once known
	Received uint64     // opaque records accepted from it
	// Advertised counts the opaque records sent to it (its Adj-RIB-Out).
	Advertised uint64
	// EndOfRIB reports that the neighbor has sent End-of-RIB for the
	// opaque family in the current session: the records before it are its
	// initial table. Speakers send End-of-RIB with graceful restart only.
	EndOfRIB bool
}

// Stats are counters since the speaker started.
type Stats struct {
	Published, Withdrawn, Malformed uint64
	// Resyncs counts watches whose consumer fell more than the watch
	// queue behind and were resynchronised from the table.
	Resyncs uint64
	// BFDConfirmed and BFDUnconfirmed count a reflector's BFD downs of
	// switches declared gone and those not confirmed (BFD back within the
	// hold: nothing withdrawn); BFDDampened the sessions of flapping
	// switches held down after BFD came back (bfdconfirm.go).
	BFDConfirmed, BFDUnconfirmed, BFDDampened uint64
}
