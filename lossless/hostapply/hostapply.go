// Package hostapply puts a Linux host's interfaces into the fabric's lossless
// profile: it plans the iproute2 dcb commands and mlx5 ECN sysfs writes the
// Linux renderer prints (lossless.LinuxSteps), runs them through an executor,
// and reads the DCB and ECN state back before and after (package readback) to
// report what changed and what still differs.
//
// It never decides on its own to touch a host: inof-host calls Apply only
// with lossless.apply (--apply-lossless) set, and prints the plan otherwise.
package hostapply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/lossless/readback"
)

// Executor runs one command and returns its combined output.
// hostagent.ExecExecutor is one.
type Executor interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// Interface is the plan for one network device.
type Interface struct {
	Name  string
	Steps []lossless.LinuxStep
}

// Plan is what Apply runs: the profile's steps for each interface, in the
// profile's port class for this host.
type Plan struct {
	Profile    lossless.Profile
	Port       lossless.PortPlan
	Interfaces []Interface
}

// NewPlan validates p and plans the steps that put ifaces in port class
// class of p (e.g. "server", the default profile's class for host NICs).
func NewPlan(p lossless.Profile, class string, ifaces []string) (Plan, error) {
	if err := p.Validate(); err != nil {
		return Plan{}, fmt.Errorf("hostapply: %w", err)
	}
	if len(ifaces) == 0 {
		return Plan{}, errors.New("hostapply: no interfaces to configure")
	}
	i := slices.IndexFunc(p.Ports, func(port lossless.Port) bool { return port.Name == class })
	if i < 0 {
		names := make([]string, len(p.Ports))
		for j, port := range p.Ports {
			names[j] = port.Name
		}
		return Plan{}, fmt.Errorf("hostapply: profile %q has no port class %q (it has %s)", p.Name, class, strings.Join(names, ", "))
	}
	port, err := lossless.PlanPort(p, p.Ports[i])
	if err != nil {
		return Plan{}, fmt.Errorf("hostapply: %w", err)
	}
	pl := Plan{Profile: p, Port: port}
	for _, dev := range ifaces {
		pl.Interfaces = append(pl.Interfaces, Interface{Name: dev, Steps: lossless.LinuxSteps(p, port, dev)})
	}
	return pl, nil
}

// Script is the plan as the shell script Apply's steps amount to, one
// interface after the other, in the Linux renderer's words (what --dry-run
// prints).
func (pl Plan) Script() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# lossless profile %q, port class %q (%d Mb/s, %d m, MTU %d)\n",
		pl.Profile.Name, pl.Port.Port.Name, pl.Port.Port.SpeedMbps, pl.Port.Port.CableMeters, pl.Port.Port.MTU)
	b.WriteString(lossless.LinuxScriptHead + "\n")
	for _, it := range pl.Interfaces {
		fmt.Fprintf(&b, "# %s\n", it.Name)
		b.WriteString(lossless.LinuxScriptBlock(it.Name, it.Steps))
	}
	b.WriteString("exit $inof_rc\n")
	return b.String()
}

// Options say how Apply reaches the host.
type Options struct {
	// Exec runs the dcb commands.
	Exec Executor
	// SysfsNet is where network devices are; empty means
	// readback.SysfsNet. Tests point it at a fake tree.
	SysfsNet string
	// RDMACM is RDMA-CM's configfs directory; empty means
	// lossless.RDMACMRoot.
	RDMACM string
	// DCB reads the DCB state back; nil skips the DCB part of the read
	// back (the ECN files are still read).
	DCB readback.DCBReader
}

// StepError is a step that failed.
type StepError struct {
	Step lossless.LinuxStep
	Err  error
}

// Result is what Apply did on one interface.
type Result struct {
	Interface string
	// Ran counts the steps that succeeded; Failed lists the others.
	Ran    int
	Failed []StepError
	// Unsupported lists the optional steps that failed (the host is still
	// set up by the others, e.g. mlx5 without dcb apptrust).
	Unsupported []StepError
	// NoECN is set when the device has no mlx5 ecn/ directory: its sysfs
	// steps were not run (and are not counted as failures).
	NoECN bool
	// NoRDMA is set when the device has no RDMA device: its RDMA-CM and
	// RoCE MTU steps were not run.
	NoRDMA  bool
	Skipped int
	// Before and After are the differences from the profile read back
	// before and after the steps; ReadErr says why they are missing.
	Before, After []readback.Difference
	ReadErr       error
}

// String is the result in one line, as inof-host logs it.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d steps ran, %d failed", r.Interface, r.Ran, len(r.Failed))
	if r.NoECN || r.NoRDMA {
		fmt.Fprintf(&b, ", %d skipped", r.Skipped)
	}
	if r.NoECN {
		fmt.Fprintf(&b, " (no %s/%s/ecn: not an mlx5 NIC)", readback.SysfsNet, r.Interface)
	}
	if r.NoRDMA {
		fmt.Fprintf(&b, " (no RDMA device: RDMA-CM defaults and RoCE MTU not checked)")
	}
	for _, u := range r.Unsupported {
		fmt.Fprintf(&b, "; unsupported %q: %v", strings.Join(u.Step.Argv, " "), u.Err)
	}
	if r.ReadErr != nil {
		fmt.Fprintf(&b, "; read back unavailable: %v", r.ReadErr)
	} else {
		fmt.Fprintf(&b, "; differences from the profile: %d before, %d after", len(r.Before), len(r.After))
	}
	for _, f := range r.Failed {
		fmt.Fprintf(&b, "; failed %q: %v", f.Step.String(), f.Err)
	}
	return b.String()
}

