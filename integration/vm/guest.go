package vm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
)

// Config describes one guest.
type Config struct {
	// Name names the guest and its files in Dir (NAME.console, NAME.ctl,
	// NAME.qmp, NAME.qemu.log).
	Name string
	// Dir is an existing directory for those files. Keep its path short:
	// unix socket paths are limited to 107 bytes.
	Dir   string
	Image Image
	// NICs are the guest's network interfaces, eth0, eth1, … in order.
	NICs []NIC
	// MemoryMB is the guest's memory; 0 means 256.
	MemoryMB int
	// Accel is qemu's -accel value; empty means $INOF_VM_ACCEL, else tcg.
	Accel string
	// Cmdline is appended to the kernel command line.
	Cmdline string
	// Icount, when set, runs the guest in instruction-counted time
	// (deterministic mode; Accel must be tcg).
	Icount *Icount
}

// Icount is qemu's instruction-counted time: -icount
// shift=Shift,align=off,sleep=off. The guest's clock advances by 2^Shift ns
// per instruction it executes and, when the guest is idle, jumps to its
// next timer, so what happens inside the guest takes the same guest time
// however busy the host machine is: a bound in guest time is repeatable,
// where one in wall-clock time is not. The price is wall time: a guest runs
// at a few percent of real time, and every wait of the harness on
// something inside the guest must be timed in guest time (by the guest, as
// PathFabric.Cuts does); a wall-clock timeout is only a safety net. Two
// guests have independent clocks and exchange packets in real time: only
// what happens inside one guest is deterministic. Host-side I/O (the
// control channel, files) brings real time back in, so the measured path
// must stay inside the guest's memory.
type Icount struct {
	// Shift is log2 of the guest nanoseconds per instruction (0..10): the
	// guest CPU's speed. A figure in guest time holds for its shift; work
	// bound by the CPU scales with it, timer-bound phases do not.
	Shift int
}

// QemuArg is the -icount option's value.
func (ic Icount) QemuArg() string {
	return fmt.Sprintf("shift=%d,align=off,sleep=off", ic.Shift)
}

// bootCmdline is the kernel command line every guest boots with.
// no_timer_check: on a loaded host, 6.1's check that the IO-APIC timer
// ticks fails and it panics at boot ("IO-APIC + timer doesn't work!"); the
// check proves nothing about a virtual machine.
const bootCmdline = "console=ttyS0 quiet panic=-1 no_timer_check"

// NIC is one guest network interface backed by a tap.
type NIC struct {
	Tap *Tap
	// MAC is the guest-side MAC address; it must be unique on the segment
	// (qemu's default is the same for every guest). See MAC.
	MAC net.HardwareAddr
}

// MAC returns the locally administered address 52:54:00:a:b:c.
func MAC(a, b, c byte) net.HardwareAddr { return net.HardwareAddr{0x52, 0x54, 0x00, a, b, c} }

// Guest is a running qemu guest booted from an Image.
type Guest struct {
	Name string
	cfg  Config
	cmd  *exec.Cmd

	exited  chan struct{} // closed when qemu was reaped
	exitErr error

	ctl *ctlClient
	qmp *qmp

	started time.Time
	booted  time.Duration

	closeOnce sync.Once
}

// Boot starts qemu with one vCPU and waits until the guest's init answers
// on the control channel. ctx bounds the boot only; the guest runs until
// Kill or Close. On failure qemu is gone and the error holds the end of the
// console.
func Boot(ctx context.Context, cfg Config) (*Guest, error) {
	if cfg.Name == "" || cfg.Dir == "" || cfg.Image.Kernel == "" {
		return nil, errors.New("vm: Config needs Name, Dir and Image")
	}
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = 256
	}
	if cfg.Accel == "" {
		cfg.Accel = os.Getenv("INOF_VM_ACCEL")
	}
	if cfg.Accel == "" {
		cfg.Accel = "tcg"
	}
	if cfg.Icount != nil && (cfg.Accel != "tcg" || cfg.Icount.Shift < 0 || cfg.Icount.Shift > 10) {
		return nil, fmt.Errorf("vm: icount needs -accel tcg and a shift of 0..10 (accel %s, shift %d)", cfg.Accel, cfg.Icount.Shift)
	}
	g := &Guest{Name: cfg.Name, cfg: cfg, exited: make(chan struct{})}
	for _, p := range []string{g.ConsolePath(), g.path("ctl"), g.path("qmp")} {
		os.Remove(p)
	}
	logf, err := os.Create(g.path("qemu.log"))
	if err != nil {
		return nil, fmt.Errorf("vm: %w", err)
	}
	g.cmd = exec.Command("qemu-system-x86_64", g.args()...)
	g.cmd.Stdout, g.cmd.Stderr = logf, logf
	for _, n := range cfg.NICs {
		g.cmd.ExtraFiles = append(g.cmd.ExtraFiles, n.Tap.File())
	}
	// qemu dies with the test process, even if that is killed. The death
	// signal follows the thread that started qemu, so that thread stays
	// locked to the goroutine that waits for qemu until qemu is gone.
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	g.started = time.Now()
	startErr := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer logf.Close()
		if err := g.cmd.Start(); err != nil {
			startErr <- err
			return
		}
		startErr <- nil
		g.exitErr = g.cmd.Wait()
		close(g.exited)
	}()
	if err := <-startErr; err != nil {
		return nil, fmt.Errorf("vm: start qemu: %w", err)
	}
	if err := g.connect(ctx); err != nil {
		g.Close()
		return nil, fmt.Errorf("vm: boot %s: %w\nqemu: %s\nconsole:\n%s", cfg.Name, err,
			readTail(g.path("qemu.log"), 10), readTail(g.ConsolePath(), 30))
	}
	g.booted = time.Since(g.started)
	return g, nil
}

