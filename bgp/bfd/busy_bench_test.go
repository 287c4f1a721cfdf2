package bfd

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkBusyMachine runs 256 sessions at 3 × 100 ms between two
// managers in this process while a CPU hog (`yes`, a process of its own)
// runs on every core beside it, for BENCH_BFD_SECONDS (default 120 s), and
// reports the sessions' false downs per hour (every Up→Down: no peer ever
// stops; expired/h those a detection expiry caused, the rest are the other
// end's word of it; deferred/h the expiries put off because the process was
// not watching) and this process's CPU per session (both ends' work counted once
// per session pair, in % of one core). BENCH_BFD_HOGS=0 runs it without
// the hogs.
func BenchmarkBusyMachine(b *testing.B) {
	secs, hogs := 120, runtime.NumCPU()
	if v, err := strconv.Atoi(os.Getenv("BENCH_BFD_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	if v, err := strconv.Atoi(os.Getenv("BENCH_BFD_HOGS")); err == nil && v >= 0 {
		hogs = v
	}
	const n = 256
	for b.Loop() {
		ma, mb := NewManager(ManagerOptions{RealTime: true}), NewManager(ManagerOptions{RealTime: true})
		var downs, expired atomic.Int64
		count := func(ch StateChange) {
			if ch.Old == Up && ch.New == Down {
				downs.Add(1)
				if ch.Diag == DiagControlExpired {
					expired.Add(1)
				}
			}
		}
		ca := watch(ma)
		receive(ma, count)
		receive(mb, count)
		addPairs(b, ma, mb, ca, n, 6)
		time.Sleep(2 * time.Second) // Poll sequences done
		var procs []*exec.Cmd
		for range hogs {
			c := exec.Command("yes")
			if err := c.Start(); err != nil {
				b.Fatal(err)
			}
			procs = append(procs, c)
		}
		downs.Store(0)
		expired.Store(0)
		deferred0 := ma.Deferred() + mb.Deferred()
		var r0, r1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		start := time.Now()
		time.Sleep(time.Duration(secs) * time.Second)
		syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		wall := time.Since(start)
		deferred := ma.Deferred() + mb.Deferred() - deferred0
		nDowns, nExpired := downs.Load(), expired.Load() // before Close: its AdminDowns are not false downs
		for _, c := range procs {
			c.Process.Kill()
			c.Wait()
		}
		ma.Close()
		mb.Close()
		cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()) + time.Duration(r1.Stime.Nano()-r0.Stime.Nano())
		perHour := func(n int64) float64 { return float64(n) * float64(time.Hour) / float64(wall) }
		b.ReportMetric(perHour(nDowns), "false-downs/h")
		b.ReportMetric(perHour(nExpired), "expired/h")
		b.ReportMetric(perHour(int64(deferred)), "deferred/h")
		b.ReportMetric(100*cpu.Seconds()/wall.Seconds()/n, "cpu-%/session")
		b.ReportMetric(float64(hogs), "hogs")
	}
}
