package daemon

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Notifier speaks systemd's notification protocol (sd_notify(3)): one
// datagram per message to the unix socket named by NOTIFY_SOCKET (a path,
// or an abstract name starting with '@'). It is these few lines rather
// than coreos/go-systemd: that module is not served by our module proxy,
// and the protocol is one sendto.
//
// The zero Notifier (no NOTIFY_SOCKET: not started by systemd with
// Type=notify) sends nothing.
type Notifier struct {
	addr     *net.UnixAddr
	watchdog time.Duration
}

// NewNotifier reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID from
// environ ("KEY=value" entries).
func NewNotifier(environ []string) (*Notifier, error) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	n := &Notifier{}
	if sock := env["NOTIFY_SOCKET"]; sock != "" {
		if sock[0] != '/' && sock[0] != '@' {
			return nil, fmt.Errorf("NOTIFY_SOCKET %q: want an absolute path or an abstract name (@…)", sock)
		}
		// An abstract name's leading '@' stands for the NUL byte; Go's
		// net package makes that translation itself.
		n.addr = &net.UnixAddr{Name: sock, Net: "unixgram"}
	}
	if us := env["WATCHDOG_USEC"]; us != "" && n.addr != nil {
		pid := env["WATCHDOG_PID"]
		if pid == "" || pid == strconv.Itoa(os.Getpid()) {
			v, err := strconv.ParseUint(us, 10, 63)
			if err != nil || v == 0 {
				return nil, fmt.Errorf("WATCHDOG_USEC %q: want a positive number of microseconds", us)
			}
			n.watchdog = time.Duration(v) * time.Microsecond
		}
	}
	return n, nil
}

// Enabled reports whether a notification socket is set.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != nil }

// Watchdog is the watchdog interval systemd asked for (0: none). Pings
// should come at least twice per interval.
func (n *Notifier) Watchdog() time.Duration {
	if n == nil {
		return 0
	}
	return n.watchdog
}

// Send sends one notification: lines such as "READY=1", "STATUS=...".
func (n *Notifier) Send(lines ...string) error {
	if !n.Enabled() {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(strings.Join(lines, "\n") + "\n")); err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}

// monotonicUsec is CLOCK_MONOTONIC in microseconds, which systemd wants
// with RELOADING=1.
func monotonicUsec() string {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return "0"
	}
	return strconv.FormatInt(ts.Nano()/1000, 10)
}
