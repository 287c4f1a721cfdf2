package readback

import (
	"fmt"

	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/lossless/dcbnl"
)

// DCBReader reads a device's DCB state; *dcbnl.Conn is one.
type DCBReader interface {
	Get(ifname string) (dcbnl.State, error)
}

// Host is what one host interface has configured.
type Host struct {
	Ifname string
	DCB    dcbnl.State
	ECN    map[string]uint32 // value per path under ecn/; missing files absent
}

// Read collects an interface's DCB state and the ECN files the profile sets.
// sysfsNet is normally SysfsNet.
func Read(r DCBReader, sysfsNet, ifname string, p lossless.Profile) (Host, error) {
	st, err := r.Get(ifname)
	if err != nil {
		return Host{}, fmt.Errorf("readback: %s: %w", ifname, err)
	}
	settings := p.ECNSysfs()
	paths := make([]string, len(settings))
	for i, s := range settings {
		paths[i] = s.Path
	}
	ecn, err := ReadECN(sysfsNet, ifname, paths)
	if err != nil {
		return Host{}, err
	}
	return Host{Ifname: ifname, DCB: st, ECN: ecn}, nil
}
