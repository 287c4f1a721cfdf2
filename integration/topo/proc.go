package topo

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"time"
)

// proc is one run of a node's daemon.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process was reaped
	err  error         // its exit status, valid after done
}

// Start starts the node's daemon inside its namespace (`ip netns exec`,
// which also gives it the namespace's /sys) with its output appended to the
// node's log, and waits until it answers /healthz with 200. It fails if the
// daemon is already running or exits before it is healthy.
func (n *Node) Start() error {
	if n.Kind == KindProbe {
		return fmt.Errorf("topo: %s is a probe device, it runs nothing", n.Name)
	}
	if n.f.guest != nil {
		return n.errInGuest("start (GuestStart starts it there)")
	}
	n.mu.Lock()
	if n.proc != nil && !n.proc.exited() {
		n.mu.Unlock()
		return fmt.Errorf("topo: %s already runs", n.Name)
	}
	bin, err := Binary(n.argv[0])
	if n.Binary != "" {
		bin, err = n.Binary, nil
	}
	if err != nil {
		n.mu.Unlock()
		return fmt.Errorf("topo: start %s: %w", n.Name, err)
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.mu.Unlock()
		return err
	}
	fmt.Fprintf(logf, "=== topo: %s start %s %v\n", time.Now().Format(time.RFC3339Nano), bin, n.argv[1:])
	argv := append([]string{bin}, n.argv[1:]...)
	if wrap := n.f.spec.Wrap; wrap != nil {
		argv = append(wrap(n.Name), argv...)
	}
	cmd := n.NS.Command(argv...)
	cmd.Env = append(os.Environ(), n.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		n.mu.Unlock()
		return fmt.Errorf("topo: start %s: %w", n.Name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		fmt.Fprintf(logf, "=== topo: %s exit: %v\n", time.Now().Format(time.RFC3339Nano), p.err)
		logf.Close()
		close(p.done)
	}()
	n.proc = p
	n.mu.Unlock()

	deadline := time.Now().Add(StartTimeout)
	for {
		code, _, herr := n.HTTPGet("/healthz")
		if herr == nil && code == 200 {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("topo: %s exited before it was healthy (%v); log:\n%s", n.Name, p.err, tail(n.logPath, 30))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topo: %s not healthy after %s (status %d, %v)", n.Name, StartTimeout, code, herr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Running reports whether the node's daemon runs.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil && !n.proc.exited()
}

// Kill sends SIGKILL (no shutdown of any kind) and waits until the daemon
// is reaped; it returns when the signal was sent.
func (n *Node) Kill() (time.Time, error) {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil || p.exited() {
		return time.Time{}, fmt.Errorf("topo: kill %s: not running", n.Name)
	}
	at := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return at, fmt.Errorf("topo: kill %s: %w", n.Name, err)
	}
	<-p.done
	return at, nil
}

// Stop sends SIGTERM and waits up to timeout for a clean exit. It returns
// an error if the daemon exits with a non-zero status or has to be killed.
func (n *Node) Stop(timeout time.Duration) error {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil || p.exited() {
		return fmt.Errorf("topo: stop %s: not running", n.Name)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("topo: stop %s: %w", n.Name, err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("topo: %s exited after SIGTERM: %w", n.Name, p.err)
		}
		return nil
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("topo: %s still ran %s after SIGTERM; killed", n.Name, timeout)
	}
}

// Reload rewrites the daemon's configuration file, changed by edit after
// the Spec's hooks, and sends SIGHUP. It returns the log size before the
// signal, for WaitLog of what the reload did.
func (n *Node) Reload(edit func(cfg map[string]any)) (int, error) {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil || p.exited() {
		return 0, fmt.Errorf("topo: reload %s: not running", n.Name)
	}
	if err := n.writeConfigEdited(edit); err != nil {
		return 0, err
	}
	mark := n.LogSize()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		return 0, fmt.Errorf("topo: reload %s: %w", n.Name, err)
	}
	return mark, nil
}

// Rewrite writes the node's configuration file again, changed by edit
// (if set) after the Spec's hooks, for the next Start.
func (n *Node) Rewrite(edit func(cfg map[string]any)) error { return n.writeConfigEdited(edit) }

// kill ends the daemon, if any, at teardown.
func (n *Node) kill() {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p != nil && !p.exited() {
		p.cmd.Process.Kill()
		<-p.done
	}
}

// Log returns the node's whole log so far (every run, each starting with a
// "=== topo:" line).
func (n *Node) Log() string {
	b, _ := os.ReadFile(n.logPath)
	return string(b)
}

// LogSize is the log's current length: pass it to WaitLog or LogSince to
// look only at what is logged from now on.
func (n *Node) LogSize() int {
	st, err := os.Stat(n.logPath)
	if err != nil {
		return 0
	}
	return int(st.Size())
}

// LogSince returns what the node logged after byte offset off, without
// reading what came before.
func (n *Node) LogSince(off int) string {
	f, err := os.Open(n.logPath)
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
func (n *Node) WaitLog(since int, re string, timeout time.Duration) (string, error) {
	rx, err := regexp.Compile(re)
	if err != nil {
		return "", err
	}
	var line string
	err = Poll(timeout, func() (bool, error) {
		line = rx.FindString(n.LogSince(since))
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
