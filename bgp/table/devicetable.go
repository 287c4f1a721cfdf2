package table

import (
	"bytes"
	"cmp"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/openinof/inof/bgp"
	"github.com/openinof/inof/bgp/record"
	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/ratelimit"
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
	// Decoded keeps each record as it was received, decoded, rather than
	// its wire encoding: for a switch, which holds the devices of its
	// zones and hands every change on, so a received record is decoded
	// once (by the speaker) and never encoded or decoded again here. A
	// reflector, which holds millions of devices and reads few, keeps the
	// compact encoding (the default).
	Decoded bool
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
//
// By default the records are held in their wire encoding, each set's
// entries as its record carried them, and decoded when asked for: a
// reflector holds millions of devices (docs/reflector.md, "Memory of a
// large reflector"), and a new value of a set whose entries mostly did not
// change costs a comparison of bytes per unchanged entry. A decoded table
// (DeviceTableOptions.Decoded, a switch's) holds the records themselves and
// compares them field by field (record.Device.Same) instead.
type DeviceTable struct {
	max     int
	log     *slog.Logger
	decoded bool

	mu sync.Mutex
	// devices holds per device its copies, one per (epoch, source)
	// present (at most maxEpochs).
	devices deviceIndex
	// sets holds what each device set key brought (bySrc: by its source
	// number), singles the encoding of each device record's copy (records
	// the record itself, in a decoded table).
	sets    map[record.DeviceSetKey]*heldSet
	bySrc   map[uint32]*heldSet
	singles map[record.DeviceKey][]byte
	records map[record.DeviceKey]*record.Device
	// applying is the set whose new value is being applied: its copies
	// are read from what the value put so far, then from its old entries.
	applying *applyingSet
	nextSrc  uint32 // the source number of the next new set key
	stats    DeviceTableStats
	refuse   ratelimit.Limit
}

// heldCopy is one copy of a device's record: from its own device key
// (src 0, its encoding in singles) or an entry of the device set key
// numbered src. A device's copies are kept in the order they were written.
type heldCopy struct {
	epoch uint64
	src   uint32
}

// heldSet is what one device set key holds: its source number and the
// entries it brought that the table took (all but those refused).
type heldSet struct {
	src     uint32
	entries setEntries
}

// setEntries are a set's entries, sorted by (address, epoch), as the table
// keeps them: their encoding, or the records in a decoded table.
type setEntries struct {
	enc  record.SetEntries
	recs []record.Device
}

// copyValue is one copy's value as the table keeps it: its entry encoding, or
// the record in a decoded table.
type copyValue struct {
	enc []byte
	rec *record.Device
}

func (h copyValue) none() bool { return h.enc == nil && h.rec == nil }

// same reports whether two copies say the same.
func (h copyValue) same(o copyValue) bool {
	if h.rec != nil && o.rec != nil {
		return h.rec.Same(o.rec)
	}
	return bytes.Equal(h.enc, o.enc)
}

func (e setEntries) len() int {
	if e.recs != nil {
		return len(e.recs)
	}
	return e.enc.Len()
}

func (e setEntries) at(i int) copyValue {
	if e.recs != nil {
		return copyValue{rec: &e.recs[i]}
	}
	return copyValue{enc: e.enc.At(i)}
}

func (e setEntries) key(i int) (netip.Addr, uint64) {
	if e.recs != nil {
		return e.recs[i].Device.Addr, e.recs[i].Epoch
	}
	return e.enc.Key(i)
}

func (e setEntries) find(a netip.Addr, epoch uint64) (int, bool) {
	if e.recs != nil {
		return slices.BinarySearchFunc(e.recs, record.DeviceKey{DeviceID: record.DeviceID{Addr: a}, Epoch: epoch},
			func(d record.Device, k record.DeviceKey) int {
				if c := d.Device.Addr.Compare(k.Addr); c != 0 {
					return c
				}
				return cmp.Compare(d.Epoch, k.Epoch)
			})
	}
	return e.enc.Find(a, epoch)
}

// without returns e less the entries at the indices in skip (sorted).
func (e setEntries) without(skip []int) setEntries {
	var out setEntries
	n := e.len()
	if e.recs != nil {
		out.recs = make([]record.Device, 0, n-len(skip))
	}
	for i := range n {
		if len(skip) > 0 && skip[0] == i {
			skip = skip[1:]
			continue
		}
		if e.recs != nil {
			out.recs = append(out.recs, e.recs[i])
		} else {
			out.enc.Append(e.enc.At(i))
		}
	}
	return out
}

// applyingSet is the state of applySet while it runs.
type applyingSet struct {
	src uint32
	put []record.Device // the new entries put so far (sorted)
	in  setEntries      // the new entries as kept (put's too)
	old setEntries      // the set's entries before the new value
}

// DeviceTableStats count what a DeviceTable refused, and its decoding.
type DeviceTableStats struct {
	Refused uint64 // records of devices beyond MaxDevices
	Evicted uint64 // epochs dropped beyond the per-device bound
	// Decodes counts the entries the table decoded from their encoding
	// (always 0 in a decoded table: its records come decoded).
	Decodes uint64
}

// DeviceChange is a change of a device's current record.
type DeviceChange struct {
	ID record.DeviceID
	// Record is the record with the highest epoch, nil when gone; the
	// caller must not change it (a decoded table holds it).
	Record *record.Device
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
	return &DeviceTable{max: opts.MaxDevices, log: opts.Logger, decoded: opts.Decoded, devices: newDeviceIndex(),
		sets: map[record.DeviceSetKey]*heldSet{}, bySrc: map[uint32]*heldSet{}, singles: map[record.DeviceKey][]byte{},
		records: map[record.DeviceKey]*record.Device{}, nextSrc: 1, refuse: ratelimit.Limit{Every: time.Second}}
}

// Apply feeds one record event and appends to dst the change of every
// device whose current record changed: none, one for a device record,
// any number for a device set record. Events of other record types are
// ignored; a malformed record counts as a withdraw of its key.
func (t *DeviceTable) Apply(dst []DeviceChange, ev bgp.RecordEvent) []DeviceChange {
	switch r := ev.Record.(type) {
	case *record.Device:
		if !ev.Withdrawn {
			t.mu.Lock()
			defer t.mu.Unlock()
			v := copyValue{rec: r}
			if !t.decoded {
				v = copyValue{enc: record.AppendEntry(nil, r)}
			}
			dst, _ = t.change(dst, r.ID(), r.Epoch, 0, r, v)
			return dst
		}
	case *record.DeviceSet:
		if !ev.Withdrawn {
			t.mu.Lock()
			defer t.mu.Unlock()
			in := setEntries{recs: r.Devices}
			if !t.decoded {
				in = setEntries{enc: r.Encoded()}
				if in.enc.Len() != len(r.Devices) {
					in.enc = record.EncodeEntries(r.Devices) // not received: made here
				}
			} else if in.recs == nil {
				in.recs = []record.Device{} // an empty set, not an encoded one
			}
			return t.applySet(dst, record.DeviceSetKey{Switch: r.Switch, Set: r.Set, Shard: r.Shard}, r.Devices, in)
		}
	}
	if !ev.Withdrawn || len(ev.Key) == 0 {
		return dst
	}
	switch record.Type(ev.Key[0]) {
	case record.TypeDevice:
		if k, err := record.ParseDeviceKey(ev.Key); err == nil {
			t.mu.Lock()
			defer t.mu.Unlock()
			dst, _ = t.change(dst, k.DeviceID, k.Epoch, 0, nil, copyValue{})
			return dst
		}
	case record.TypeDeviceSet:
		if k, err := record.ParseDeviceSetKey(ev.Key); err == nil {
			t.mu.Lock()
			defer t.mu.Unlock()
			return t.applySet(dst, k, nil, setEntries{})
		}
	}
	return dst
}

// applySet makes devs (sorted by address and epoch, in them as the table
// keeps them) what set key k holds (under mu): the entries new or changed
// put first, then those it no longer holds removed, so a device whose
// entry moves within the set to a new epoch never seems gone in between.
// An entry that says what the key held before costs a comparison.
func (t *DeviceTable) applySet(dst []DeviceChange, k record.DeviceSetKey, devs []record.Device, in setEntries) []DeviceChange {
	held := t.sets[k]
	if held == nil {
		if len(devs) == 0 {
			return dst
		}
		held = &heldSet{src: t.nextSrc}
		t.nextSrc++
		t.sets[k] = held
		t.bySrc[held.src] = held
	}
	old := held.entries
	a := &applyingSet{src: held.src, in: in, old: old}
	t.applying = a
	defer func() { t.applying = nil }()
	var refused []int // entries of devs not taken
	j := 0            // the next old entry
	for i := range devs {
		d := &devs[i]
		a.put = devs[:i]
		for j < old.len() && compareKey(old, j, d) < 0 {
			j++
		}
		if j < old.len() && compareKey(old, j, d) == 0 && old.at(j).same(in.at(i)) {
			continue // unchanged
		}
		var no bool
		if dst, no = t.change(dst, d.ID(), d.Epoch, held.src, d, in.at(i)); no {
			refused = append(refused, i)
		}
	}
	kept := in
	if len(refused) > 0 {
		kept = in.without(refused)
	}
	held.entries = kept
	a.put = devs
	for j := range old.len() {
		addr, epoch := old.key(j)
		if _, found := kept.find(addr, epoch); !found {
			dst, _ = t.change(dst, record.DeviceID{Switch: k.Switch, Addr: addr}, epoch, held.src, nil, copyValue{})
		}
	}
	if kept.len() == 0 {
		delete(t.sets, k)
		delete(t.bySrc, held.src)
	}
	return dst
}

// compareKey orders old entry j against d by (address, epoch).
func compareKey(old setEntries, j int, d *record.Device) int {
	addr, epoch := old.key(j)
	if c := addr.Compare(d.Device.Addr); c != 0 {
		return c
	}
	return cmp.Compare(epoch, d.Epoch)
}

func compareDeviceKeys(a, b record.DeviceKey) int {
	if c := a.Addr.Compare(b.Addr); c != 0 {
		return c
	}
	return cmp.Compare(a.Epoch, b.Epoch)
}

// value returns what copy c of device id holds (under mu); none if it
// holds nothing (it cannot happen: every copy's source keeps its value).
func (t *DeviceTable) value(id record.DeviceID, c heldCopy) copyValue {
	if c.src == 0 {
		k := record.DeviceKey{DeviceID: id, Epoch: c.epoch}
		if t.decoded {
			return copyValue{rec: t.records[k]}
		}
		return copyValue{enc: t.singles[k]}
	}
	if a := t.applying; a != nil && a.src == c.src {
		if i, ok := slices.BinarySearchFunc(a.put, record.DeviceKey{DeviceID: id, Epoch: c.epoch}, func(d record.Device, k record.DeviceKey) int {
			return compareDeviceKeys(record.DeviceKey{DeviceID: d.ID(), Epoch: d.Epoch}, k)
		}); ok {
			return a.in.at(i)
		}
		if i, ok := a.old.find(id.Addr, c.epoch); ok {
			return a.old.at(i)
		}
	}
	if s := t.bySrc[c.src]; s != nil {
		if i, ok := s.entries.find(id.Addr, c.epoch); ok {
			return s.entries.at(i)
		}
	}
	return copyValue{}
}

// decode returns the record v holds of switch sw (under mu): decoded
// from its encoding, or the record itself in a decoded table.
func (t *DeviceTable) decode(v copyValue, sw inof.RouterID) record.Device {
	if v.rec != nil {
		return *v.rec
	}
	t.stats.Decodes++
	return record.DecodeEntry(v.enc, sw)
}

// record returns copy c of device id (under mu).
func (t *DeviceTable) record(id record.DeviceID, c heldCopy) record.Device {
	v := t.value(id, c)
	if v.none() {
		return record.Device{Report: inof.Report{Switch: id.Switch, Device: inof.Device{Addr: id.Addr}}, Epoch: c.epoch}
	}
	return t.decode(v, id.Switch)
}

// change puts rec, held as v, as the copy (epoch, src) of device id, or
// removes that copy when rec is nil, and appends the device's change if
// its current record changed (under mu). It reports whether it refused
// rec because the table is full.
func (t *DeviceTable) change(dst []DeviceChange, id record.DeviceID, epoch uint64, src uint32, rec *record.Device, v copyValue) ([]DeviceChange, bool) {
	var buf [maxEpochs + 1]heldCopy
	copies, known := t.devices.get(id, buf[:0])
	if rec != nil && !known && t.devices.len() >= t.max {
		t.stats.Refused++
		if t.refuse.Allow() {
			t.log.Warn("device table full; record refused", "device", id.Addr, "switch", id.Switch,
				"limit", t.max, "refused_total", t.stats.Refused)
		}
		return dst, true
	}
	cur, had := current(copies)
	var before copyValue
	if had {
		before = t.value(id, cur)
	}
	same := func(h heldCopy) bool { return h.epoch == epoch && h.src == src }
	dropSingle := func(h heldCopy) {
		if h.src == 0 {
			k := record.DeviceKey{DeviceID: id, Epoch: h.epoch}
			delete(t.singles, k)
			delete(t.records, k)
		}
	}
	if rec == nil {
		if i := slices.IndexFunc(copies, same); i >= 0 {
			dropSingle(copies[i])
			copies = slices.Delete(copies, i, i+1)
		}
	} else {
		if i := slices.IndexFunc(copies, same); i >= 0 {
			copies = slices.Delete(copies, i, i+1) // written again: goes last
		}
		copies = append(copies, heldCopy{epoch: epoch, src: src})
		if src == 0 {
			k := record.DeviceKey{DeviceID: id, Epoch: epoch}
			if t.decoded {
				t.records[k] = rec
			} else {
				t.singles[k] = v.enc
			}
		}
		if len(copies) > maxEpochs {
			// The lowest epoch goes; of equal ones, the one written first.
			low := slices.MinFunc(copies, func(a, b heldCopy) int { return cmp.Compare(a.epoch, b.epoch) })
			copies = slices.DeleteFunc(copies, func(h heldCopy) bool { return h == low })
			dropSingle(low)
			t.stats.Evicted++
		}
	}
	now, has := current(copies)
	switch {
	case !has && known:
		t.devices.del(id)
	case has:
		t.devices.set(id, copies)
	}
	if !had && !has {
		return dst, false
	}
	var beforeStatus inof.Status
	if had {
		beforeStatus = t.decode(before, id.Switch).Status
	}
	if !has {
		return append(dst, DeviceChange{ID: id, Vanished: beforeStatus.State == inof.StateActive, Had: true, Before: beforeStatus}), false
	}
	mine := rec != nil && now.epoch == epoch && now.src == src
	after := v
	if !mine {
		after = t.value(id, now)
	}
	if had && now.epoch == cur.epoch && now.src == cur.src && before.same(after) {
		return dst, false
	}
	ch := DeviceChange{ID: id, Had: had, Before: beforeStatus}
	switch {
	case mine:
		// The event's own record is current: hand it on rather than a
		// decoded copy.
		ch.Record = rec
	case after.rec != nil:
		ch.Record = after.rec
	default:
		r := t.decode(after, id.Switch)
		ch.Record = &r
	}
	return append(dst, ch), false
}

// current returns the copy with the highest epoch (of equal epochs, the
// one written last: copies of one epoch in two set records are the same
// device moving between the shards of its set).
func current(copies []heldCopy) (heldCopy, bool) {
	if len(copies) == 0 {
		return heldCopy{}, false
	}
	best := copies[0]
	for _, c := range copies[1:] {
		if c.epoch >= best.epoch {
			best = c
		}
	}
	return best, true
}

// Get returns the device's current record.
func (t *DeviceTable) Get(id record.DeviceID) (record.Device, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var buf [maxEpochs]heldCopy
	copies, _ := t.devices.get(id, buf[:0])
	return t.currentRecord(id, copies)
}

// currentRecord decodes the current copy of copies (under mu).
func (t *DeviceTable) currentRecord(id record.DeviceID, copies []heldCopy) (record.Device, bool) {
	c, ok := current(copies)
	if !ok {
		return record.Device{}, false
	}
	return t.record(id, c), true
}

// Reports returns what the current record of every device says.
func (t *DeviceTable) Reports() []inof.Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]inof.Report, 0, t.devices.len())
	t.devices.each(func(id record.DeviceID, copies []heldCopy) {
		if r, ok := t.currentRecord(id, copies); ok {
			out = append(out, r.Report)
		}
	})
	return out
}

