package topo

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// WaitEstablished waits until every reflector reports every switch as an
// established client (inof_reflector_sessions).
// With Spec.RecordFormat "sets" it then switches the fabric to device
// sets (retrying while the reflector refuses because a switch has not
// announced yet) and waits until every running switch publishes in sets;
// a fabric without reflectors (direct mode) publishes nothing and keeps
// none.
func (f *Fabric) WaitEstablished(timeout time.Duration) error {
	want := float64(len(f.Nodes(KindSwitch)))
	for _, r := range f.Nodes(KindReflector) {
		if _, err := r.WaitMetric(timeout, func(v float64) bool { return v == want },
			"inof_reflector_sessions", "kind", "client", "state", "established"); err != nil {
			return err
		}
	}
	if f.spec.recordFormat() == "per-device" || len(f.Nodes(KindReflector)) == 0 {
		return nil
	}
	return f.SetRecordFormat(timeout, f.spec.recordFormat())
}

// SetRecordFormat sets the fabric's record format with inofctl on the
// first reflector, retrying until it is accepted, and waits until every
// running switch publishes in it.
func (f *Fabric) SetRecordFormat(timeout time.Duration, format string) error {
	rr := f.Nodes(KindReflector)[0]
	err := Poll(timeout, func() (bool, error) {
		_, err := rr.Inofctl("fabric", "set", "record-format", format)
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("topo: record format %s: %w", format, err)
	}
	for _, sw := range f.Nodes(KindSwitch) {
		if !sw.Running() {
			continue
		}
		if _, err := sw.WaitMetric(timeout, func(v float64) bool { return v == 1 }, "inof_switch_record_format", "format", format); err != nil {
			return fmt.Errorf("topo: %s not publishing in %s: %w", sw.Name, format, err)
		}
	}
	return nil
}

// daemonAPI is the part of a Node that talks to a reflector's or
// switch's gRPC API: its socket, and inofctl against it.
type daemonAPI struct {
	n *Node
}

// APISocket is a reflector's gRPC API socket (inofctl --server unix://…).
func (a *daemonAPI) APISocket() string { return filepath.Join(a.n.dir, "api.sock") }

// Inofctl runs inofctl against the reflector's or switch's API socket
// (read-write on a reflector and on a switch in direct mode, read-only on
// a switch of a fabric) and returns its combined output.
func (a *daemonAPI) Inofctl(args ...string) (string, error) {
	n := a.n
	if n.Kind != KindReflector && n.Kind != KindSwitch {
		return "", errors.New("topo: inofctl talks to a reflector or a switch")
	}
	if n.f.guest != nil {
		return n.guestInofctl(args...)
	}
	bin, err := Binary("inofctl")
	if err != nil {
		return "", err
	}
	argv := append([]string{"--server", "unix://" + a.APISocket(), "--staging-file", n.dir + "/inofctl-staged.json"}, args...)
	out, err := exec.Command(bin, argv...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("topo: inofctl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
