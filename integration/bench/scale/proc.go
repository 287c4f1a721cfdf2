package scale

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Usage is a process's resident memory and CPU time so far.
type Usage struct {
	RSS     int64         // bytes
	PeakRSS int64         // the highest RSS so far (VmHWM)
	CPU     time.Duration // user + system
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's CPU times (100 on
// every Linux architecture Go supports).
const clockTick = 100

// ProcUsage reads /proc/PID/status and /proc/PID/stat; pid 0 is this
// process.
func ProcUsage(pid int) (Usage, error) {
	p := "self"
	if pid != 0 {
		p = strconv.Itoa(pid)
	}
	var u Usage
	status, err := os.ReadFile("/proc/" + p + "/status")
	if err != nil {
		return u, fmt.Errorf("scale: %w", err)
	}
	for line := range strings.Lines(string(status)) {
		for field, dst := range map[string]*int64{"VmRSS:": &u.RSS, "VmHWM:": &u.PeakRSS} {
			if rest, ok := strings.CutPrefix(line, field); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err != nil {
					return u, fmt.Errorf("scale: %s %q: %w", field, rest, err)
				}
				*dst = kb << 10
			}
		}
	}
	stat, err := os.ReadFile("/proc/" + p + "/stat")
	if err != nil {
		return u, fmt.Errorf("scale: %w", err)
	}
	// Fields after the command name (which may hold spaces): state is
	// field 3, utime 14 and stime 15.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return u, fmt.Errorf("scale: /proc/%s/stat: no command name", p)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return u, fmt.Errorf("scale: /proc/%s/stat: %d fields", p, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return u, fmt.Errorf("scale: /proc/%s/stat: utime %q stime %q", p, f[11], f[12])
	}
	u.CPU = time.Duration(ut+st) * time.Second / clockTick
	return u, nil
}
