package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
)

// ErrGuestGone is returned for requests a guest can no longer answer
// because its qemu exited (or the control channel broke).
var ErrGuestGone = errors.New("vm: guest gone")

// ctlClient talks the control protocol over qemu's unix socket of the
// guest's virtio-serial port. One goroutine reads and dispatches replies.
type ctlClient struct {
	conn net.Conn

	wmu sync.Mutex // serialises writes
	enc *json.Encoder

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan ctlproto.Reply

	closed chan struct{} // closed when the reader stops
}

// dialCtl connects to the control socket, retrying until it exists.
func dialCtl(ctx context.Context, path string, exited <-chan struct{}) (*ctlClient, error) {
	conn, err := dialUnix(ctx, path, exited)
	if err != nil {
		return nil, err
	}
	c := &ctlClient{conn: conn, enc: json.NewEncoder(conn), pending: map[uint64]chan ctlproto.Reply{},
		closed: make(chan struct{})}
	go c.read()
	return c, nil
}

// dialUnix connects to a unix socket qemu serves, waiting until qemu has
// created it.
func dialUnix(ctx context.Context, path string, exited <-chan struct{}) (net.Conn, error) {
	for {
		conn, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
		if err == nil {
			return conn, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("vm: connect %s: %w (%v)", path, ctx.Err(), err)
		case <-exited:
			return nil, fmt.Errorf("vm: connect %s: %w", path, ErrGuestGone)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *ctlClient) read() {
	defer close(c.closed)
	dec := json.NewDecoder(c.conn)
	for {
		var r ctlproto.Reply
		if err := dec.Decode(&r); err != nil {
			return
		}
		c.mu.Lock()
		ch := c.pending[r.ID]
		if r.Done {
			delete(c.pending, r.ID)
		}
		c.mu.Unlock()
		if ch != nil {
			ch <- r // buffered; see register
		}
	}
}

// register makes a request ID and the channel its replies arrive on. A
// request that gets only a Done reply never blocks the reader (buffer 1);
// a started process's replies are drained by its own goroutine.
func (c *ctlClient) register(buf int) (uint64, chan ctlproto.Reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	ch := make(chan ctlproto.Reply, buf)
	c.pending[c.next] = ch
	return c.next, ch
}

func (c *ctlClient) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *ctlClient) send(req ctlproto.Request) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := c.enc.Encode(req); err != nil {
		select {
		case <-c.closed:
			return fmt.Errorf("vm: control write: %w", ErrGuestGone)
		default:
			return fmt.Errorf("vm: control write: %w", err)
		}
	}
	return nil
}

// call sends req and waits for its Done reply. ctx bounds the wait; its
// deadline also bounds the command inside the guest.
func (c *ctlClient) call(ctx context.Context, req ctlproto.Request) (ctlproto.Reply, error) {
	id, ch := c.register(1)
	defer c.forget(id)
	req.ID = id
	if dl, ok := ctx.Deadline(); ok && req.TimeoutMS == 0 {
		req.TimeoutMS = max(1, time.Until(dl).Milliseconds())
	}
	if err := c.send(req); err != nil {
		return ctlproto.Reply{}, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return ctlproto.Reply{}, fmt.Errorf("vm: %s: %w", req.Op, ctx.Err())
	case <-c.closed:
		return ctlproto.Reply{}, fmt.Errorf("vm: %s: %w", req.Op, ErrGuestGone)
	}
}

func (c *ctlClient) close() {
	c.conn.Close()
	<-c.closed
}

// Result is a finished guest command.
type Result struct {
	Stdout, Stderr []byte
	Code           int // exit code; -1 when killed by a signal
}

// Run runs argv in the guest and waits for it to finish. The error is
// about running it at all (transport, no such program, killed when ctx's
// deadline passed); a non-zero exit is only Result.Code.
func (g *Guest) Run(ctx context.Context, argv ...string) (Result, error) {
	r, err := g.ctl.call(ctx, ctlproto.Request{Op: ctlproto.OpRun, Argv: argv})
	res := Result{Stdout: r.Stdout, Stderr: r.Stderr, Code: r.Code}
	if err == nil && r.Error != "" {
		err = fmt.Errorf("vm: %s: run %s: %s", g.Name, argv[0], r.Error)
	}
	return res, err
}

// Sh runs a busybox sh script in the guest and returns its standard
// output; a non-zero exit is an error that carries the script's output.
func (g *Guest) Sh(ctx context.Context, script string) (string, error) {
	r, err := g.Run(ctx, "sh", "-c", script)
	if err != nil {
		return string(r.Stdout), err
	}
	if r.Code != 0 {
		return string(r.Stdout), fmt.Errorf("vm: %s: sh exit %d: %q\n%s%s", g.Name, r.Code, truncate(script, 200),
			r.Stdout, r.Stderr)
	}
	return string(r.Stdout), nil
}

// WriteFile writes a file in the guest (parent directories are created).
func (g *Guest) WriteFile(ctx context.Context, path string, data []byte, perm os.FileMode) error {
	r, err := g.ctl.call(ctx, ctlproto.Request{Op: ctlproto.OpWrite, Path: path, Data: data, Mode: uint32(perm.Perm())})
	if err == nil && r.Error != "" {
		err = fmt.Errorf("vm: %s: write %s: %s", g.Name, path, r.Error)
	}
	return err
}

