// Package linuxstats reads port health counters on Linux switches and
// hosts: the receive errors of every port from the kernel's netdev
// statistics (rtnetlink IFLA_STATS64: rx_errors, rx_crc_errors,
// rx_frame_errors, one link dump per read) and the pause frames received
// per priority from the driver's ethtool statistics, read by name
// (ETHTOOL_GSTRINGS once per port, ETHTOOL_GSTATS per read) where the
// driver has them: mlxsw (Spectrum switches) names them rx_pause_prio_<n>,
// mlx5 (ConnectX) rx_prio<n>_pause. Linux has no PFC watchdog state to
// read, so storms are told from the pause counters alone.
//
// The netlink and ethtool sockets belong to the network namespace Open was
// called in.
package linuxstats

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/openinof/inof/porthealth"
)

// PauseNames maps a driver (as ethtool -i names it) to its per-priority
// pause statistic, %d standing for the priority.
var PauseNames = map[string]string{
	"mlxsw_spectrum":  "rx_pause_prio_%d",
	"mlxsw_spectrum2": "rx_pause_prio_%d",
	"mlxsw_spectrum3": "rx_pause_prio_%d",
	"mlxsw_spectrum4": "rx_pause_prio_%d",
	"mlx5_core":       "rx_prio%d_pause",
}

// NoPause is Options.PauseStat for reading no pause counters.
const NoPause = "-"

// Options say what to read.
type Options struct {
	// Priorities are the lossless priorities (3 if empty).
	Priorities []uint8
	// PauseStat is the ethtool statistic counting pause frames received on
	// one priority, with %d for the priority; empty picks it from the
	// port's driver (PauseNames), NoPause reads none.
	PauseStat string
}

// Source reads netlink and ethtool statistics. It is used by one goroutine
// (the Monitor's).
type Source struct {
	opts  Options
	nl    *netlink.Handle
	eth   *ethtool
	ports map[string]*portStats // ethtool layout per port
	links int                   // links in the last dump; 0 before the first
}

// portStats is where a port's pause counters sit in its ethtool statistics.
type portStats struct {
	nStats uint32
	index  [porthealth.NumPriorities]int // -1: the driver has no such statistic
}

// Open opens the netlink and ethtool sockets in the calling thread's
// network namespace.
func Open(o Options) (*Source, error) {
	if len(o.Priorities) == 0 {
		o.Priorities = []uint8{3}
	}
	for _, p := range o.Priorities {
		if p >= porthealth.NumPriorities {
			return nil, fmt.Errorf("linux stats: priority %d: priorities are 0–7", p)
		}
	}
	if o.PauseStat != "" && o.PauseStat != NoPause && strings.Count(o.PauseStat, "%d") != 1 {
		return nil, fmt.Errorf("linux stats: pause statistic %q: name it with one %%d for the priority (e.g. rx_pause_prio_%%d)", o.PauseStat)
	}
	nl, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("linux stats: netlink: %w", err)
	}
	eth, err := openEthtool()
	if err != nil {
		nl.Close()
		return nil, fmt.Errorf("linux stats: %w", err)
	}
	return &Source{opts: o, nl: nl, eth: eth, ports: map[string]*portStats{}}, nil
}

// SetPriorities implements porthealth.PrioritySource: the next reads
// fetch the pause counters of prios (those above 7 are left out); each
// port's statistics layout is looked up again.
func (s *Source) SetPriorities(prios []uint8) {
	s.opts.Priorities = slices.DeleteFunc(slices.Clone(prios), func(p uint8) bool { return p >= porthealth.NumPriorities })
	clear(s.ports)
}

// Close closes the sockets.
func (s *Source) Close() error {
	s.nl.Close()
	return s.eth.close()
}

