package sonic

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRead1000Ports reads a switch of 1,000 ports (PFC, errors and
// the watchdog status of one lossless queue each) from a real
// redis-server per op: all of them (every port carries a device) and 40
// (the switch agent polls only the ports that carry a device). It reports
// the CPU this process and the server spend per read (cpu-ns/op,
// redis-cpu-ns/op): at a 200 ms poll interval a core's share is
// (cpu-ns/op + redis-cpu-ns/op) / 200 ms.
func BenchmarkRead1000Ports(b *testing.B) {
	sock := startRedis(b)
	k := newCounters(b, sock)
	const n = 1000
	k.load(n)
	for _, watched := range []int{n, 40} {
		b.Run(fmt.Sprintf("watched=%d", watched), func(b *testing.B) {
			src, err := Open(Options{Addr: sock})
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			ports := make([]string, watched)
			for i := range ports {
				ports[i] = portName(i * n / watched)
			}
			ctx := context.Background()
			if got, err := src.Read(ctx, ports); err != nil || got[watched-1].Err != nil {
				b.Fatalf("warm-up read: %v %+v", err, got[watched-1])
			}
			cpu0, rcpu0 := selfCPU(b), k.serverCPU()
			b.ResetTimer()
			for b.Loop() {
				if _, err := src.Read(ctx, ports); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(selfCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(k.serverCPU()-rcpu0)/float64(b.N), "redis-cpu-ns/op")
		})
	}
}

func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is redis-server's CPU time from INFO cpu.
func (k *counters) serverCPU() time.Duration {
	info, err := k.c.Info(context.Background(), "cpu").Result()
	if err != nil {
		k.tb.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "used_cpu_sys" || name == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				k.tb.Fatalf("INFO cpu %s: %v", name, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
