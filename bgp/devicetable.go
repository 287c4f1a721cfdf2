package bgp

import (
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/openinof/inof/inof"
)

// DefaultMaxDevices is the device table's default bound: 4 Mi (switch,
// address) pairs, twice issue #16's largest fabric (256 switches × 8k
// devices = 2.1 M records at one reflector), a few hundred bytes each;
// GoBGP's own tables hold about 1 KB per record beside it.
const DefaultMaxDevices = 1 << 22

// DeviceTableOptions configure a DeviceTable.
type DeviceTableOptions struct {
	// MaxDevices bounds the (switch, address) pairs held (default
	// DefaultMaxDevices); records of further devices are refused, counted
	// and logged at a rate limit.
	MaxDevices int
	Logger     *slog.Logger
}

// maxEpochs bounds the copies held per device: normally one, two while a
// device moves between zones or between the shards of a set, a third
// while a restarted switch's stale records wait for End-of-RIB. Beyond it
// the lowest epoch is dropped.
const maxEpochs = 4

// DeviceTable is a receiver's view of device records: per (switch,
// address) the record with the highest epoch present. Feed it the events
// of WatchRecords. Device set records count as the device records of their
// entries: a new value of a set's key adds, replaces and removes the
// entries it differs in, and a withdrawn set removes all of its entries,
// so a device reads the same whichever format its switch publishes in
// (docs/records.md). It is safe for concurrent use.
type DeviceTable struct {
	max int
	log *slog.Logger

	mu sync.Mutex
	// devices holds per device its copies, one per (epoch, source)
	// present, in no order (at most maxEpochs; a slice costs far less than
	// a map here).
	devices map[DeviceID][]heldRecord
	// sets holds what each device set key brought, to tell the entries a
	// new value drops.
	sets    map[DeviceSetKey]*heldSet
	nextSrc uint32 // the source number of the next new set key
	seq     uint64 // write order, for copies of equal epoch
	stats   DeviceTableStats
	refuse  rateLimit
}

// heldRecord is one copy of a device's record: from its own device key
// (src 0) or an entry of the device set key numbered src.
type heldRecord struct {
	rec DeviceRecord
	src uint32
	seq uint64
}

// heldSet is what one device set key holds: its source number and the
// (address, epoch) of its entries, sorted.
type heldSet struct {
	src     uint32
	entries []DeviceKey
}

// DeviceTableStats count what a DeviceTable refused.
type DeviceTableStats struct {
	Refused uint64 // records of devices beyond MaxDevices
	Evicted uint64 // epochs dropped beyond the per-device bound
}

// DeviceChange is a change of a device's current record.
type DeviceChange struct {
	ID     DeviceID
	Record *DeviceRecord // the record with the highest epoch; nil when gone
	// Vanished: the device's last record was withdrawn while active, so
	// its switch is gone (hosts get reason BFD down). A device that leaves
	// normally is published inactive first.
	Vanished bool
	// Had says the device had a current record before; Before is that
	// record's status.
	Had    bool
	Before inof.Status
}

