package topo

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"
)

// readings is the part of a Node that reads what the node did: its log
// on the machine (here), its /metrics and /healthz (http.go) and its fake
// nvme-cli's calls (fakenvme.go).
type readings struct {
	n       *Node
	logPath string
	http    *httpClient
}

// Log returns the node's whole log so far (every run, each starting with a
// "=== topo:" line).
func (r *readings) Log() string {
	b, _ := os.ReadFile(r.logPath)
	return string(b)
}

// LogSize is the log's current length: pass it to WaitLog or LogSince to
// look only at what is logged from now on.
func (r *readings) LogSize() int {
	st, err := os.Stat(r.logPath)
	if err != nil {
		return 0
	}
	return int(st.Size())
}

// LogSince returns what the node logged after byte offset off, without
// reading what came before.
func (r *readings) LogSince(off int) string {
	f, err := os.Open(r.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(int64(off), io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// WaitLog waits until the log after byte offset since matches the regular
// expression re and returns the first match.
func (r *readings) WaitLog(since int, re string, timeout time.Duration) (string, error) {
	n := r.n
	rx, err := regexp.Compile(re)
	if err != nil {
		return "", err
	}
	var line string
	err = Poll(timeout, func() (bool, error) {
		line = rx.FindString(r.LogSince(since))
		if line == "" {
			return false, errors.New("not logged yet")
		}
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("topo: %s: no log line matching %q: %w", n.Name, re, err)
	}
	return line, nil
}

// logTime finds the time= field of a slog text line.
var logTime = regexp.MustCompile(`(?:^|\s)time=(\S+)`)

// LogTime returns when a daemon logged a line (its time= field, slog's
// text format, millisecond precision), for sending-side latencies.
func LogTime(line string) (time.Time, error) {
	m := logTime.FindStringSubmatch(line)
	if m == nil {
		return time.Time{}, fmt.Errorf("topo: no time= in log line %q", line)
	}
	at, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		return time.Time{}, fmt.Errorf("topo: log line %q: %w", line, err)
	}
	return at, nil
}
