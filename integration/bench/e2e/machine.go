package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/openinof/inof/integration/bench/result"
)

// Machine is where a benchmark ran: the processor count, the CPU model and
// the load average, which docs/performance.md reports with every figure
// (the benchmark machine is shared; its load moves the tails).
type Machine struct {
	NProc int
	CPU   string
	// Load is the 1, 5 and 15 minute load average.
	Load [3]float64
}

// ReadMachine reads the machine's description from /proc.
func ReadMachine() (Machine, error) {
	m := Machine{NProc: runtime.NumCPU()}
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return m, fmt.Errorf("e2e: load average: %w", err)
	}
	if m.Load, err = parseLoadavg(string(b)); err != nil {
		return m, err
	}
	if b, err = os.ReadFile("/proc/cpuinfo"); err != nil {
		return m, fmt.Errorf("e2e: cpu model: %w", err)
	}
	m.CPU = cpuModel(string(b))
	return m, nil
}

// parseLoadavg reads the first three fields of /proc/loadavg.
func parseLoadavg(s string) ([3]float64, error) {
	var l [3]float64
	f := strings.Fields(s)
	if len(f) < 3 {
		return l, fmt.Errorf("e2e: /proc/loadavg %q: fewer than 3 fields", s)
	}
	for i := range l {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return l, fmt.Errorf("e2e: /proc/loadavg field %d: %w", i+1, err)
		}
		l[i] = v
	}
	return l, nil
}

// cpuModel is the first "model name" of /proc/cpuinfo, or "unknown".
func cpuModel(cpuinfo string) string {
	for line := range strings.Lines(cpuinfo) {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// Row is the machine as one table row: the 1-minute load average as the
// value, the rest in the note. when says which moment of which benchmark
// it was read at.
func (m Machine) Row(when string) result.Row {
	return result.Row{Group: "machine", Name: "load average, " + when, Unit: "load", Value: m.Load[0],
		Note: fmt.Sprintf("nproc %d, %s, load 1/5/15 min %.2f %.2f %.2f", m.NProc, m.CPU, m.Load[0], m.Load[1], m.Load[2])}
}

// DaemonCPU returns the CPU time (user + system) used so far by every
// running process whose command line names a configuration file under dir
// (a topo fabric's directory: dir/NODE/NODE.yaml), keyed by NODE.
func DaemonCPU(dir string) (map[string]time.Duration, error) {
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	out := map[string]time.Duration{}
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		node, ok := nodeOf(string(cmd), dir)
		if !ok {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		d, err := statCPU(string(stat))
		if err != nil {
			return nil, err
		}
		out[node] += d
	}
	return out, nil
}

// nodeOf finds dir/NODE/NODE.yaml among the NUL-separated arguments.
func nodeOf(cmdline, dir string) (string, bool) {
	for _, arg := range strings.Split(cmdline, "\x00") {
		rest, ok := strings.CutPrefix(arg, strings.TrimSuffix(dir, "/")+"/")
		if !ok {
			continue
		}
		node, file, ok := strings.Cut(rest, "/")
		if ok && file == node+".yaml" {
			return node, true
		}
	}
	return "", false
}

// clockTick is the kernel's USER_HZ, 100 on every Linux architecture Go
// runs on.
const clockTick = 10 * time.Millisecond

// statCPU reads utime + stime from /proc/PID/stat (fields 14 and 15,
// counted after the parenthesised command name, which may hold spaces).
func statCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("e2e: /proc stat %q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("e2e: /proc stat: %d fields after the name", len(f))
	}
	var sum time.Duration
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("e2e: /proc stat: %w", err)
		}
		sum += time.Duration(v) * clockTick
	}
	return sum, nil
}