func (g *Guest) path(ext string) string { return filepath.Join(g.cfg.Dir, g.Name+"."+ext) }

func (g *Guest) args() []string {
	c := g.cfg
	a := []string{
		"-name", c.Name, "-accel", c.Accel, "-m", strconv.Itoa(c.MemoryMB) + "M", "-smp", "1",
		"-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none", "-no-reboot",
		"-kernel", c.Image.Kernel, "-initrd", c.Image.Initrd,
		"-append", strings.TrimSpace(bootCmdline + " " + c.Cmdline),
		"-serial", "file:" + g.ConsolePath(),
		"-device", "virtio-serial-pci,id=vser0",
		"-chardev", "socket,id=ctl,path=" + g.path("ctl") + ",server=on,wait=off",
		"-device", "virtserialport,bus=vser0.0,chardev=ctl,name=" + ctlproto.PortName,
		"-qmp", "unix:" + g.path("qmp") + ",server=on,wait=off",
	}
	if c.Icount != nil {
		a = append(a, "-icount", c.Icount.QemuArg())
	}
	if c.Image.CPU != "" {
		a = append(a, "-cpu", c.Image.CPU)
	}
	for k, n := range c.NICs {
		// ExtraFiles start at descriptor 3.
		a = append(a, "-netdev", fmt.Sprintf("tap,id=n%d,fd=%d", k, 3+k),
			"-device", fmt.Sprintf("virtio-net-pci,netdev=n%d,mac=%s,romfile=", k, n.MAC))
	}
	return a
}

// connect opens QMP and the control channel and pings the guest's init
// until it answers.
func (g *Guest) connect(ctx context.Context) error {
	var err error
	if g.qmp, err = dialQMP(ctx, g.path("qmp"), g.exited); err != nil {
		return err
	}
	if g.ctl, err = dialCtl(ctx, g.path("ctl"), g.exited); err != nil {
		return err
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := g.ctl.call(pctx, ctlproto.Request{Op: ctlproto.OpPing})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no answer on the control channel: %w", ctx.Err())
		case <-g.exited:
			return fmt.Errorf("qemu exited (%v)", g.exitErr)
		default:
		}
		if errors.Is(err, ErrGuestGone) {
			return err
		}
	}
}

// BootDuration is the time from qemu's start until the guest answered.
func (g *Guest) BootDuration() time.Duration { return g.booted }

// SetLink sets NIC k's link up or down as the guest sees it (QMP set_link:
// the guest's carrier goes away; the tap stays as it is). It returns the
// time just before the change was asked for.
func (g *Guest) SetLink(ctx context.Context, k int, up bool) (time.Time, error) {
	at := time.Now()
	_, err := g.qmp.execute(ctx, "set_link", map[string]any{"name": fmt.Sprintf("n%d", k), "up": up})
	if err != nil {
		return at, fmt.Errorf("vm: %s: %w", g.Name, err)
	}
	return at, nil
}

// Pause stops the guest's vCPU (QMP stop) or lets it run again (cont):
// a paused guest sends and answers nothing while its links stay up, as a
// machine that hung; it returns the time just before the command.
func (g *Guest) Pause(ctx context.Context, paused bool) (time.Time, error) {
	cmd := "cont"
	if paused {
		cmd = "stop"
	}
	at := time.Now()
	if _, err := g.qmp.execute(ctx, cmd, nil); err != nil {
		return at, fmt.Errorf("vm: %s: %w", g.Name, err)
	}
	return at, nil
}

// Exited is closed when qemu has exited.
func (g *Guest) Exited() <-chan struct{} { return g.exited }

// Kill sends SIGKILL to qemu (the guest dies without any shutdown) and
// waits until it is reaped; it returns the time the signal was sent.
func (g *Guest) Kill() (time.Time, error) {
	at := time.Now()
	select {
	case <-g.exited:
		return at, fmt.Errorf("vm: kill %s: not running", g.Name)
	default:
	}
	if err := g.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return at, fmt.Errorf("vm: kill %s: %w", g.Name, err)
	}
	<-g.exited
	// qemu's exit closed the control socket: once its reader has seen
	// that, every request fails with ErrGuestGone.
	<-g.ctl.closed
	return at, nil
}

// Close kills qemu if it still runs and closes the connections. The taps
// belong to the caller. It is safe to call more than once.
func (g *Guest) Close() error {
	g.closeOnce.Do(func() {
		select {
		case <-g.exited:
		default:
			g.cmd.Process.Signal(syscall.SIGKILL)
			<-g.exited
		}
		if g.ctl != nil {
			g.ctl.close()
		}
		if g.qmp != nil {
			g.qmp.close()
		}
	})
	return nil
}

// ConsolePath is the file the guest's serial console is written to
// (kernel messages, the init's lines).
func (g *Guest) ConsolePath() string { return g.path("console") }

// Console returns the console output so far.
func (g *Guest) Console() string {
	b, _ := os.ReadFile(g.ConsolePath())
	return string(b)
}

// WaitConsole waits until the console output after byte offset since
// matches the regular expression re, and returns the match.
func (g *Guest) WaitConsole(ctx context.Context, since int, re string) (string, error) {
	rx, err := regexp.Compile(re)
	if err != nil {
		return "", err
	}
	for {
		c := g.Console()
		if since > len(c) {
			since = len(c)
		}
		if m := rx.FindString(c[since:]); m != "" {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("vm: %s: console never matched %q: %w", g.Name, re, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readTail returns the last lines of a file, for error messages.
func readTail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
