package topo

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/openinof/inof/internal/netns"
	"github.com/openinof/inof/porthealth/sonic"
)

// CountersDB is a SONiC COUNTERS_DB for a switch agent's port health
// (port_health.source: sonic): Debian's redis-server on a unix socket,
// written by the test as syncd and the PFC watchdog would.
type CountersDB struct {
	Sock  string
	c     *redis.Client
	tb    testing.TB
	ports map[string]string // port → port oid
	queue map[string]string // port → oid of its lossless queue 3
}

// StartCountersDB starts redis-server (a path socket, which the switch
// daemons in their namespaces reach) for the test.
func StartCountersDB(tb testing.TB) *CountersDB {
	tb.Helper()
	bin := netns.RequireTool(tb, "redis-server")
	dir := tb.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	// No Pdeathsig: it follows the OS thread that started the child, and a
	// thread locked into a namespace (netns.Do) exits with its goroutine.
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "777", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start redis-server: %v", err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, DB: sonic.CountersDB, MaxRetries: -1})
	tb.Cleanup(func() { c.Close() })
	for i := 0; ; i++ {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			break
		}
		if i == 3000 {
			tb.Fatalf("redis-server did not answer: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &CountersDB{Sock: sock, c: c, tb: tb, ports: map[string]string{}, queue: map[string]string{}}
}

// AddSwitch lays out every access port of sw: the name maps, PFC and
// error counters at zero, and the watchdog watching queue 3.
func (db *CountersDB) AddSwitch(sw *Node) {
	db.tb.Helper()
	ctx := context.Background()
	for _, l := range sw.Links {
		n := len(db.ports) + 1
		p, q := fmt.Sprintf("oid:0x10%013x", n), fmt.Sprintf("oid:0x15%013x", n)
		db.ports[l.Port], db.queue[l.Port] = p, q
		db.must(db.c.HSet(ctx, sonic.PortNameMap, l.Port, p).Err())
		db.must(db.c.HSet(ctx, sonic.CountersKey+p, sonic.PFCRxField(3), "0", sonic.InErrors, "0").Err())
		db.must(db.c.HSet(ctx, sonic.QueueNameMap, l.Port+":3", q).Err())
		db.must(db.c.HSet(ctx, sonic.CountersKey+q, sonic.WatchdogStat, "operational").Err())
	}
}

// SetStormed sets the PFC watchdog's status of port's queue 3.
func (db *CountersDB) SetStormed(port string, stormed bool) {
	db.tb.Helper()
	st := "operational"
	if stormed {
		st = sonic.Stormed
	}
	db.must(db.c.HSet(context.Background(), sonic.CountersKey+db.queue[port], sonic.WatchdogStat, st).Err())
}

// AddErrors adds n input errors to port's counters.
func (db *CountersDB) AddErrors(port string, n int64) {
	db.tb.Helper()
	db.must(db.c.HIncrBy(context.Background(), sonic.CountersKey+db.ports[port], sonic.InErrors, n).Err())
}

func (db *CountersDB) must(err error) {
	db.tb.Helper()
	if err != nil {
		db.tb.Fatalf("COUNTERS_DB: %v", err)
	}
}
