// Command guestinit is PID 1 of the integration/vm guest image: it mounts
// the kernel file systems, loads the kernel modules the image lists, writes
// a unique NVMe host NQN and serves the control protocol
// (integration/vm/internal/ctlproto) on the virtio-serial port "ctl".
//
// Called as iostall (a symlink to it in the image), it is the I/O stall
// meter instead: see iostall.go. Called as sockkill, it aborts TCP
// connections (internal/sockdiag): sockkill [-syn] SRC DST PORT (-syn: only
// connects still waiting for an answer). Called as cuts, it is the link
// cut runner that paces and measures cuts in the guest's own time: see
// cuts.go.
//
// It is built static (CGO_ENABLED=0) by integration/vm when it builds the
// image; it does nothing useful outside a guest.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ModulesFile lists the kernel modules to load, one per line, in order:
// the module's path, then its parameters.
const ModulesFile = "/etc/inof-vm/modules"

func main() {
	switch filepath.Base(os.Args[0]) {
	case "iostall":
		os.Exit(iostall(os.Args[1:]))
	case "sockkill":
		os.Exit(sockkill(os.Args[1:]))
	case "cuts":
		os.Exit(cuts(os.Args[1:]))
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "guestinit: must run as PID 1 of a guest (or be called as iostall)")
		os.Exit(2)
	}
	os.Setenv("PATH", "/bin:/sbin:/usr/bin:/usr/sbin")
	os.Setenv("HOME", "/")
	if err := setup(); err != nil {
		logf("setup: %v", err)
	}
	port, err := openPort()
	if err != nil {
		logf("control port: %v; nothing left to do", err)
		for {
			time.Sleep(time.Hour)
		}
	}
	logf("GUEST-READY uptime=%.2f", uptime())
	newServer(port).serve()
}

// logf writes one line to the console (PID 1's standard output).
func logf(format string, a ...any) {
	fmt.Printf("vminit: "+format+"\n", a...)
}

// setup mounts, loads modules, writes the host NQN and brings lo up. It
// goes on after a failure, so the console and the control channel show
// what works.
func setup() error {
	var errs []string
	fail := func(err error) {
		if err != nil {
			logf("%v", err)
			errs = append(errs, err.Error())
		}
	}
	for _, m := range []struct{ fs, dir string }{
		{"proc", "/proc"}, {"sysfs", "/sys"}, {"devtmpfs", "/dev"}, {"tmpfs", "/tmp"}, {"tmpfs", "/run"},
	} {
		fail(mount(m.fs, m.dir))
	}
	fail(loadModules(ModulesFile))
	fail(mount("configfs", "/sys/kernel/config"))
	// Kernel messages of level info (nvme, nvmet) go to the console.
	fail(os.WriteFile("/proc/sys/kernel/printk", []byte("7"), 0))
	fail(writeHostNQN())
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		fail(fmt.Errorf("lo up: %w: %s", err, out))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d problems", len(errs))
	}
	return nil
}

func mount(fstype, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(fstype, dir, fstype, 0, ""); err != nil {
		return fmt.Errorf("mount %s on %s: %w", fstype, dir, err)
	}
	return nil
}

// loadModules insmods every module of the list in order; a module that is
// already loaded is fine.
func loadModules(list string) error {
	f, err := os.Open(list)
	if err != nil {
		return err
	}
	defer f.Close()
	var failed []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if err := insmod(fields[0], strings.Join(fields[1:], " ")); err != nil {
			logf("%v", err)
			failed = append(failed, filepath.Base(fields[0]))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("modules not loaded: %s", strings.Join(failed, " "))
	}
	return nil
}

func insmod(path, params string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), params, 0); err != nil && err != unix.EEXIST {
		return fmt.Errorf("insmod %s: %w", path, err)
	}
	return nil
}

// writeHostNQN gives the guest its own host NQN and host ID (libnvme reads
// them; without them every guest would look the same to a target). The test
// may overwrite both.
func writeHostNQN() error {
	b, err := os.ReadFile("/proc/sys/kernel/random/uuid")
	if err != nil {
		return err
	}
	id := strings.TrimSpace(string(b))
	if err := os.MkdirAll("/etc/nvme", 0o755); err != nil {
		return err
	}
	if err := os.WriteFile("/etc/nvme/hostnqn", []byte("nqn.2014-08.org.nvmexpress:uuid:"+id+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile("/etc/nvme/hostid", []byte(id+"\n"), 0o644)
}

// openPort opens the virtio-serial port named ctlproto.PortName, waiting
// for the device node to appear.
func openPort() (*os.File, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		dev, err := findPort()
		if err == nil {
			return os.OpenFile(dev, os.O_RDWR, 0)
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func findPort() (string, error) {
	names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil || strings.TrimSpace(string(b)) != portName {
			continue
		}
		dev := "/dev/" + filepath.Base(filepath.Dir(n))
		if _, err := os.Stat(dev); err != nil {
			return "", err
		}
		return dev, nil
	}
	return "", fmt.Errorf("no virtio-serial port named %q", portName)
}

// uptime is the guest's /proc/uptime in seconds (0 if unreadable).
func uptime() float64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	var up float64
	fmt.Sscan(string(b), &up)
	return up
}
