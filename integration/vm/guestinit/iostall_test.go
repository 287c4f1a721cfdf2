package main

import (
	"testing"
	"time"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
)

// TestMeterGaps: the meter lists every gap of at least -record between
// completed reads, with the one in progress at a report, and starts the
// list afresh in a new window.
func TestMeterGaps(t *testing.T) {
	now := time.Now()
	m := &meter{start: now, last: now, report: time.Hour, record: 5 * time.Millisecond}
	m.done(nil) // no gap of 5 ms yet, in any but a frozen machine: may or may not be listed
	first := len(m.final().Gaps)
	time.Sleep(6 * time.Millisecond)
	m.done(nil)
	r := m.final()
	if len(r.Gaps) != first+1 {
		t.Fatalf("gaps %+v, want %d", r.Gaps, first+1)
	}
	g := r.Gaps[len(r.Gaps)-1]
	if d := time.Duration(g.EndNS - g.StartNS); d < 6*time.Millisecond {
		t.Fatalf("gap of %v listed, the loop slept 6 ms", d)
	}
	if r.Reads != 2 {
		t.Fatalf("reads %d, want 2", r.Reads)
	}
	time.Sleep(6 * time.Millisecond)
	// The gap in progress is in the report, and not kept in the meter.
	if r := m.window(); len(r.Gaps) != first+2 {
		t.Fatalf("window: gaps %+v, want %d with the one in progress", r.Gaps, first+2)
	}
	m.done(nil)
	r = m.final()
	if len(r.Gaps) != 1 || r.Reads != 1 {
		t.Fatalf("new window: %+v, want the gap that went on into it and one read", r)
	}
	if time.Duration(r.Gaps[0].EndNS-r.Gaps[0].StartNS) < 6*time.Millisecond {
		t.Fatalf("new window's gap %+v counts from the last read of the old one", r.Gaps[0])
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