// NewDeviceTable returns an empty table.
func NewDeviceTable(opts DeviceTableOptions) *DeviceTable {
	if opts.MaxDevices <= 0 {
		opts.MaxDevices = DefaultMaxDevices
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &DeviceTable{max: opts.MaxDevices, log: opts.Logger, devices: map[DeviceID][]heldRecord{},
		sets: map[DeviceSetKey]*heldSet{}, nextSrc: 1, refuse: rateLimit{every: time.Second}}
}

// Apply feeds one record event and appends to dst the change of every
// device whose current record changed: none, one for a device record,
// any number for a device set record. Events of other record types are
// ignored; a malformed record counts as a withdraw of its key.
func (t *DeviceTable) Apply(dst []DeviceChange, ev RecordEvent) []DeviceChange {
	switch r := ev.Record.(type) {
	case *DeviceRecord:
		if !ev.Withdrawn {
			t.mu.Lock()
			defer t.mu.Unlock()
			dst, _ = t.change(dst, r.ID(), r.Epoch, 0, r)
			return dst
		}
	case *DeviceSetRecord:
		if !ev.Withdrawn {
			t.mu.Lock()
			defer t.mu.Unlock()
			return t.applySet(dst, DeviceSetKey{Switch: r.Switch, Set: r.Set, Shard: r.Shard}, r.Devices)
		}
	}
	if !ev.Withdrawn || len(ev.Key) == 0 {
		return dst
	}
	switch RecordType(ev.Key[0]) {
	case TypeDevice:
		if k, err := ParseDeviceKey(ev.Key); err == nil {
			t.mu.Lock()
			defer t.mu.Unlock()
			dst, _ = t.change(dst, k.DeviceID, k.Epoch, 0, nil)
			return dst
		}
	case TypeDeviceSet:
		if k, err := ParseDeviceSetKey(ev.Key); err == nil {
			t.mu.Lock()
			defer t.mu.Unlock()
			return t.applySet(dst, k, nil)
		}
	}
	return dst
}

// applySet makes devs (sorted by address and epoch) what set key k holds
// (under mu): the entries put first, then those it no longer holds
// removed, so a device whose entry moves within the set to a new epoch
// never seems gone in between.
func (t *DeviceTable) applySet(dst []DeviceChange, k DeviceSetKey, devs []DeviceRecord) []DeviceChange {
	held := t.sets[k]
	if held == nil {
		if len(devs) == 0 {
			return dst
		}
		held = &heldSet{src: t.nextSrc}
		t.nextSrc++
		t.sets[k] = held
	}
	old := held.entries
	kept := make([]DeviceKey, 0, len(devs))
	for i := range devs {
		d := &devs[i]
		var refused bool
		if dst, refused = t.change(dst, d.ID(), d.Epoch, held.src, d); !refused {
			kept = append(kept, DeviceKey{DeviceID: d.ID(), Epoch: d.Epoch})
		}
	}
	for _, o := range old {
		if _, found := slices.BinarySearchFunc(kept, o, compareDeviceKeys); !found {
			dst, _ = t.change(dst, o.DeviceID, o.Epoch, held.src, nil)
		}
	}
	if len(kept) == 0 {
		delete(t.sets, k)
		return dst
	}
	held.entries = kept
	return dst
}

func compareDeviceKeys(a, b DeviceKey) int {
	if c := a.Addr.Compare(b.Addr); c != 0 {
		return c
	}
	switch {
	case a.Epoch < b.Epoch:
		return -1
	case a.Epoch > b.Epoch:
		return 1
	}
	return 0
}

// change puts rec as the copy (epoch, src) of device id, or removes that
// copy when rec is nil, and appends the device's change if its current
// record changed (under mu). It reports whether it refused rec because the
// table is full.
func (t *DeviceTable) change(dst []DeviceChange, id DeviceID, epoch uint64, src uint32, rec *DeviceRecord) ([]DeviceChange, bool) {
	copies, known := t.devices[id]
	if rec != nil && !known && len(t.devices) >= t.max {
		t.stats.Refused++
		if t.refuse.allow() {
			t.log.Warn("device table full; record refused", "device", id.Addr, "switch", id.Switch,
				"limit", t.max, "refused_total", t.stats.Refused)
		}
		return dst, true
	}
	before, had := current(copies)
	same := func(h heldRecord) bool { return h.rec.Epoch == epoch && h.src == src }
	if rec == nil {
		copies = slices.DeleteFunc(copies, same)
	} else {
		t.seq++
		h := heldRecord{rec: *rec, src: src, seq: t.seq}
		if i := slices.IndexFunc(copies, same); i >= 0 {
			copies[i] = h
		} else {
			copies = append(copies, h)
		}
		if len(copies) > maxEpochs {
			low := slices.MinFunc(copies, func(a, b heldRecord) int { return compareCopies(a, b) })
			copies = slices.DeleteFunc(copies, func(h heldRecord) bool { return h.rec.Epoch == low.rec.Epoch && h.src == low.src })
			t.stats.Evicted++
		}
	}
	after, has := current(copies)
	switch {
	case !has && known:
		delete(t.devices, id)
	case has:
		t.devices[id] = copies
	}
	switch {
	case !had && !has:
		return dst, false
	case !has:
		return append(dst, DeviceChange{ID: id, Vanished: before.State == inof.StateActive, Had: true, Before: before.Status}), false
	case had && before == after:
		return dst, false
	}
	ch := DeviceChange{ID: id, Had: had, Before: before.Status}
	if rec != nil && after == *rec {
		// The event's own record is current: hand it on rather than a
		// copy (the table keeps a copy of its own), one allocation less
		// per record received.
		ch.Record = rec
	} else {
		cur := after // only this copy escapes
		ch.Record = &cur
	}
	return append(dst, ch), false
}

// compareCopies orders copies by epoch, then by write order: the greatest
// is current.
func compareCopies(a, b heldRecord) int {
	switch {
	case a.rec.Epoch != b.rec.Epoch:
		if a.rec.Epoch < b.rec.Epoch {
			return -1
		}
		return 1
	case a.seq < b.seq:
		return -1
	case a.seq > b.seq:
		return 1
	}
	return 0
}

// current returns the copy with the highest epoch (of equal epochs, the
// one written last: copies of one epoch in two set records are the same
// device moving between the shards of its set).
func current(copies []heldRecord) (DeviceRecord, bool) {
	if len(copies) == 0 {
		return DeviceRecord{}, false
	}
	return slices.MaxFunc(copies, compareCopies).rec, true
}

// Get returns the device's current record.
func (t *DeviceTable) Get(id DeviceID) (DeviceRecord, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return current(t.devices[id])
}

// Reports returns what the current record of every device says.
func (t *DeviceTable) Reports() []inof.Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]inof.Report, 0, len(t.devices))
	for _, copies := range t.devices {
		if r, ok := current(copies); ok {
			out = append(out, r.Report)
		}
	}
	return out
}

// Records returns the current record of every device, sorted by switch
// and address.
func (t *DeviceTable) Records() []DeviceRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]DeviceRecord, 0, len(t.devices))
	for _, copies := range t.devices {
		if r, ok := current(copies); ok {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b DeviceRecord) int {
		if a.Switch != b.Switch {
			if a.Switch < b.Switch {
				return -1
			}
			return 1
		}
		return a.Device.Addr.Compare(b.Device.Addr)
	})
	return out
}

// Len is the number of devices held (a count, no copy: cheap to poll).
func (t *DeviceTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.devices)
}

// Stats returns the table's counters.
func (t *DeviceTable) Stats() DeviceTableStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}
