// Package sonic reads port health counters from SONiC's COUNTERS_DB, the
// Redis database syncd's flex counters fill (sonic-swss schema):
//
//   - COUNTERS_PORT_NAME_MAP (hash): port name → port object id.
//   - COUNTERS:<port oid> (hash): SAI_PORT_STAT_PFC_<n>_RX_PKTS (pause
//     frames received on priority n), SAI_PORT_STAT_IF_IN_ERRORS and
//     SAI_PORT_STAT_ETHER_STATS_CRC_ALIGN_ERRORS.
//   - COUNTERS_QUEUE_NAME_MAP (hash): "<port>:<queue>" → queue object id.
//   - COUNTERS:<queue oid> (hash): PFC_WD_STATUS, "operational" or
//     "stormed", written by the PFC watchdog (orchagent's pfcwdorch) on the
//     queues it watches.
//
// A lossless priority's queue has the priority's index (SONiC's default
// TC and queue maps for RoCE).
package sonic

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/openinof/inof/porthealth"
)

// Key and field names of COUNTERS_DB.
const (
	PortNameMap  = "COUNTERS_PORT_NAME_MAP"
	QueueNameMap = "COUNTERS_QUEUE_NAME_MAP"
	CountersKey  = "COUNTERS:" // + object id
	InErrors     = "SAI_PORT_STAT_IF_IN_ERRORS"
	CRCErrors    = "SAI_PORT_STAT_ETHER_STATS_CRC_ALIGN_ERRORS"
	WatchdogStat = "PFC_WD_STATUS"
	Stormed      = "stormed"
)

// PFCRxField is the field counting pause frames received on priority p.
func PFCRxField(p uint8) string { return fmt.Sprintf("SAI_PORT_STAT_PFC_%d_RX_PKTS", p) }

// Defaults: SONiC's Redis socket and the COUNTERS_DB index.
const (
	DefaultSocket = "/var/run/redis/redis.sock"
	CountersDB    = 2
)

// Options say where COUNTERS_DB is and what to read.
type Options struct {
	// Network is "unix" (default) or "tcp"; Addr the socket path
	// (DefaultSocket) or host:port.
	Network, Addr string
	// DB is the COUNTERS_DB index (CountersDB if zero).
	DB int
	// Priorities are the lossless priorities (3 if empty).
	Priorities []uint8
}

// Source reads COUNTERS_DB. It is used by one goroutine (the Monitor's).
type Source struct {
	c      *redis.Client
	prios  []uint8
	fields []string // per port: PFC per priority, then InErrors, CRCErrors

	ports  map[string]string // name → port oid
	queues map[string]string // "name:queue" → queue oid
	stale  bool              // reload the name maps before the next read
}

// Open connects lazily (the first Read dials) and returns the source.
func Open(o Options) (*Source, error) {
	if o.Network == "" {
		o.Network = "unix"
	}
	if o.Network != "unix" && o.Network != "tcp" {
		return nil, fmt.Errorf("sonic counters: network %q: use unix or tcp", o.Network)
	}
	if o.Addr == "" {
		if o.Network != "unix" {
			return nil, errors.New("sonic counters: a tcp address is host:port")
		}
		o.Addr = DefaultSocket
	}
	if o.DB == 0 {
		o.DB = CountersDB
	}
	if len(o.Priorities) == 0 {
		o.Priorities = []uint8{3}
	}
	for _, p := range o.Priorities {
		if p >= porthealth.NumPriorities {
			return nil, fmt.Errorf("sonic counters: priority %d: priorities are 0–7", p)
		}
	}
	s := &Source{stale: true}
	s.SetPriorities(o.Priorities)
	s.c = redis.NewClient(&redis.Options{Network: o.Network, Addr: o.Addr, DB: o.DB, Protocol: 2,
		DisableIdentity: true, PoolSize: 2, MaxRetries: -1})
	return s, nil
}

