package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
)

// meter is the read loop's shared state.
type meter struct {
	mu     sync.Mutex
	start  time.Time
	last   time.Time
	rep    ctlproto.StallReport
	report time.Duration // gaps at least this long are printed as they end
	record time.Duration // gaps at least this long go into the report's Gaps
}

func (m *meter) done(err error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.rep.Errors++
		if m.rep.Errors <= 5 {
			fmt.Printf("iostall: read error: %v\n", err)
		}
		return
	}
	m.rep.Reads++
	if gap := now.Sub(m.last); gap > time.Duration(m.rep.MaxGapMS*float64(time.Millisecond)) {
		m.rep.MaxGapMS = float64(gap) / float64(time.Millisecond)
		m.rep.MaxGapEnd, m.rep.MaxGapEndNS = uptime(), now.UnixNano()
	}
	if gap := now.Sub(m.last); gap >= m.record {
		m.rep.Gaps = keepGap(m.rep.Gaps, ctlproto.Gap{StartNS: m.last.UnixNano(), EndNS: now.UnixNano()})
	}
	if gap := now.Sub(m.last); gap >= m.report {
		fmt.Printf("iostall: gap %.0f ms ended at uptime %.2f\n", float64(gap)/float64(time.Millisecond), uptime())
	}
	m.last = now
}

// keepGap adds g to gaps; a full list (ctlproto.MaxGaps) keeps the longest
// gaps: g replaces the shortest when it is longer.
func keepGap(gaps []ctlproto.Gap, g ctlproto.Gap) []ctlproto.Gap {
	if len(gaps) < ctlproto.MaxGaps {
		return append(gaps, g)
	}
	short := 0
	for i, x := range gaps {
		if x.EndNS-x.StartNS < gaps[short].EndNS-gaps[short].StartNS {
			short = i
		}
	}
	if g.EndNS-g.StartNS > gaps[short].EndNS-gaps[short].StartNS {
		gaps[short] = g
	}
	return gaps
}

func (m *meter) final() ctlproto.StallReport {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rep
	r.Gaps = slices.Clone(r.Gaps)
	if gap := float64(now.Sub(m.last)) / float64(time.Millisecond); gap > r.MaxGapMS {
		r.MaxGapMS, r.MaxGapEnd, r.MaxGapEndNS = gap, uptime(), now.UnixNano()
	}
	if now.Sub(m.last) >= m.record {
		r.Gaps = keepGap(r.Gaps, ctlproto.Gap{StartNS: m.last.UnixNano(), EndNS: now.UnixNano()})
	}
	r.Seconds = now.Sub(m.start).Seconds()
	return r
}

// window ends the current measuring window: it returns the report so far
// and starts counting reads, errors and the longest gap afresh (the gap
// in progress counts in the new window from its start).
func (m *meter) window() ctlproto.StallReport {
	r := m.final()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rep = ctlproto.StallReport{}
	m.start = time.Now()
	return r
}

// iostall reads random blocks of a block device with O_DIRECT, one at a
// time, until SIGTERM or SIGINT, and then prints a ctlproto.StallReport;
// SIGUSR1 prints one and goes on, SIGUSR2 prints one and starts a new
// window (one report per link cut).
func iostall(args []string) int {
	fs := flag.NewFlagSet("iostall", flag.ContinueOnError)
	dev := fs.String("dev", "", "block device to read")
	bs := fs.Int("bs", 4096, "read size in bytes (a multiple of 4096)")
	span := fs.Int64("span", 64<<20, "read offsets below this many bytes (capped at the device size)")
	report := fs.Duration("report", 200*time.Millisecond, "print every gap at least this long")
	record := fs.Duration("record", 20*time.Millisecond, "list every gap at least this long in the reports")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dev == "" || *bs <= 0 || *bs%4096 != 0 || *span < int64(*bs) {
		fmt.Fprintln(os.Stderr, "iostall: need -dev, -bs a positive multiple of 4096, -span >= bs")
		return 2
	}
	f, err := os.OpenFile(*dev, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "iostall: %v\n", err)
		return 1
	}
	defer f.Close()
	if size, err := f.Seek(0, io.SeekEnd); err == nil && size < *span {
		*span = size
	}
	if *span < int64(*bs) {
		fmt.Fprintf(os.Stderr, "iostall: %s is smaller than one read\n", *dev)
		return 1
	}
	// O_DIRECT wants an aligned buffer: an anonymous mapping is page aligned.
	buf, err := unix.Mmap(-1, 0, *bs, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		fmt.Fprintf(os.Stderr, "iostall: buffer: %v\n", err)
		return 1
	}
	now := time.Now()
	m := &meter{start: now, last: now, report: *report, record: *record}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		blocks := *span / int64(*bs)
		for {
			off := rand.Int64N(blocks) * int64(*bs)
			n, err := unix.Pread(int(f.Fd()), buf, off)
			if err == nil && n != *bs {
				err = errors.New("short read")
			}
			m.done(err)
			if err != nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	fmt.Printf("iostall: reading %s, %d bytes at a time below %d\n", *dev, *bs, *span)
	for {
		s := <-sig
		var r ctlproto.StallReport
		if s == syscall.SIGUSR2 {
			r = m.window()
		} else {
			r = m.final()
		}
		b, _ := json.Marshal(r)
		fmt.Printf("%s\n", b)
		if s != syscall.SIGUSR1 && s != syscall.SIGUSR2 {
			return 0
		}
	}
}
