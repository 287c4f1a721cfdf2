// Package nvmeaddr reads the address of an NVMe controller as the kernel
// gives it (the sysfs attribute /sys/class/nvme/nvmeX/address, and the
// Address of a path in `nvme list-subsys`): the one parser of the host
// agent and of the test harness.
package nvmeaddr

import (
	"strings"
	"unicode"
)

// Address is where a controller's path goes and comes from.
type Address struct {
	TrAddr     string // the target's address
	TrSvcID    string // the target's port
	HostTrAddr string // the local address (nvme connect -w); empty if the kernel did not say
}

// Parse reads "traddr=A,trsvcid=S,host_traddr=H[,src_addr=...]"; older
// kernels separate the pairs with blanks. Other keys are ignored, and a
// key missing leaves its field empty.
func Parse(s string) Address {
	var a Address
	sep := func(r rune) bool { return r == ',' || unicode.IsSpace(r) }
	for _, kv := range strings.FieldsFunc(s, sep) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "traddr":
			a.TrAddr = v
		case "trsvcid":
			a.TrSvcID = v
		case "host_traddr":
			a.HostTrAddr = v
		}
	}
	return a
}
