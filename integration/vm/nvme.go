package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openinof/inof/integration/vm/internal/ctlproto"
	"github.com/openinof/inof/internal/nvmeaddr"
	"github.com/openinof/inof/internal/syncbuf"
)

// Target is a kernel NVMe/TCP target (nvmet) in a guest: one subsystem
// with one namespace, served on a TCP port of each address.
type Target struct {
	NQN string
	// Port is the TCP service port; 0 means 4420.
	Port uint16
	// Addrs are the guest addresses to listen on, one nvmet port each.
	Addrs []netip.Addr
	// Device backs namespace 1; empty means /dev/nullb0 (null_blk, 1 GB,
	// loaded by the image).
	Device string
}

// SetupTarget configures nvmet through configfs: the subsystem (any host
// allowed), namespace 1 on Device, and a TCP port per address, each with
// the subsystem linked in.
func (g *Guest) SetupTarget(ctx context.Context, t Target) error {
	script, err := targetScript(t)
	if err != nil {
		return err
	}
	_, err = g.Sh(ctx, script)
	return err
}

// targetScript is the sh script that configures t through configfs. nvmet
// listens in the network namespace of the process that links the
// subsystem to a port: the script's.
func targetScript(t Target) (string, error) {
	if t.NQN == "" || len(t.Addrs) == 0 || strings.ContainsAny(t.NQN, " '\"\\$`\n") || strings.ContainsAny(t.Device, " '\"\\$`\n;&|") {
		return "", fmt.Errorf("vm: target: need a plain NQN, a plain device and at least one address")
	}
	if t.Port == 0 {
		t.Port = 4420
	}
	if t.Device == "" {
		t.Device = "/dev/nullb0"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "set -e\nN=/sys/kernel/config/nvmet\nS=$N/subsystems/%s\nmkdir $S\n", t.NQN)
	fmt.Fprintf(&s, "echo 1 > $S/attr_allow_any_host\nmkdir $S/namespaces/1\n")
	fmt.Fprintf(&s, "echo -n %s > $S/namespaces/1/device_path\necho 1 > $S/namespaces/1/enable\n", t.Device)
	for i, a := range t.Addrs {
		fam := "ipv4"
		if a.Is6() {
			fam = "ipv6"
		}
		fmt.Fprintf(&s, "P=$N/ports/%d\nmkdir $P\necho tcp > $P/addr_trtype\necho %s > $P/addr_adrfam\n", i+1, fam)
		fmt.Fprintf(&s, "echo %s > $P/addr_traddr\necho %d > $P/addr_trsvcid\nln -s $S $P/subsystems/%s\n", a, t.Port, t.NQN)
	}
	return s.String(), nil
}

// Controller is an NVMe controller of a guest, as sysfs shows it.
type Controller struct {
	Name       string // nvme0
	State      string // live, connecting, resetting, deleting, …
	Transport  string // tcp
	TrAddr     string // the target's address
	TrSvcID    string
	HostTrAddr string // the local address (-w)
	SubNQN     string
}

// Controllers lists the guest's NVMe controllers. The guest's init reads
// sysfs itself (ReadFiles), so polling it starts no process in the guest.
func (g *Guest) Controllers(ctx context.Context) ([]Controller, error) {
	var pats []string
	for _, a := range controllerAttrs {
		pats = append(pats, "/sys/class/nvme/nvme*/"+a)
	}
	files, err := g.ReadFiles(ctx, pats...)
	if err != nil {
		return nil, err
	}
	return parseControllers(files), nil
}

// controllerAttrs are the sysfs attributes Controllers reads.
var controllerAttrs = []string{"state", "transport", "address", "subsysnqn"}

// parseControllers builds the controllers from their sysfs attribute files
// (path → content); a controller without a state is left out.
func parseControllers(files map[string]string) []Controller {
	attrs := map[string]map[string]string{}
	for p, v := range files {
		dir, name := path.Split(p)
		dev := path.Base(dir)
		if attrs[dev] == nil {
			attrs[dev] = map[string]string{}
		}
		attrs[dev][name] = strings.TrimSpace(v)
	}
	var cs []Controller
	for dev, a := range attrs {
		if a["state"] == "" {
			continue
		}
		addr := nvmeaddr.Parse(a["address"])
		cs = append(cs, Controller{Name: dev, State: a["state"], Transport: a["transport"], SubNQN: a["subsysnqn"],
			TrAddr: addr.TrAddr, TrSvcID: addr.TrSvcID, HostTrAddr: addr.HostTrAddr})
	}
	slices.SortFunc(cs, func(a, b Controller) int { return strings.Compare(a.Name, b.Name) })
	return cs
}

// namespaceName matches block devices of NVMe namespaces (with native
// multipath, the shared head; not the hidden per-path nvmeXcYnZ).
var namespaceName = regexp.MustCompile(`^nvme[0-9]+n[0-9]+$`)