// Read implements porthealth.Source: one link dump for the error
// counters, one ethtool read per port for the pause counters.
//
// The error counters come from one link dump, or, when the ports are
// fewer than a quarter of the links the last dump saw, from one link get
// per port: the kernel builds and we parse every link of a dump (about
// 12 µs a link), so on a switch of 1,000 ports polling the 40 that carry
// a device the gets cost a fraction of the dump.
func (s *Source) Read(_ context.Context, ports []string) ([]porthealth.Sample, error) {
	byName, err := s.linkStats(ports)
	if err != nil {
		return nil, err
	}
	out := make([]porthealth.Sample, len(ports))
	for i, name := range ports {
		smp := porthealth.Sample{Port: name}
		st, ok := byName[name]
		switch {
		case !ok:
			smp.Err = fmt.Errorf("no link %s", name)
		case st == nil:
			smp.Err = fmt.Errorf("link %s reports no statistics", name)
		default:
			smp.Errors, smp.HasErrors = RxErrors(st), true
			if s.opts.PauseStat != NoPause {
				smp.Err = s.readPause(name, &smp)
			}
		}
		out[i] = smp
	}
	return out, nil
}

// linkStats returns the statistics of ports by name (a port missing has
// no entry).
func (s *Source) linkStats(ports []string) (map[string]*netlink.LinkStatistics, error) {
	byName := make(map[string]*netlink.LinkStatistics, len(ports))
	if s.links == 0 || 4*len(ports) > s.links {
		links, err := s.nl.LinkList()
		if err != nil {
			return nil, fmt.Errorf("linux stats: link dump: %w", err)
		}
		s.links = len(links)
		for _, l := range links {
			byName[l.Attrs().Name] = l.Attrs().Statistics
		}
		return byName, nil
	}
	for _, name := range ports {
		l, err := s.nl.LinkByName(name)
		var missing netlink.LinkNotFoundError
		switch {
		case errors.As(err, &missing):
			continue
		case err != nil:
			return nil, fmt.Errorf("linux stats: link %s: %w", name, err)
		}
		byName[name] = l.Attrs().Statistics
	}
	return byName, nil
}

// RxErrors is the receive error count of a link: rx_errors, or the sum of
// CRC and frame errors where a driver counts those apart from it.
func RxErrors(st *netlink.LinkStatistics) uint64 {
	return max(st.RxErrors, st.RxCrcErrors+st.RxFrameErrors)
}

// readPause fills the pause counters of the watched priorities the
// port's driver has.
func (s *Source) readPause(name string, smp *porthealth.Sample) error {
	ps := s.ports[name]
	if ps == nil {
		var err error
		if ps, err = s.layout(name); err != nil {
			return err
		}
		s.ports[name] = ps
	}
	if !ps.any(s.opts.Priorities) {
		return nil
	}
	vals, err := s.eth.stats(name, ps.nStats)
	if err != nil {
		delete(s.ports, name) // the layout changed (driver reloaded): read it again
		return err
	}
	for _, p := range s.opts.Priorities {
		if j := ps.index[p]; j >= 0 {
			smp.Pause[p], smp.PauseValid = vals[j], smp.PauseValid|1<<p
		}
	}
	return nil
}

// layout finds the watched priorities' pause statistics of a port.
func (s *Source) layout(name string) (*portStats, error) {
	driver, _, err := s.eth.driver(name)
	if err != nil {
		return nil, err
	}
	ps := &portStats{}
	for i := range ps.index {
		ps.index[i] = -1
	}
	format := s.opts.PauseStat
	if format == "" {
		format = PauseNames[driver]
	}
	if format == "" {
		return ps, nil
	}
	names, n, err := s.eth.names(name)
	if err != nil {
		return nil, err
	}
	ps.nStats = n
	for _, p := range s.opts.Priorities {
		want := fmt.Sprintf(format, p)
		for j, got := range names {
			if got == want {
				ps.index[p] = j
				break
			}
		}
	}
	return ps, nil
}

func (ps *portStats) any(prios []uint8) bool {
	for _, p := range prios {
		if ps.index[p] >= 0 {
			return true
		}
	}
	return false
}
