package bfd

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// peersEnv, set, makes this test binary BenchmarkCPU256Split's peer
// process instead of running tests (TestMain).
const peersEnv = "BFD_BENCH_PEERS"

// splitNet is the 127.0.x network of BenchmarkCPU256Split's peers.
const splitNet = 7

func TestMain(m *testing.M) {
	if os.Getenv(peersEnv) != "" {
		os.Exit(runPeers())
	}
	os.Exit(m.Run())
}

// runPeers runs the far ends of BenchmarkCPU256Split's 256 sessions until
// its standard input closes.
func runPeers() int {
	m := NewManager(ManagerOptions{})
	defer m.Close()
	_, far := pairKeys(256, splitNet)
	for _, k := range far {
		if _, err := m.Add(cfg100(k)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// BenchmarkCPU256Split runs 256 sessions at 3 × 100 ms with their far ends
// in a process of their own (this test binary again, 256 loopback
// addresses) and reports, over 5 s, the CPU time per wall second of this
// process, one manager with 256 sessions of one local address, as a
// reflector with 256 switches runs them (cpu-%), and of the peers'
// process (peers-cpu-%).
func BenchmarkCPU256Split(b *testing.B) {
	for b.Loop() {
		m := NewManager(ManagerOptions{})
		c := watch(m)
		near, _ := pairKeys(256, splitNet)
		for _, k := range near {
			if _, err := m.Add(cfg100(k)); err != nil {
				b.Fatal(err)
			}
		}
		peers := exec.Command(os.Args[0])
		peers.Env = append(os.Environ(), peersEnv+"=1")
		peers.Stderr = os.Stderr
		stdin, err := peers.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := peers.Start(); err != nil {
			b.Fatal(err)
		}
		for _, k := range near {
			c.waitFor(b, k, Up, 0)
		}
		time.Sleep(time.Second)
		var r0, r1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		p0 := procCPU(b, peers.Process.Pid)
		start := time.Now()
		time.Sleep(5 * time.Second)
		syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		p1 := procCPU(b, peers.Process.Pid)
		wall := time.Since(start)
		up := 0
		for _, s := range m.Sessions() {
			if s.State == Up {
				up++
			}
		}
		stdin.Close()
		if err := peers.Wait(); err != nil {
			b.Fatalf("peers: %v", err)
		}
		m.Close()
		if up != 256 {
			b.Fatalf("%d of 256 sessions Up", up)
		}
		cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()) + time.Duration(r1.Stime.Nano()-r0.Stime.Nano())
		b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%")
		b.ReportMetric(100*(p1-p0).Seconds()/wall.Seconds(), "peers-cpu-%")
		b.ReportMetric(float64(up), "sessions-up")
	}
}

// procCPU returns a process's user and system time from /proc (in clock
// ticks of 10 ms: USER_HZ is 100 on Linux).
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, raw)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