// HTTPGet fetches url from inside the guest (e.g. inof-host's /metrics on
// the guest's loopback) and returns the status code and body.
func (g *Guest) HTTPGet(ctx context.Context, url string) (int, []byte, error) {
	r, err := g.ctl.call(ctx, ctlproto.Request{Op: ctlproto.OpHTTP, URL: url})
	if err == nil && r.Error != "" {
		err = fmt.Errorf("vm: %s: GET %s: %s", g.Name, url, r.Error)
	}
	return r.Status, r.Stdout, err
}

// ReadFiles reads the guest's files matching the glob patterns in the
// guest's init itself: no process is started, so it costs a loaded guest
// far less than Sh with cat. Files that cannot be read are left out.
func (g *Guest) ReadFiles(ctx context.Context, patterns ...string) (map[string]string, error) {
	r, err := g.ctl.call(ctx, ctlproto.Request{Op: ctlproto.OpRead, Argv: patterns})
	if err == nil && r.Error != "" {
		err = fmt.Errorf("vm: %s: read: %s", g.Name, r.Error)
	}
	return r.Files, err
}

// ClockOffset estimates how far the guest's wall clock is ahead of the
// test's (negative: behind) from a few pings, the one with the shortest
// round trip, and returns that round trip as the estimate's bound (±rtt/2):
// it places guest log times on the test's clock.
func (g *Guest) ClockOffset(ctx context.Context) (offset, rtt time.Duration, err error) {
	rtt = time.Hour
	for range 5 {
		sent := time.Now()
		r, err := g.ctl.call(ctx, ctlproto.Request{Op: ctlproto.OpPing})
		got := time.Now()
		if err != nil {
			return 0, 0, err
		}
		if d := got.Sub(sent); d < rtt && r.TimeNS != 0 {
			rtt = d
			offset = time.Unix(0, r.TimeNS).Sub(sent.Add(d / 2))
		}
	}
	if rtt == time.Hour {
		return 0, 0, fmt.Errorf("vm: %s: the guest's replies carry no time", g.Name)
	}
	return offset, rtt, nil
}

// Process is a program started in the guest with Guest.Start.
type Process struct {
	g    *Guest
	id   uint64
	done chan struct{}
	code int
	err  error
}

// Start starts argv in the background in the guest, in its own process
// group, and copies its combined output to out (nil discards it) until it
// exits. The copy is done by one goroutine per process; out is written from
// it only.
func (g *Guest) Start(ctx context.Context, argv []string, out io.Writer) (*Process, error) {
	if out == nil {
		out = io.Discard
	}
	id, ch := g.ctl.register(64)
	if err := g.ctl.send(ctlproto.Request{ID: id, Op: ctlproto.OpStart, Argv: argv}); err != nil {
		g.ctl.forget(id)
		return nil, err
	}
	var first ctlproto.Reply
	select {
	case first = <-ch:
	case <-ctx.Done():
		g.ctl.forget(id)
		return nil, fmt.Errorf("vm: %s: start %s: %w", g.Name, argv[0], ctx.Err())
	case <-g.ctl.closed:
		return nil, fmt.Errorf("vm: %s: start %s: %w", g.Name, argv[0], ErrGuestGone)
	}
	if !first.Started {
		return nil, fmt.Errorf("vm: %s: start %s: %s", g.Name, argv[0], first.Error)
	}
	p := &Process{g: g, id: id, done: make(chan struct{})}
	go p.copy(ch, out)
	return p, nil
}

func (p *Process) copy(ch <-chan ctlproto.Reply, out io.Writer) {
	defer close(p.done)
	for {
		select {
		case r := <-ch:
			if len(r.Output) > 0 {
				out.Write(r.Output)
			}
			if r.Done {
				p.code = r.Code
				if r.Error != "" {
					p.err = errors.New(r.Error)
				}
				return
			}
		case <-p.g.ctl.closed:
			p.code, p.err = -1, ErrGuestGone
			return
		}
	}
}

// Signal sends sig to the process's group in the guest.
func (p *Process) Signal(ctx context.Context, sig syscall.Signal) error {
	r, err := p.g.ctl.call(ctx, ctlproto.Request{Op: ctlproto.OpSignal, Target: p.id, Signal: int(sig)})
	if err == nil && r.Error != "" {
		err = fmt.Errorf("vm: %s: %s", p.g.Name, r.Error)
	}
	return err
}

// Done is closed when the process has exited and its output is copied.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits until the process exits and returns its exit code (-1 when a
// signal killed it). The error is ErrGuestGone when the guest went away
// first.
func (p *Process) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.done:
		return p.code, p.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Stop sends SIGTERM and waits for the exit; after timeout it sends
// SIGKILL.
func (p *Process) Stop(ctx context.Context, timeout time.Duration) (int, error) {
	select {
	case <-p.done:
		return p.code, p.err
	default:
	}
	if err := p.Signal(ctx, syscall.SIGTERM); err != nil {
		select {
		case <-p.done: // exited meanwhile
			return p.code, p.err
		default:
			return 0, err
		}
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if code, err := p.Wait(tctx); tctx.Err() == nil {
		return code, err
	}
	p.Signal(ctx, syscall.SIGKILL)
	return p.Wait(ctx)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return strings.TrimSpace(s)
}
