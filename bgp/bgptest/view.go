package bgptest

import (
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/bgp"
)

// RecordView keeps the best record per key as a speaker's record watch
// reports it, and counts events and withdraws. Its Apply is the watch's
// callback.
type RecordView struct {
	mu        sync.Mutex
	cond      *sync.Cond
	records   map[string]bgp.RecordEvent
	withdraws int
	byKey     map[string]int // withdraw events per key
	events    int
}

// NewRecordView returns an empty view.
func NewRecordView() *RecordView {
	v := &RecordView{records: map[string]bgp.RecordEvent{}, byKey: map[string]int{}}
	v.cond = sync.NewCond(&v.mu)
	return v
}

// Apply takes one event of a record watch.
func (v *RecordView) Apply(e bgp.RecordEvent) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.events++
	if e.Withdrawn {
		v.withdraws++
		v.byKey[string(e.Key)]++
		delete(v.records, string(e.Key))
	} else {
		v.records[string(e.Key)] = e
	}
	v.cond.Broadcast()
}

// WaitFor waits until cond holds over the records (or fails the test after
// a generous bound that only a broken fabric reaches). cond runs under the
// view's lock: it must not call the view's methods.
func (v *RecordView) WaitFor(t testing.TB, what string, cond func(map[string]bgp.RecordEvent) bool) {
	t.Helper()
	v.WaitForEvents(t, what, 0, cond)
}

// WaitForEvents is WaitFor once the view has taken at least events events
// in all (count them before with Events).
func (v *RecordView) WaitForEvents(t testing.TB, what string, events int, cond func(map[string]bgp.RecordEvent) bool) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	if !WaitCond(v.cond, func() bool { return v.events >= events && cond(v.records) }) {
		t.Fatalf("timed out waiting for %s; have %d records after %d events", what, len(v.records), v.events)
	}
}

// WaitCond waits on c, whose lock the caller holds, until ok holds; it
// reports false if a generous bound that only a broken fabric reaches
// passed first.
func WaitCond(c *sync.Cond, ok func() bool) bool {
	deadline := time.Now().Add(30 * time.Second)
	stop := time.AfterFunc(30*time.Second, func() { c.L.Lock(); c.Broadcast(); c.L.Unlock() })
	defer stop.Stop()
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		c.Wait()
	}
	return true
}

// Get returns the record event held for key.
func (v *RecordView) Get(key []byte) (bgp.RecordEvent, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.records[string(key)]
	return e, ok
}

// Has reports whether a record is held for key.
func (v *RecordView) Has(key []byte) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.records[string(key)]
	return ok
}

// Records returns a copy of the records held, by key.
func (v *RecordView) Records() map[string]bgp.RecordEvent {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.records)
}

// Events counts the events taken so far.
func (v *RecordView) Events() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.events
}

// Withdraws counts the withdraw events taken so far.
func (v *RecordView) Withdraws() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.withdraws
}

// WithdrawsOf counts the withdraw events taken so far for each of keys.
func (v *RecordView) WithdrawsOf(keys [][]byte) map[string]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := map[string]int{}
	for _, k := range keys {
		out[string(k)] = v.byKey[string(k)]
	}
	return out
}

// HasKey is a WaitFor condition: a record is held for k.
func HasKey(k []byte) func(map[string]bgp.RecordEvent) bool {
	return func(m map[string]bgp.RecordEvent) bool { _, ok := m[string(k)]; return ok }
}
