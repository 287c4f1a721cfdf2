package hostagent

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openinof/inof/internal/sockdiag"
)

// Kernel is what the host agent reads and does through the kernel itself
// rather than nvme-cli: the NVMe-oF controllers and their multipath
// siblings as sysfs shows them, a controller reset, and aborting a path's
// TCP connections. SysfsKernel is the real one; tests record the calls.
type Kernel interface {
	// Paths lists every NVMe-oF controller with its subsystem and state.
	Paths() ([]KernelPath, error)
	// HasNVMe reports whether sysfs has the kernel's nvme class at all
	// (nvme-core is loaded). Without it Paths is empty whatever nvme-cli
	// says: a host without NVMe-oF, or a stand-in nvme-cli in a test.
	HasNVMe() bool
	// Reset starts the controller's error recovery (sysfs
	// reset_controller): its in-flight I/O is requeued on a sibling path at
	// once, and the kernel reconnects it every reconnect_delay. It returns
	// when the kernel's reset work ends; ENETRESET (the reconnect failed,
	// the controller is reconnecting) and EBUSY (a reset or error recovery
	// is under way already, e.g. started by aborting the path's
	// connections) are not errors.
	Reset(device string) error
	// Path reads one controller (device nvmeN) as Paths does; a device
	// that is not an NVMe-oF controller is an error.
	Path(device string) (KernelPath, error)
	// AbortTCP aborts the TCP connections from host to target:port
	// (inet_diag socket destroy) and returns how many. A connect still
	// waiting for an answer (the kernel's reconnect attempt) carries no
	// I/O and is left alone.
	AbortTCP(host, target netip.Addr, port uint16) (int, error)
	// Rejoin hurries the reconnect of the given controllers (reconnecting
	// on the path host → target:port) once the path's link is back: a
	// reconnect attempt still waiting for an answer (SYN_SENT, begun while
	// the link was down) is aborted while the controllers' reconnect_delay
	// is 0, so the kernel tries again at once over the live link; the
	// delay is set back as soon as that attempt has begun. It returns how
	// many waiting connects it aborted (0: none was waiting, nothing was
	// touched).
	Rejoin(host, target netip.Addr, port uint16, devices []string) (int, error)
	// FailFast sets the controller's fast_io_fail_tmo to 0 (sysfs; nvme-cli
	// 2.3 has no connect option for it): while it reconnects, I/O that no
	// other path can take fails at once instead of queueing.
	FailFast(device string) error
	// CQT reads the controller's Command Quiesce Time (Identify
	// Controller, bytes 386–387): 0 when it reports none. Ask only a live
	// controller (the command goes over its admin queue).
	CQT(device string) (time.Duration, error)
}

// KernelPath is one controller as sysfs shows it.
type KernelPath struct {
	Controller
	// ANA holds the ANA state of each of the controller's namespace paths
	// (optimized, non-optimized, inaccessible, ...); empty when the target
	// reports none.
	ANA []string
}

// Live reports whether the path can carry I/O: the controller is live and
// no namespace path says it is inaccessible.
func (p KernelPath) Live() bool {
	if p.State != "live" {
		return false
	}
	for _, s := range p.ANA {
		if s != "optimized" && s != "non-optimized" {
			return false
		}
	}
	return true
}

// SysfsKernel is the real Kernel: sysfs under Root ("" means /sys) and
// inet_diag. Use NewSysfsKernel: its zero value works but reads every
// controller's address each time (see addressCache).
type SysfsKernel struct {
	Root  string
	addrs *addressCache
}

// NewSysfsKernel returns the real Kernel for sysfs under root ("" means
// /sys) that reads each controller's address once.
func NewSysfsKernel(root string) SysfsKernel {
	return SysfsKernel{Root: root, addrs: &addressCache{m: map[addressKey]string{}}}
}

