package main

import (
	"slices"
	"testing"
	"time"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
)

// TestMeterGaps: the meter lists every gap of at least -record between
// completed reads, with the one in progress at a report (not kept), and
// starts the list afresh in a new window, where the gap that went on
// into it counts from its start. Gaps are made by setting the last
// completion into the past, so no sleep decides the outcome.
func TestMeterGaps(t *testing.T) {
	gap := 10 * time.Millisecond
	now := time.Now()
	m := &meter{start: now, last: now.Add(-gap), report: time.Hour, record: 5 * time.Millisecond}
	m.done(nil)
	if len(m.rep.Gaps) != 1 || time.Duration(m.rep.Gaps[0].EndNS-m.rep.Gaps[0].StartNS) < gap {
		t.Fatalf("gaps %+v, want one of at least %v", m.rep.Gaps, gap)
	}
	short := &meter{start: now, last: now, report: time.Hour, record: time.Hour}
	short.done(nil)
	short.done(nil)
	if r := short.final(); len(r.Gaps) != 0 || r.Reads != 2 {
		t.Fatalf("record 1h: %+v, want no gaps and two reads", r)
	}
	m.last = time.Now().Add(-gap)
	if r := m.final(); len(r.Gaps) != 2 {
		t.Fatalf("report: gaps %+v, want the one listed and the one in progress", r.Gaps)
	}
	if len(m.rep.Gaps) != 1 {
		t.Fatalf("the gap in progress was kept: %+v", m.rep.Gaps)
	}
	last := m.last
	if w := m.window(); len(w.Gaps) != 2 || w.Reads != 1 {
		t.Fatalf("window: %+v, want two gaps and one read", w)
	}
	m.done(nil)
	r := m.final()
	if r.Reads != 1 || !slices.ContainsFunc(r.Gaps, func(g ctlproto.Gap) bool { return g.StartNS == last.UnixNano() }) {
		t.Fatalf("new window: %+v, want one read and the gap from %d that went on into it", r, last.UnixNano())
	}
}

// TestMeterGapsBounded: a window lists at most ctlproto.MaxGaps gaps, and
// a long gap after the list is full replaces the shortest.
func TestMeterGapsBounded(t *testing.T) {
	now := time.Now()
	m := &meter{start: now, last: now, report: time.Hour, record: 0}
	for range 2 * ctlproto.MaxGaps {
		m.done(nil)
	}
	if n := len(m.final().Gaps); n != ctlproto.MaxGaps {
		t.Fatalf("%d gaps listed, want %d", n, ctlproto.MaxGaps)
	}
	time.Sleep(5 * time.Millisecond)
	m.done(nil)
	r := m.final()
	long := 0
	for _, g := range r.Gaps {
		if time.Duration(g.EndNS-g.StartNS) >= 5*time.Millisecond {
			long++
		}
	}
	if len(r.Gaps) != ctlproto.MaxGaps || long == 0 {
		t.Fatalf("after a 5 ms gap: %d gaps, %d of 5 ms or more; want %d and the long one kept", len(r.Gaps), long, ctlproto.MaxGaps)
	}
}

// TestKeepGap: a full list keeps the longest gaps.
func TestKeepGap(t *testing.T) {
	var gs []ctlproto.Gap
	for i := range ctlproto.MaxGaps {
		gs = keepGap(gs, ctlproto.Gap{StartNS: 0, EndNS: int64(i + 10)})
	}
	gs = keepGap(gs, ctlproto.Gap{StartNS: 0, EndNS: 1}) // shorter than all: dropped
	gs = keepGap(gs, ctlproto.Gap{StartNS: 0, EndNS: 1000})
	if len(gs) != ctlproto.MaxGaps {
		t.Fatalf("%d gaps, want %d", len(gs), ctlproto.MaxGaps)
	}
	var sawLong bool
	for _, g := range gs {
		if g.EndNS == 1 || g.EndNS == 10 {
			t.Fatalf("kept %+v, the shortest", g)
		}
		sawLong = sawLong || g.EndNS == 1000
	}
	if !sawLong {
		t.Fatal("the longest gap was dropped")
	}
}