// SetPriorities implements porthealth.PrioritySource: the next reads
// fetch the pause counters and watchdog queues of prios (those above 7 are
// left out).
func (s *Source) SetPriorities(prios []uint8) {
	s.prios, s.fields = s.prios[:0], s.fields[:0]
	for _, p := range prios {
		if p < porthealth.NumPriorities {
			s.prios = append(s.prios, p)
			s.fields = append(s.fields, PFCRxField(p))
		}
	}
	s.fields = append(s.fields, InErrors, CRCErrors)
}

// Close closes the connections.
func (s *Source) Close() error { return s.c.Close() }

// loadMaps reads both name maps.
func (s *Source) loadMaps(ctx context.Context) error {
	pipe := s.c.Pipeline()
	pm := pipe.HGetAll(ctx, PortNameMap)
	qm := pipe.HGetAll(ctx, QueueNameMap)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("sonic counters: read the name maps: %w", err)
	}
	s.ports, s.queues, s.stale = pm.Val(), qm.Val(), false
	return nil
}

// Read implements porthealth.Source with one pipelined round trip (two
// when the name maps are reloaded: at the first read, and after a port or
// its counters went missing, as after syncd restarted with new object ids).
func (s *Source) Read(ctx context.Context, ports []string) ([]porthealth.Sample, error) {
	if s.stale {
		if err := s.loadMaps(ctx); err != nil {
			return nil, err
		}
	}
	type pending struct {
		counters *redis.SliceCmd
		wd       []*redis.StringCmd
	}
	pend := make([]pending, len(ports))
	pipe := s.c.Pipeline()
	for i, name := range ports {
		oid, ok := s.ports[name]
		if !ok {
			continue
		}
		pend[i].counters = pipe.HMGet(ctx, CountersKey+oid, s.fields...)
		for _, p := range s.prios {
			if q, ok := s.queues[name+":"+strconv.Itoa(int(p))]; ok {
				pend[i].wd = append(pend[i].wd, pipe.HGet(ctx, CountersKey+q, WatchdogStat))
			}
		}
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("sonic counters: %w", err)
		}
	}
	out := make([]porthealth.Sample, len(ports))
	for i, name := range ports {
		out[i] = s.sample(name, pend[i].counters, pend[i].wd)
	}
	return out, nil
}

// sample decodes one port's replies.
func (s *Source) sample(name string, counters *redis.SliceCmd, wd []*redis.StringCmd) porthealth.Sample {
	smp := porthealth.Sample{Port: name}
	if counters == nil {
		s.stale = true
		smp.Err = fmt.Errorf("port %s is not in %s", name, PortNameMap)
		return smp
	}
	vals := counters.Val()
	found := false
	num := func(i int) (uint64, bool, error) {
		if i >= len(vals) || vals[i] == nil {
			return 0, false, nil
		}
		found = true
		str, _ := vals[i].(string)
		v, err := strconv.ParseUint(str, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s of %s: %q is not a counter", s.fields[i], name, str)
		}
		return v, true, nil
	}
	for i, p := range s.prios {
		v, ok, err := num(i)
		if err != nil {
			smp.Err = err
			return smp
		}
		if ok {
			smp.Pause[p], smp.PauseValid = v, smp.PauseValid|1<<p
		}
	}
	for _, i := range []int{len(s.prios), len(s.prios) + 1} {
		v, ok, err := num(i)
		if err != nil {
			smp.Err = err
			return smp
		}
		if ok {
			smp.Errors, smp.HasErrors = max(smp.Errors, v), true
		}
	}
	if !found {
		s.stale = true
		smp.Err = fmt.Errorf("port %s has no counters in COUNTERS_DB", name)
		return smp
	}
	for _, c := range wd {
		st, err := c.Result()
		if err != nil {
			continue // this queue is not watched
		}
		smp.HasWatchdog = true
		if st == Stormed {
			smp.Stormed = true
		}
	}
	return smp
}
