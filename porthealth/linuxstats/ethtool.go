package linuxstats

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtool commands and sizes (linux/ethtool.h).
const (
	ethtoolGStrings = 0x1b
	ethtoolGStats   = 0x1d
	ethSSStats      = 1
	ethGStringLen   = 32
	// maxStats bounds what a driver may claim to have.
	maxStats = 1 << 16
)

// ifreq is struct ifreq with ifr_data.
type ifreq struct {
	name [unix.IFNAMSIZ]byte
	data uintptr
	_    [16]byte
}

// ethtool issues SIOCETHTOOL requests on a datagram socket.
type ethtool struct{ fd int }

func openEthtool() (*ethtool, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("ethtool socket: %w", err)
	}
	return &ethtool{fd: fd}, nil
}

func (e *ethtool) close() error { return unix.Close(e.fd) }

// driver returns a port's driver name and its number of statistics.
func (e *ethtool) driver(name string) (string, uint32, error) {
	info, err := unix.IoctlGetEthtoolDrvinfo(e.fd, name)
	if err != nil {
		return "", 0, fmt.Errorf("ethtool driver info of %s: %w", name, err)
	}
	return unix.ByteSliceToString(info.Driver[:]), info.N_stats, nil
}

// ioctl runs one SIOCETHTOOL request whose buffer starts with the command.
func (e *ethtool) ioctl(name string, buf []byte) error {
	var ifr ifreq
	if len(name) >= len(ifr.name) {
		return fmt.Errorf("interface name %q too long", name)
	}
	copy(ifr.name[:], name)
	ifr.data = uintptr(unsafe.Pointer(&buf[0]))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(e.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(buf)
	if errno != 0 {
		return errno
	}
	return nil
}

// capacity is how many entries a buffer holds for a port that last said it
// had n: the kernel writes as many as the driver has at the time of the
// call, whatever the request says, so the buffer leaves room for a driver
// that grew its statistics since (mlx5 does when its channels change).
func capacity(n uint32) int { return 2*int(n) + 64 }

// count returns a port's current number of statistics.
func (e *ethtool) count(name string) (uint32, error) {
	_, n, err := e.driver(name)
	if err == nil && n > maxStats {
		err = fmt.Errorf("ethtool: %s claims %d statistics", name, n)
	}
	return n, err
}

// names returns the statistic names of a port (ETHTOOL_GSTRINGS) and
// their number.
func (e *ethtool) names(name string) ([]string, uint32, error) {
	n, err := e.count(name)
	if err != nil {
		return nil, 0, err
	}
	buf := make([]byte, 12+capacity(n)*ethGStringLen)
	binary.NativeEndian.PutUint32(buf[0:], ethtoolGStrings)
	binary.NativeEndian.PutUint32(buf[4:], ethSSStats)
	binary.NativeEndian.PutUint32(buf[8:], n)
	if err := e.ioctl(name, buf); err != nil {
		return nil, 0, fmt.Errorf("ethtool statistic names of %s: %w", name, err)
	}
	if got := binary.NativeEndian.Uint32(buf[8:]); got != n {
		return nil, 0, fmt.Errorf("ethtool statistic names of %s: %w (%d, not %d)", name, errLayout, got, n)
	}
	out := make([]string, n)
	for i := range out {
		s := buf[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		if j := bytes.IndexByte(s, 0); j >= 0 {
			s = s[:j]
		}
		out[i] = string(s)
	}
	return out, n, nil
}

// errLayout: the port's number of statistics is not what its names said.
var errLayout = errors.New("the number of ethtool statistics changed")

// stats returns the statistics of a port (ETHTOOL_GSTATS); it fails with
// errLayout unless the port still has n.
func (e *ethtool) stats(name string, n uint32) ([]uint64, error) {
	cur, err := e.count(name)
	if err != nil {
		return nil, err
	}
	if cur != n {
		return nil, fmt.Errorf("ethtool statistics of %s: %w (%d, not %d)", name, errLayout, cur, n)
	}
	buf := make([]byte, 8+capacity(n)*8)
	binary.NativeEndian.PutUint32(buf[0:], ethtoolGStats)
	binary.NativeEndian.PutUint32(buf[4:], n)
	if err := e.ioctl(name, buf); err != nil {
		return nil, fmt.Errorf("ethtool statistics of %s: %w", name, err)
	}
	if got := binary.NativeEndian.Uint32(buf[4:]); got != n {
		return nil, fmt.Errorf("ethtool statistics of %s: %w (%d, not %d)", name, errLayout, got, n)
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.NativeEndian.Uint64(buf[8+8*i:])
	}
	return out, nil
}