// addressCache keeps the address each controller showed when first seen,
// and reads it no more. Reading a controller's sysfs "address" while its
// socket is released oopses Linux 6.1.192 (NULL dereference in
// nvme_tcp_get_address, docs/realhost.md finding 5): during its error
// recovery, and in the moment it enters it, as the read that follows an
// agent's own abort and reset did (a view read right after a failover,
// 16th cut of a 6.1 path-fabric run, 2026-12-06). A controller's
// transport address, service and host address are the ones it was created
// with and never change while it lives, so one read is enough. A
// controller is known by its name and its sysfs directory's inode: a name
// the kernel gives again to a new controller is a new entry.
type addressCache struct {
	mu sync.Mutex
	m  map[addressKey]string
}

type addressKey struct {
	dev string
	ino uint64
}

// read returns the controller's address from dir, reading the file only
// the first time it sees the controller.
func (c *addressCache) read(dir, dev string, read func() string) string {
	if c == nil {
		return read()
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return read()
	}
	k := addressKey{dev: dev, ino: st.Ino}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.m[k]; ok {
		return a
	}
	a := read()
	for o := range c.m {
		if o.dev == dev {
			delete(c.m, o) // a controller gone whose name was given again
		}
	}
	c.m[k] = a
	return a
}

// forget drops the entries of controllers that are no longer present.
func (c *addressCache) forget(present map[string]bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if !present[k.dev] {
			delete(c.m, k)
		}
	}
}

func (k SysfsKernel) class() string {
	root := k.Root
	if root == "" {
		root = "/sys"
	}
	return filepath.Join(root, "class", "nvme")
}

// HasNVMe implements Kernel.
func (k SysfsKernel) HasNVMe() bool {
	fi, err := os.Stat(k.class())
	return err == nil && fi.IsDir()
}

// Paths implements Kernel. A missing class directory (no nvme core) is no
// controller.
func (k SysfsKernel) Paths() ([]KernelPath, error) {
	ents, err := os.ReadDir(k.class())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sysfs: %w", err)
	}
	var out []KernelPath
	present := make(map[string]bool, len(ents))
	for _, e := range ents {
		present[e.Name()] = true
		if p, err := k.Path(e.Name()); err == nil {
			out = append(out, p)
		}
	}
	k.addrs.forget(present)
	slices.SortFunc(out, func(a, b KernelPath) int { return strings.Compare(a.Device, b.Device) })
	return out, nil
}

// Path implements Kernel: PCIe, loop and fc controllers (not ours) and
// names that are no controller are errors.
func (k SysfsKernel) Path(dev string) (KernelPath, error) {
	if !validDevice(dev) {
		return KernelPath{}, fmt.Errorf("sysfs: %q is no controller", dev)
	}
	dir := filepath.Join(k.class(), dev)
	attr := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(string(b))
	}
	tr := attr("transport")
	if tr != "tcp" && tr != "rdma" {
		return KernelPath{}, fmt.Errorf("sysfs: %s: transport %q is not NVMe-oF over TCP or RDMA", dev, tr)
	}
	state := attr("state")
	addr := k.addrs.read(dir, dev, func() string { return attr("address") })
	p := KernelPath{Controller: Controller{Device: dev, State: state, Path: parseAddress(addr)}}
	p.Transport, p.SubNQN = tr, attr("subsysnqn")
	nss, _ := filepath.Glob(filepath.Join(dir, "nvme*c*n*", "ana_state"))
	for _, f := range nss {
		if b, err := os.ReadFile(f); err == nil {
			p.ANA = append(p.ANA, strings.TrimSpace(string(b)))
		}
	}
	return p, nil
}

// Reset implements Kernel.
func (k SysfsKernel) Reset(device string) error {
	if !validDevice(device) {
		return fmt.Errorf("reset: invalid device %q", device)
	}
	f, err := os.OpenFile(filepath.Join(k.class(), device, "reset_controller"), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("reset %s: %w", device, err)
	}
	defer f.Close()
	if _, err := f.WriteString("1"); err != nil && !errors.Is(err, syscall.ENETRESET) && !errors.Is(err, syscall.EBUSY) {
		return fmt.Errorf("reset %s: %w", device, err)
	}
	return nil
}