// Records returns the current record of every device, sorted by switch
// and address.
func (t *DeviceTable) Records() []record.Device {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]record.Device, 0, t.devices.len())
	t.devices.each(func(id record.DeviceID, copies []heldCopy) {
		if r, ok := t.currentRecord(id, copies); ok {
			out = append(out, r)
		}
	})
	slices.SortFunc(out, func(a, b record.Device) int {
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
	return t.devices.len()
}

// Stats returns the table's counters.
func (t *DeviceTable) Stats() DeviceTableStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// deviceIndex holds each device's copies: a device with one copy (nearly
// every one) in a map of single copies under a compact key, one with more
// (while it moves, or while a restarted switch's stale records wait) in a
// map of slices. A reflector holds millions of devices; this is ~40 bytes
// of map a device instead of ~90 for a map of slices keyed by DeviceID.
type deviceIndex struct {
	one  map[deviceKey]heldCopy
	many map[deviceKey][]heldCopy
}

// deviceKey is a DeviceID in 24 bytes rather than 32 (netip.Addr carries
// a zone pointer; device addresses have no zone).
type deviceKey struct {
	sw  inof.RouterID
	a   [16]byte
	is4 bool
}

func keyOf(id record.DeviceID) deviceKey {
	return deviceKey{sw: id.Switch, a: id.Addr.As16(), is4: id.Addr.Is4()}
}

func (k deviceKey) id() record.DeviceID {
	a := netip.AddrFrom16(k.a)
	if k.is4 {
		a = a.Unmap()
	}
	return record.DeviceID{Switch: k.sw, Addr: a}
}

func newDeviceIndex() deviceIndex {
	return deviceIndex{one: map[deviceKey]heldCopy{}, many: map[deviceKey][]heldCopy{}}
}

// get appends id's copies to buf.
func (x deviceIndex) get(id record.DeviceID, buf []heldCopy) ([]heldCopy, bool) {
	k := keyOf(id)
	if c, ok := x.one[k]; ok {
		return append(buf, c), true
	}
	if cs, ok := x.many[k]; ok {
		return append(buf, cs...), true
	}
	return buf, false
}

// set makes copies (one at least) id's copies; it keeps none of the slice.
func (x deviceIndex) set(id record.DeviceID, copies []heldCopy) {
	k := keyOf(id)
	if len(copies) == 1 {
		x.one[k] = copies[0]
		delete(x.many, k)
		return
	}
	x.many[k] = slices.Clone(copies)
	delete(x.one, k)
}

func (x deviceIndex) del(id record.DeviceID) {
	k := keyOf(id)
	delete(x.one, k)
	delete(x.many, k)
}

func (x deviceIndex) len() int { return len(x.one) + len(x.many) }

// each calls fn with every device's copies (the slice is fn's only while
// it runs).
func (x deviceIndex) each(fn func(record.DeviceID, []heldCopy)) {
	var buf [1]heldCopy
	for k, c := range x.one {
		buf[0] = c
		fn(k.id(), buf[:])
	}
	for k, cs := range x.many {
		fn(k.id(), cs)
	}
}
