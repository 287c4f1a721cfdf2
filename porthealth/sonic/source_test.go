package sonic

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/porthealth"
)

// startRedis runs Debian's redis-server on a unix socket in a temporary
// directory, without persistence, and returns the socket's path. It fails
// under CI when redis-server is missing (.ci/run installs it).
func startRedis(tb testing.TB) string {
	tb.Helper()
	bin := netns.RequireTool(tb, "redis-server")
	dir := tb.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", dir, "--databases", "16")
	// No Pdeathsig: it follows the OS thread that started the child, and
	// a thread locked into a namespace (netns.Do) exits with its goroutine.
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start redis-server: %v", err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, MaxRetries: -1})
	defer c.Close()
	// Wait for the socket: readiness is an event, the limit only stops a
	// server that never comes up from hanging the test.
	for i := 0; ; i++ {
		if err := c.Ping(context.Background()).Err(); err == nil {
			return sock
		} else if i == 3000 {
			tb.Fatalf("redis-server did not answer: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// counters is a client on COUNTERS_DB that lays out the sonic-swss schema
// for ports Ethernet0, Ethernet4, … with port and queue object ids as
// syncd names them.
type counters struct {
	tb testing.TB
	c  *redis.Client
}

func newCounters(tb testing.TB, sock string) *counters {
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, DB: CountersDB, MaxRetries: -1})
	tb.Cleanup(func() { c.Close() })
	return &counters{tb: tb, c: c}
}

func portName(i int) string { return fmt.Sprintf("Ethernet%d", 4*i) }
func portOID(i int) string  { return fmt.Sprintf("oid:0x1000000000%03x", i+1) }
func queueOID(i, q int) string {
	return fmt.Sprintf("oid:0x15000000000%03x%x", i+1, q)
}

// load writes n ports: the name maps, each port's counters (PFC for all 8
// priorities, errors) and the watchdog status of queues 3 and 4.
func (k *counters) load(n int) {
	k.tb.Helper()
	ctx := context.Background()
	pipe := k.c.Pipeline()
	for i := range n {
		pipe.HSet(ctx, PortNameMap, portName(i), portOID(i))
		f := map[string]any{InErrors: "0", CRCErrors: "0", "SAI_PORT_STAT_IF_IN_OCTETS": "123456"}
		for p := range uint8(8) {
			f[PFCRxField(p)] = "0"
		}
		pipe.HSet(ctx, CountersKey+portOID(i), f)
		for q := range 8 {
			pipe.HSet(ctx, QueueNameMap, fmt.Sprintf("%s:%d", portName(i), q), queueOID(i, q))
			pipe.HSet(ctx, CountersKey+queueOID(i, q), "SAI_QUEUE_STAT_PACKETS", "0")
		}
		for _, q := range []int{3, 4} {
			pipe.HSet(ctx, CountersKey+queueOID(i, q), WatchdogStat, "operational")
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		k.tb.Fatal(err)
	}
}

func (k *counters) set(key, field, value string) {
	k.tb.Helper()
	if err := k.c.HSet(context.Background(), key, field, value).Err(); err != nil {
		k.tb.Fatal(err)
	}
}

func TestReadCountersDB(t *testing.T) {
	sock := startRedis(t)
	k := newCounters(t, sock)
	k.load(3)
	src, err := Open(Options{Addr: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()

	k.set(CountersKey+portOID(1), PFCRxField(3), "4242")
	k.set(CountersKey+portOID(1), PFCRxField(5), "99") // not lossless: not read
	k.set(CountersKey+portOID(1), InErrors, "17")
	k.set(CountersKey+portOID(1), CRCErrors, "12")
	k.set(CountersKey+queueOID(1, 3), WatchdogStat, Stormed)
	got, err := src.Read(ctx, []string{"Ethernet4", "Ethernet0", "Ethernet99"})
	if err != nil {
		t.Fatal(err)
	}
	want := porthealth.Sample{Port: "Ethernet4", PauseValid: 1 << 3, HasWatchdog: true, Stormed: true, Errors: 17, HasErrors: true}
	want.Pause[3] = 4242
	if got[0] != want {
		t.Errorf("Ethernet4: %+v\nwant %+v", got[0], want)
	}
	if got[1].Port != "Ethernet0" || got[1].Err != nil || got[1].Stormed || got[1].Pause[3] != 0 || !got[1].HasWatchdog {
		t.Errorf("Ethernet0: %+v", got[1])
	}
	if got[2].Err == nil || !strings.Contains(got[2].Err.Error(), PortNameMap) {
		t.Errorf("Ethernet99: %+v, want an error naming %s", got[2], PortNameMap)
	}

	// A platform without IF_IN_ERRORS: the CRC counter is used. A queue
	// the watchdog does not watch has no status.
	k.c.HDel(ctx, CountersKey+portOID(2), InErrors)
	k.set(CountersKey+portOID(2), CRCErrors, "5")
	k.c.HDel(ctx, CountersKey+queueOID(2, 3), WatchdogStat)
	got, err = src.Read(ctx, []string{"Ethernet8"})
	if err != nil || got[0].Err != nil || got[0].Errors != 5 || got[0].HasWatchdog {
		t.Fatalf("Ethernet8: %+v, %v", got[0], err)
	}

	// Priorities 3 and 4: the status of both queues counts.
	src4, err := Open(Options{Addr: sock, Priorities: []uint8{3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer src4.Close()
	k.set(CountersKey+queueOID(2, 4), WatchdogStat, Stormed)
	got, err = src4.Read(ctx, []string{"Ethernet8"})
	if err != nil || !got[0].Stormed || got[0].PauseValid != 1<<3|1<<4 {
		t.Fatalf("Ethernet8 on priorities 3 and 4: %+v, %v", got[0], err)
	}

	// The lossless priority changed to 5 (a new profile): the source reads
	// priority 5's counter and queue 5, which has no watchdog status.
	src.SetPriorities([]uint8{5})
	got, err = src.Read(ctx, []string{"Ethernet4"})
	if err != nil || got[0].Err != nil || got[0].PauseValid != 1<<5 || got[0].Pause[5] != 99 || got[0].Pause[3] != 0 || got[0].HasWatchdog {
		t.Fatalf("Ethernet4 on priority 5: %+v, %v", got[0], err)
	}
	src.SetPriorities([]uint8{3})

	// A garbled counter is that port's error, not the read's.
	k.set(CountersKey+portOID(0), PFCRxField(3), "lots")
	got, err = src.Read(ctx, []string{"Ethernet0", "Ethernet4"})
	if err != nil || got[0].Err == nil || got[1].Err != nil {
		t.Fatalf("garbled counter: %+v, %v", got, err)
	}
}

// TestObjectIDsChange: after syncd restarts, ports get new object ids and
// the old COUNTERS keys go; the source reloads the maps and reads on.
func TestObjectIDsChange(t *testing.T) {
	sock := startRedis(t)
	k := newCounters(t, sock)
	k.load(1)
	src, err := Open(Options{Addr: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	if got, err := src.Read(ctx, []string{"Ethernet0"}); err != nil || got[0].Err != nil {
		t.Fatalf("first read: %+v %v", got, err)
	}
	k.c.FlushDB(ctx)
	k.set(PortNameMap, "Ethernet0", "oid:0x1000000000abc")
	k.set(CountersKey+"oid:0x1000000000abc", PFCRxField(3), "7")
	got, err := src.Read(ctx, []string{"Ethernet0"})
	if err != nil || got[0].Err == nil {
		t.Fatalf("read with stale ids: %+v %v, want a port error", got, err)
	}
	got, err = src.Read(ctx, []string{"Ethernet0"})
	if err != nil || got[0].Err != nil || got[0].Pause[3] != 7 {
		t.Fatalf("read after reload: %+v %v", got, err)
	}
}

func TestRedisDown(t *testing.T) {
	src, err := Open(Options{Addr: filepath.Join(t.TempDir(), "none.sock")})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Read(context.Background(), []string{"Ethernet0"}); err == nil {
		t.Fatal("read without a server succeeded")
	}
	if _, err := Open(Options{Network: "udp"}); err == nil {
		t.Fatal("udp accepted")
	}
	if _, err := Open(Options{Priorities: []uint8{8}}); err == nil {
		t.Fatal("priority 8 accepted")
	}
}

// TestMonitorOnCountersDB drives a Monitor (ticks by hand, real Redis)
// through a storm that the counters show, one the watchdog reports, and an
// error burst.
func TestMonitorOnCountersDB(t *testing.T) {
	sock := startRedis(t)
	k := newCounters(t, sock)
	k.load(2)
	real, err := Open(Options{Addr: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	src := &handedSource{Source: real, served: make(chan struct{})}
	clk := &handClock{tick: make(chan time.Time)}
	const interval = 100 * time.Millisecond
	th := porthealth.DefaultThresholds() // 200 ms detection and recovery
	th.ErrorRecovery = time.Second
	m, err := porthealth.New(porthealth.Options{Source: src, Interval: interval, Thresholds: th, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	m.Watch([]string{portName(0), portName(1)})
	// Each step changes the counters, then ticks. Once Run took the tick
	// the poll before has finished (its events are out); the new poll's
	// read then waits in the source until the test takes served.
	next := func(want porthealth.Condition, sick bool, bump func(i int)) porthealth.Event {
		t.Helper()
		for i := 0; i < 100; i++ {
			bump(i)
			clk.tick <- time.Unix(0, clk.now.Add(int64(interval)))
			select {
			case ev := <-m.Events():
				<-src.served
				if ev.Condition != want || ev.Sick != sick || ev.Port != portName(1) {
					t.Fatalf("event %+v, want %v sick=%v on %s", ev, want, sick, portName(1))
				}
				return ev
			default:
			}
			<-src.served
		}
		t.Fatalf("no %v sick=%v event in 100 polls", want, sick)
		return porthealth.Event{}
	}
	pfc := CountersKey + portOID(1)
	pause, errs := 0, 0
	ev := next(porthealth.PFCStorm, true, func(int) { pause += 100; k.set(pfc, PFCRxField(3), strconv.Itoa(pause)) })
	if ev.At.Sub(ev.Onset) < th.StormDetection {
		t.Fatalf("storm reported after %v of pause", ev.At.Sub(ev.Onset))
	}
	next(porthealth.PFCStorm, false, func(int) {})
	k.set(CountersKey+queueOID(1, 3), WatchdogStat, Stormed)
	ev = next(porthealth.PFCStorm, true, func(int) {})
	if !strings.Contains(ev.Detail, "watchdog") {
		t.Fatalf("watchdog storm: %+v", ev)
	}
	k.set(CountersKey+queueOID(1, 3), WatchdogStat, "operational")
	next(porthealth.PFCStorm, false, func(int) {})
	next(porthealth.PacketErrors, true, func(int) { errs += 50; k.set(pfc, InErrors, strconv.Itoa(errs)) })
	next(porthealth.PacketErrors, false, func(int) {})
	if st := m.Stats(); st.ReadErrors != 0 || st.PortErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// handedSource hands each read to the test: served receives a value after
// every read.
type handedSource struct {
	*Source
	served chan struct{}
}

func (h *handedSource) Read(ctx context.Context, ports []string) ([]porthealth.Sample, error) {
	defer func() { h.served <- struct{}{} }()
	return h.Source.Read(ctx, ports)
}

// handClock ticks when the test sends on tick; now is the time the test
// last ticked.
type handClock struct {
	now  atomic.Int64
	tick chan time.Time
}

func (c *handClock) Now() time.Time                            { return time.Unix(0, c.now.Load()) }
func (c *handClock) NewTicker(time.Duration) porthealth.Ticker { return handTicker{c.tick} }

type handTicker struct{ c chan time.Time }

func (h handTicker) C() <-chan time.Time { return h.c }
func (handTicker) Stop()                 {}
