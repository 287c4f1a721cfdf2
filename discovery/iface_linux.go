package discovery

import (
	"encoding/binary"
	"syscall"
)

// masters returns, by interface index, the index of the bridge (or bond)
// each interface is a member of, read over rtnetlink in the calling
// thread's network namespace (sysfs may show another one's).
func masters() map[int]int {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETLINK, syscall.AF_UNSPEC)
	if err != nil {
		return nil
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil
	}
	out := map[int]int{}
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Type != syscall.RTM_NEWLINK || len(m.Data) < syscall.SizeofIfInfomsg {
			continue
		}
		index := int(int32(binary.NativeEndian.Uint32(m.Data[4:8])))
		attrs, err := syscall.ParseNetlinkRouteAttr(m)
		if err != nil {
			continue
		}
		for _, a := range attrs {
			if a.Attr.Type == syscall.IFLA_MASTER && len(a.Value) >= 4 {
				out[index] = int(binary.NativeEndian.Uint32(a.Value[:4]))
			}
		}
	}
	return out
}
