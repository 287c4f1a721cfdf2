package vm

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/openinof/inof/internal/netns"
)

// Tap is a tap interface created inside a network namespace; its file
// descriptor is handed to qemu as a guest NIC's backend. The tap exists
// while the descriptor is open: Close removes it, and as long as the Tap is
// open the interface stays (with carrier) even when qemu is gone, like a
// cable to a powered-off server's port.
type Tap struct {
	Name string
	NS   *netns.NS
	file *os.File
}

// CreateTap creates tap interface name inside ns and sets it up. The tap
// is created by opening /dev/net/tun from a thread inside ns (TUNSETIFF
// attaches by name in the caller's namespace), so qemu itself can run
// anywhere.
func CreateTap(ns *netns.NS, name string) (*Tap, error) {
	if len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("vm: tap name %q too long", name)
	}
	t := &Tap{Name: name, NS: ns}
	err := ns.Do(func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		var req [unix.IFNAMSIZ + 64]byte
		copy(req[:], name)
		*(*uint16)(unsafe.Pointer(&req[unix.IFNAMSIZ])) = unix.IFF_TAP | unix.IFF_NO_PI
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETIFF, uintptr(unsafe.Pointer(&req[0]))); errno != 0 {
			unix.Close(fd)
			return fmt.Errorf("TUNSETIFF %s: %w", name, errno)
		}
		t.file = os.NewFile(uintptr(fd), "tap:"+name)
		link, err := netlink.LinkByName(name)
		if err == nil {
			err = netlink.LinkSetUp(link)
		}
		if err != nil {
			t.file.Close()
			return fmt.Errorf("set %s up: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("vm: tap %s in %s: %w", name, ns.Name, err)
	}
	return t, nil
}

// File is the tap's descriptor (for qemu's -netdev tap,fd=N).
func (t *Tap) File() *os.File { return t.file }

// SetUp sets the tap administratively up or down inside its namespace;
// the guest does not see this (use Guest.SetLink for that).
func (t *Tap) SetUp(up bool) error {
	return t.NS.Do(func() error {
		link, err := netlink.LinkByName(t.Name)
		if err != nil {
			return fmt.Errorf("vm: tap %s: %w", t.Name, err)
		}
		if up {
			return netlink.LinkSetUp(link)
		}
		return netlink.LinkSetDown(link)
	})
}

// Close closes the descriptor; once qemu has exited too, the tap is gone.
func (t *Tap) Close() error { return t.file.Close() }
