package topo

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one run of a node's daemon.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process was reaped
	err  error         // its exit status, valid after done
}

// daemon is the part of a Node that controls its daemon's process in the
// node's namespace: start, stop, kill and reload.
type daemon struct {
	n *Node

	mu   sync.Mutex
	proc *proc
}

// Start starts the node's daemon inside its namespace (`ip netns exec`,
// which also gives it the namespace's /sys) with its output appended to the
// node's log, and waits until it answers /healthz with 200. It fails if the
// daemon is already running or exits before it is healthy.
func (d *daemon) Start() error {
	n := d.n
	if n.Kind == KindProbe {
		return fmt.Errorf("topo: %s is a probe device, it runs nothing", n.Name)
	}
	if n.f.guest != nil {
		return n.errInGuest("start (GuestStart starts it there)")
	}
	d.mu.Lock()
	if d.proc != nil && !d.proc.exited() {
		d.mu.Unlock()
		return fmt.Errorf("topo: %s already runs", n.Name)
	}
	bin, err := Binary(n.argv[0])
	if n.Binary != "" {
		bin, err = n.Binary, nil
	}
	if err != nil {
		d.mu.Unlock()
		return fmt.Errorf("topo: start %s: %w", n.Name, err)
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		d.mu.Unlock()
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
		d.mu.Unlock()
		return fmt.Errorf("topo: start %s: %w", n.Name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		fmt.Fprintf(logf, "=== topo: %s exit: %v\n", time.Now().Format(time.RFC3339Nano), p.err)
		logf.Close()
		close(p.done)
	}()
	d.proc = p
	d.mu.Unlock()

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
func (d *daemon) Running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.proc != nil && !d.proc.exited()
}

// Kill sends SIGKILL (no shutdown of any kind) and waits until the daemon
// is reaped; it returns when the signal was sent.
func (d *daemon) Kill() (time.Time, error) {
	n := d.n
	d.mu.Lock()
	p := d.proc
	d.mu.Unlock()
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
func (d *daemon) Stop(timeout time.Duration) error {
	n := d.n
	d.mu.Lock()
	p := d.proc
	d.mu.Unlock()
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
func (d *daemon) Reload(edit func(cfg map[string]any)) (int, error) {
	n := d.n
	d.mu.Lock()
	p := d.proc
	d.mu.Unlock()
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

// kill ends the daemon, if any, at teardown.
func (d *daemon) kill() {
	d.mu.Lock()
	p := d.proc
	d.mu.Unlock()
	if p != nil && !p.exited() {
		p.cmd.Process.Kill()
		<-p.done
	}
}