// Apply runs the plan on every interface and reports per interface. A
// failed step does not stop the others (a NIC without one feature still
// gets the rest); the error is non-nil when any step failed.
func Apply(ctx context.Context, o Options, pl Plan) ([]Result, error) {
	if o.Exec == nil {
		return nil, errors.New("hostapply: no executor")
	}
	root := o.SysfsNet
	if root == "" {
		root = readback.SysfsNet
	}
	cm := o.RDMACM
	if cm == "" {
		cm = lossless.RDMACMRoot
	}
	var out []Result
	var errs []error
	for _, it := range pl.Interfaces {
		r := Result{Interface: it.Name}
		r.Before, r.ReadErr = diff(o.DCB, root, it.Name, pl)
		_, err := os.Stat(filepath.Join(root, it.Name, "ecn"))
		r.NoECN = errors.Is(err, os.ErrNotExist)
		ibdev := rdmaDevice(root, it.Name)
		r.NoRDMA = ibdev == ""
		for _, s := range it.Steps {
			isRDMA := s.RDMAAttr != "" || s.RoCEMTU != 0
			if s.SysfsPath != "" && r.NoECN || isRDMA && r.NoRDMA {
				r.Skipped++
				continue
			}
			var err error
			if isRDMA {
				err = rdmaStep(root, cm, ibdev, s)
			} else {
				err = run(ctx, o.Exec, root, s)
			}
			switch {
			case err != nil && s.Optional != "":
				r.Unsupported = append(r.Unsupported, StepError{Step: s, Err: err})
			case err != nil:
				r.Failed = append(r.Failed, StepError{Step: s, Err: err})
				errs = append(errs, fmt.Errorf("%s: %s: %w", it.Name, s, err))
			default:
				r.Ran++
			}
		}
		if r.ReadErr == nil {
			r.After, r.ReadErr = diff(o.DCB, root, it.Name, pl)
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// run performs one step: a command through the executor, or a sysfs write
// (rebased from /sys/class/net onto root).
func run(ctx context.Context, ex Executor, root string, s lossless.LinuxStep) error {
	if s.SysfsPath == "" {
		out, err := ex.Run(ctx, s.Argv[0], s.Argv[1:]...)
		if err != nil {
			if msg := strings.TrimSpace(string(out)); msg != "" {
				return fmt.Errorf("%w: %s", err, msg)
			}
			return err
		}
		return nil
	}
	rel, err := filepath.Rel(readback.SysfsNet, s.SysfsPath)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("sysfs path %s is not under %s", s.SysfsPath, readback.SysfsNet)
	}
	// sysfs files are written in place: no temporary file, no rename.
	f, err := os.OpenFile(filepath.Join(root, rel), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(strconv.FormatUint(uint64(s.Value), 10) + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// rdmaDevice is the first RDMA device of a network device ("" for none).
func rdmaDevice(root, dev string) string {
	entries, err := os.ReadDir(filepath.Join(root, dev, "device", "infiniband"))
	if err != nil || len(entries) == 0 {
		return ""
	}
	return entries[0].Name()
}

// rdmaStep writes an RDMA-CM default of dev's RDMA port (creating the RDMA
// device's configfs group, as mkdir does) or checks dev's RoCE path MTU.
func rdmaStep(root, cm, ibdev string, s lossless.LinuxStep) error {
	if s.RoCEMTU != 0 {
		b, err := os.ReadFile(filepath.Join(root, s.Dev, "mtu"))
		if err != nil {
			return err
		}
		mtu, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
		if err != nil {
			return fmt.Errorf("%s mtu: %w", s.Dev, err)
		}
		if got := lossless.RoCEPathMTU(uint32(mtu)); got != s.RoCEMTU {
			return fmt.Errorf("MTU %d gives RDMA-CM a RoCE path MTU of %d, the profile says %d", mtu, got, s.RoCEMTU)
		}
		return nil
	}
	if _, err := os.Stat(cm); err != nil {
		return fmt.Errorf("RDMA-CM configfs: %w (modprobe rdma_cm; mount configfs)", err)
	}
	port := 1
	if b, err := os.ReadFile(filepath.Join(root, s.Dev, "dev_port")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			port = n + 1
		}
	}
	group := filepath.Join(cm, ibdev)
	if err := os.Mkdir(group, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	// configfs files are written in place, like sysfs.
	f, err := os.OpenFile(filepath.Join(group, "ports", strconv.Itoa(port), s.RDMAAttr), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(s.RDMAValue + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// diff reads one interface back and compares it with the profile; without a
// DCB reader there is no read back.
func diff(r readback.DCBReader, root, dev string, pl Plan) ([]readback.Difference, error) {
	if r == nil {
		return nil, errors.New("no DCB reader")
	}
	p := pl.Profile
	p.Ports = []lossless.Port{pl.Port.Port}
	p.Ports[0].Interfaces = []string{dev}
	h, err := readback.Read(r, root, dev, p)
	if err != nil {
		return nil, err
	}
	return readback.Diff(p, h), nil
}