// Namespaces lists the guest's NVMe namespace block devices (/dev/NAME).
func (g *Guest) Namespaces(ctx context.Context) ([]string, error) {
	out, err := g.Sh(ctx, `ls /sys/block`)
	if err != nil {
		return nil, err
	}
	var ns []string
	for _, n := range strings.Fields(out) {
		if namespaceName.MatchString(n) {
			ns = append(ns, n)
		}
	}
	return ns, nil
}

// Connect runs nvme connect -t tcp in the guest (the kernel initiator,
// without inof-host), with keep-alive, reconnect-delay and ctrl-loss
// timeouts in seconds (0 leaves one out).
func (g *Guest) Connect(ctx context.Context, traddr, hostTraddr netip.Addr, port uint16, nqn string, kato, reconnect, ctrlLoss int) error {
	argv := []string{GuestNVMe, "connect", "-t", "tcp", "-a", traddr.String(), "-s", strconv.Itoa(int(port)),
		"-w", hostTraddr.String(), "-n", nqn}
	for _, o := range []struct {
		flag string
		v    int
	}{{"-k", kato}, {"-c", reconnect}, {"-l", ctrlLoss}} {
		if o.v > 0 {
			argv = append(argv, o.flag, strconv.Itoa(o.v))
		}
	}
	r, err := g.Run(ctx, argv...)
	if err == nil && r.Code != 0 {
		err = fmt.Errorf("vm: %s: nvme connect: exit %d: %s", g.Name, r.Code, bytes.TrimSpace(r.Stderr))
	}
	return err
}

// IOStall is the guest's I/O stall meter running on a block device: one
// O_DIRECT read at a time, recording the longest gap between completions.
type IOStall struct {
	p   *Process
	out *syncbuf.Buffer
}

// StallReport is the meter's result (see ctlproto.StallReport).
type StallReport = ctlproto.StallReport

// StartIOStall starts the meter on dev (e.g. /dev/nvme0n1) and returns
// once it reads (and takes the report signals: before that, one would
// kill it).
func (g *Guest) StartIOStall(ctx context.Context, dev string) (*IOStall, error) {
	w := &syncbuf.Buffer{}
	p, err := g.Start(ctx, []string{GuestIOStall, "-dev", dev}, w)
	if err != nil {
		return nil, err
	}
	for !strings.Contains(w.String(), "iostall: reading") {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("vm: %s: iostall did not start: %w (output %q)", g.Name, ctx.Err(), truncate(w.String(), 400))
		case <-p.Done():
			return nil, fmt.Errorf("vm: %s: iostall exited: %q", g.Name, truncate(w.String(), 400))
		case <-time.After(20 * time.Millisecond):
		}
	}
	return &IOStall{p: p, out: w}, nil
}

// Output is what the meter printed so far (its start line, read errors
// and every gap of 200 ms or more as it ended).
func (s *IOStall) Output() string { return s.out.String() }

// Snapshot returns the meter's report so far; the meter goes on.
func (s *IOStall) Snapshot(ctx context.Context) (StallReport, error) {
	return s.report(ctx, syscall.SIGUSR1)
}

// report asks the meter for a report with sig and waits for it.
func (s *IOStall) report(ctx context.Context, sig syscall.Signal) (StallReport, error) {
	before := strings.Count(s.out.String(), "\n{")
	if err := s.p.Signal(ctx, sig); err != nil {
		return StallReport{}, err
	}
	for strings.Count(s.out.String(), "\n{") == before {
		select {
		case <-ctx.Done():
			return StallReport{}, fmt.Errorf("vm: iostall snapshot: %w", ctx.Err())
		case <-s.p.Done():
			return StallReport{}, fmt.Errorf("vm: iostall exited: %q", truncate(s.out.String(), 400))
		case <-time.After(20 * time.Millisecond):
		}
	}
	return s.last()
}

// Window returns the meter's report since the last Window (or its start)
// and starts a new window: one report per link cut.
func (s *IOStall) Window(ctx context.Context) (StallReport, error) {
	return s.report(ctx, syscall.SIGUSR2)
}

// Stop stops the meter and returns its report.
func (s *IOStall) Stop(ctx context.Context) (StallReport, error) {
	if _, err := s.p.Stop(ctx, 5*time.Second); err != nil {
		return StallReport{}, err
	}
	return s.last()
}

// last parses the last JSON report line of the output.
func (s *IOStall) last() (StallReport, error) {
	var r StallReport
	out := strings.TrimSpace(s.out.String())
	// Lines that are not reports (a read cut short by Stop, a gap notice)
	// may follow the last report.
	i := strings.LastIndex(out, "\n{")
	line, _, _ := strings.Cut(out[i+1:], "\n")
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return r, fmt.Errorf("vm: iostall report %q: %w (output %q)", truncate(line, 200), err, truncate(out, 400))
	}
	return r, nil
}
