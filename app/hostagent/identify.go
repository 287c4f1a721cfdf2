package hostagent

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Identify Controller data structure (NVMe Base Specification,
// Identify Controller, CNS 01h) is 4,096 bytes; its Command Quiesce Time
// (CQT, TP4129) is the little-endian 16-bit field at bytes 386–387, in
// milliseconds, 0 when the controller does not report one.
const (
	identifySize = 4096
	cqtOffset    = 386
)

// identifyTimeout bounds the Identify command in the kernel (the
// controller is live when it is asked: it answers at once or not at all).
const identifyTimeout = 2 * time.Second

// adminCmd is the kernel's struct nvme_passthru_cmd (linux/nvme_ioctl.h),
// 72 bytes, as NVME_IOCTL_ADMIN_CMD takes it.
type adminCmd struct {
	opcode      uint8
	flags       uint8
	rsvd1       uint16
	nsid        uint32
	cdw2, cdw3  uint32
	metadata    uint64
	addr        uint64
	metadataLen uint32
	dataLen     uint32
	cdw10       uint32
	cdw11       uint32
	cdw12       uint32
	cdw13       uint32
	cdw14       uint32
	cdw15       uint32
	timeoutMS   uint32
	result      uint32
}

// nvmeIoctlAdminCmd is _IOWR('N', 0x41, struct nvme_admin_cmd).
const nvmeIoctlAdminCmd = 0xC0484E41

// identifyController sends Identify Controller to the controller's
// character device (/dev/nvmeN) and returns the data structure.
func identifyController(device string) ([]byte, error) {
	if unsafe.Sizeof(adminCmd{}) != 72 {
		return nil, fmt.Errorf("identify %s: passthrough command is %d bytes, want 72", device, unsafe.Sizeof(adminCmd{}))
	}
	if !validDevice(device) {
		return nil, fmt.Errorf("identify: %q is not an NVMe controller name", device)
	}
	f, err := os.Open("/dev/" + device)
	if err != nil {
		return nil, fmt.Errorf("identify %s: %w", device, err)
	}
	defer f.Close()
	buf := make([]byte, identifySize)
	var pin runtime.Pinner
	pin.Pin(&buf[0])
	defer pin.Unpin()
	cmd := adminCmd{opcode: 0x06, addr: uint64(uintptr(unsafe.Pointer(&buf[0]))), dataLen: identifySize,
		cdw10: 1, timeoutMS: uint32(identifyTimeout / time.Millisecond)}
	pin.Pin(&cmd)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), nvmeIoctlAdminCmd, uintptr(unsafe.Pointer(&cmd)))
	runtime.KeepAlive(f)
	if errno != 0 {
		return nil, fmt.Errorf("identify %s: %w", device, errno)
	}
	return buf, nil
}

// parseCQT reads the Command Quiesce Time out of an Identify Controller
// data structure.
func parseCQT(id []byte) (time.Duration, error) {
	if len(id) < identifySize {
		return 0, fmt.Errorf("identify controller: %d bytes, want %d", len(id), identifySize)
	}
	return time.Duration(binary.LittleEndian.Uint16(id[cqtOffset:])) * time.Millisecond, nil
}
