package bfd

import (
	"net/netip"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkDetection measures, at 3 × 50 ms, the time from a peer falling
// silent to the session going Down, over 60 kills; it reports p50 and p99.
func BenchmarkDetection(b *testing.B) {
	var all []time.Duration
	for b.Loop() {
		ma, mb, ca, _ := pair(b)
		next := 0
		for range 60 {
			if _, err := ma.Add(fast(keyA)); err != nil {
				b.Fatal(err)
			}
			sb, err := mb.Add(fast(keyB))
			if err != nil {
				b.Fatal(err)
			}
			_, next = ca.waitFor(b, keyA, Up, next)
			time.Sleep(100 * time.Millisecond) // let the Poll sequence finish
			killed := time.Now()
			sb.conn.Close()
			down, n := ca.waitFor(b, keyA, Down, next)
			next = n
			if down.Diag != DiagControlExpired {
				b.Fatalf("went down with %s, not by detection", down.Diag)
			}
			all = append(all, down.At.Sub(killed))
			ma.Remove(keyA)
			mb.Remove(keyB)
		}
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(all[len(all)-1].Microseconds())/1000, "max-ms")
}

// BenchmarkCPU256 runs 256 sessions at 3 × 100 ms between two managers in
// this process for 5 s and reports the process CPU time per wall second
// (both ends' work: 512 sessions' worth of packets).
func BenchmarkCPU256(b *testing.B) {
	for b.Loop() {
		ma, mb, ca, _ := pair(b)
		addPairs(b, ma, mb, ca, 256, 4)
		time.Sleep(time.Second)
		var r0, r1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		start := time.Now()
		time.Sleep(5 * time.Second)
		syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		wall := time.Since(start)
		cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()) + time.Duration(r1.Stime.Nano()-r0.Stime.Nano())
		b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%")
		up := 0
		for _, s := range ma.Sessions() {
			if s.State == Up {
				up++
			}
		}
		if up != 256 {
			b.Fatalf("%d of 256 sessions Up", up)
		}
		b.ReportMetric(float64(up), "sessions-up")
	}
}

// addPairs adds n sessions at 3 × 100 ms between ma (all from addrA) and
// mb (each from its own loopback address, pairKeys), waits until ca,
// watching ma, heard them all Up and returns their keys.
func addPairs(b testing.TB, ma, mb *Manager, ca *changes, n int, net byte) (near, far []SessionKey) {
	near, far = pairKeys(n, net)
	for i := range near {
		if _, err := ma.Add(cfg100(near[i])); err != nil {
			b.Fatal(err)
		}
		if _, err := mb.Add(cfg100(far[i])); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range near {
		ca.waitFor(b, k, Up, 0)
	}
	return near, far
}

// pairKeys returns the keys of n session pairs: near from addrA, far from
// a loopback address of its own each, 127.0.net.i (the first 127.0.net+1.1).
func pairKeys(n int, net byte) (near, far []SessionKey) {
	for i := range n {
		peer := netip.AddrFrom4([4]byte{127, 0, net, byte(i)})
		if i == 0 {
			peer = netip.AddrFrom4([4]byte{127, 0, net + 1, 1})
		}
		near = append(near, SessionKey{Local: addrA, Peer: peer})
		far = append(far, SessionKey{Local: peer, Peer: addrA})
	}
	return near, far
}

func cfg100(k SessionKey) Config {
	return Config{Key: k, DesiredMinTx: 100 * time.Millisecond, RequiredMinRx: 100 * time.Millisecond, DetectMult: 3}
}