// FailFast implements Kernel.
func (k SysfsKernel) FailFast(device string) error {
	if !validDevice(device) {
		return fmt.Errorf("fast_io_fail_tmo: invalid device %q", device)
	}
	if err := os.WriteFile(filepath.Join(k.class(), device, "fast_io_fail_tmo"), []byte("0"), 0); err != nil {
		return fmt.Errorf("fast_io_fail_tmo %s: %w", device, err)
	}
	return nil
}

// AbortTCP implements Kernel.
func (SysfsKernel) AbortTCP(host, target netip.Addr, port uint16) (int, error) {
	return sockdiag.DestroyStates(host, target, port, sockdiag.Connections.Without(sockdiag.StateSynSent))
}

// rejoinWait bounds how long Rejoin keeps reconnect_delay at 0 after the
// abort: until the kernel's next attempt has begun (a connection on the
// path again), at most this long. Meanwhile an attempt that fails at once
// (the target refuses) is retried at once too, so it is kept short.
const rejoinWait = 250 * time.Millisecond

// Rejoin implements Kernel.
func (k SysfsKernel) Rejoin(host, target netip.Addr, port uint16, devices []string) (int, error) {
	conns, err := sockdiag.List(host, target, port)
	if err != nil {
		return 0, err
	}
	if !slices.ContainsFunc(conns, func(c sockdiag.Conn) bool { return c.State == sockdiag.StateSynSent }) {
		return 0, nil // between attempts (the next one comes over the live link) or through already
	}
	// The aborted attempt's failure requeues the next one after
	// reconnect_delay as the kernel reads it then: 0 for now.
	var errs []error
	restore := map[string]string{}
	for _, dev := range devices {
		if !validDevice(dev) {
			errs = append(errs, fmt.Errorf("rejoin: invalid device %q", dev))
			continue
		}
		f := filepath.Join(k.class(), dev, "reconnect_delay")
		b, err := os.ReadFile(f)
		old := strings.TrimSpace(string(b))
		if _, perr := strconv.ParseUint(old, 10, 32); err != nil || perr != nil || old == "0" {
			continue // unreadable, "off", or 0 already: leave it
		}
		if err := os.WriteFile(f, []byte("0"), 0); err != nil {
			errs = append(errs, fmt.Errorf("rejoin: reconnect_delay of %s: %w", dev, err))
			continue
		}
		restore[f] = old
	}
	n, err := sockdiag.DestroyConnecting(host, target, port)
	if err != nil {
		errs = append(errs, err)
	}
	if n > 0 && len(restore) > 0 {
		for deadline := time.Now().Add(rejoinWait); time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
			if cs, err := sockdiag.List(host, target, port); err == nil && len(cs) > 0 {
				break // the next attempt is under way
			}
		}
	}
	for f, old := range restore {
		if err := os.WriteFile(f, []byte(old), 0); err != nil {
			errs = append(errs, fmt.Errorf("rejoin: restoring reconnect_delay %s in %s: %w", old, f, err))
		}
	}
	return n, errors.Join(errs...)
}

// siblingLive reports whether another controller of p's subsystem, from
// the same host NQN's view (any controller of the subsystem on this host),
// can carry I/O.
func siblingLive(paths []KernelPath, p KernelPath) bool {
	for _, q := range paths {
		if q.Device != p.Device && q.SubNQN == p.SubNQN && q.SubNQN != "" && q.Live() {
			return true
		}
	}
	return false
}

// findKernelPath returns the controller on path p in any state but
// deleting.
func findKernelPath(ps []KernelPath, p Path) (KernelPath, bool) {
	for _, c := range ps {
		if c.usable() && samePath(c.Path, p) {
			return c, true
		}
	}
	return KernelPath{}, false
}

// CQT sends Identify Controller to the controller's character device.
func (SysfsKernel) CQT(device string) (time.Duration, error) {
	id, err := identifyController(device)
	if err != nil {
		return 0, err
	}
	return parseCQT(id)
}
