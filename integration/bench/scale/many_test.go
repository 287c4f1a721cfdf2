package scale

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/integration/bench/result"
)

// manySessions is what one setup measured on the many-sessions plan.
type manySessions struct {
	established time.Duration // first dial → every session established at the reflector
	synced      time.Duration // first dial → every record in
	cpu         time.Duration // the reflector's, over that time
	rss         int64
	peakRSS     int64
}

// measureMany connects one raw feeder session per switch of p (32 dialling
// at once), waits until the reflector reports them all established, then
// has each send its records and waits until the reflector holds them all.
func measureMany(tb testing.TB, s setup, p Plan) manySessions {
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer cancel()
	r := s.start(tb, p, false)
	defer r.stop()
	f0, err := r.figures(ctx, false)
	if err != nil {
		tb.Fatal(err)
	}
	feeders := make([]*Feeder, p.Switches)
	defer closeAll(feeders)
	recs := make([][]Record, p.Switches)
	for i := range p.Switches {
		if recs[i], err = p.SwitchRecords(i); err != nil {
			tb.Fatal(err)
		}
	}
	parallel := func(f func(i int) error) {
		errs := make(chan error, p.Switches)
		sem := make(chan struct{}, 32)
		var wg sync.WaitGroup
		for i := range p.Switches {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if err := f(i); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := errors.Join(collect(errs)...); err != nil {
			tb.Fatal(err)
		}
	}
	wait := func(what string, done func(childFigures) bool) childFigures {
		for {
			f, err := r.figures(ctx, false)
			if err != nil {
				tb.Fatal(err)
			}
			if done(f) {
				return f
			}
			select {
			case <-ctx.Done():
				tb.Fatalf("%s: %+v: %v", what, f, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	t0 := time.Now()
	parallel(func(i int) error {
		f, err := Dial(ctx, SwitchID(i), r.addr(), ASN)
		feeders[i] = f
		return err
	})
	wait("sessions established", func(f childFigures) bool { return f.Established >= p.Switches })
	var m manySessions
	m.established = time.Since(t0)
	parallel(func(i int) error { return feeders[i].Send(recs[i]) })
	f := wait("records in", func(f childFigures) bool { return f.Count >= p.Devices })
	m.synced = time.Since(t0)
	m.cpu, m.rss, m.peakRSS = time.Duration(f.CPUns-f0.CPUns), f.RSS, f.PeakRSS
	tb.Logf("%s: %d sessions established in %v, %d devices in after %v; reflector CPU %.1f s, RSS %d MB (peak %d MB)",
		s.name, p.Switches, m.established.Round(time.Millisecond), p.Devices, m.synced.Round(time.Millisecond),
		m.cpu.Seconds(), m.rss>>20, m.peakRSS>>20)
	return m
}

// manyRows are the many-sessions figures, ours against stock.
func manyRows(p Plan, names []string, many map[string]manySessions) []result.Row {
	name := fmt.Sprintf("reflector with %d switch sessions (%d devices each)", p.Switches, p.Devices/p.Switches)
	var rows []result.Row
	fig := func(label, unit, goal, note string, f func(manySessions) float64) {
		vals := map[string]float64{}
		for n, m := range many {
			vals[n] = f(m)
		}
		rows = append(rows, oursVsStock(names, name+": "+label, unit, goal, vals, note)...)
	}
	fig("all established", "s", "≤ 60 s", "raw feeder sessions dialling 32 at a time, from the first dial",
		func(m manySessions) float64 { return m.established.Seconds() })
	fig("all established and synced", "s", "", "then each sends its records; until the reflector holds every device",
		func(m manySessions) float64 { return m.synced.Seconds() })
	fig("reflector CPU", "s", "", "user+system, first dial to synced", func(m manySessions) float64 { return m.cpu.Seconds() })
	fig("reflector RSS", "MB", "", "", func(m manySessions) float64 { return float64(m.rss) / (1 << 20) })
	fig("reflector peak RSS", "MB", "", "", func(m manySessions) float64 { return float64(m.peakRSS) / (1 << 20) })
	return rows
}
