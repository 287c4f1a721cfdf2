package hostagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/openinof/inof/inof"
	"github.com/openinof/inof/internal/nvmeaddr"
)

// Executor runs one program and returns its standard output. The real one
// is ExecExecutor; tests record the calls.
type Executor interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// ExecExecutor runs programs with os/exec; ctx bounds each run.
type ExecExecutor struct{}

// Run implements Executor. A failure carries the program's standard error.
func (ExecExecutor) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 512 {
			msg = msg[:512] + "…"
		}
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(redacted(args), " "), err, msg)
	}
	return out, nil
}

// Path identifies an NVMe-oF controller independently of its device name,
// which the kernel reuses.
type Path struct {
	Transport  string `json:"transport"` // rdma or tcp
	TrAddr     string `json:"traddr"`
	TrSvcID    string `json:"trsvcid"`
	HostTrAddr string `json:"host_traddr"`
	SubNQN     string `json:"subnqn"`
}

func (p Path) String() string {
	return fmt.Sprintf("%s:%s:%s from %s nqn %s", p.Transport, p.TrAddr, p.TrSvcID, p.HostTrAddr, p.SubNQN)
}

// Controller is one controller nvme list-subsys reports.
type Controller struct {
	Path
	Device string // nvme0
	State  string // live, connecting, resetting, deleting, ...
}

// usable reports whether the controller exists in a state that a second
// connect would duplicate.
func (c Controller) usable() bool { return c.State != "deleting" && c.State != "dead" }

// DiscoveryRecord is one entry of a discovery log page.
type DiscoveryRecord struct {
	Transport string `json:"trtype"`
	Subtype   string `json:"subtype"`
	TrAddr    string `json:"traddr"`
	TrSvcID   string `json:"trsvcid"`
	SubNQN    string `json:"subnqn"`
}

// ConnectParams are nvme connect's tunables (0 leaves an option out).
type ConnectParams struct {
	HostNQN        string
	KeepAliveTmo   int
	ReconnectDelay int
	CtrlLossTmo    int
	// HostSecret and CtrlSecret are DH-HMAC-CHAP secrets (--dhchap-secret,
	// --dhchap-ctrl-secret); empty leaves them out.
	HostSecret string
	CtrlSecret string
}

// CLI drives nvme-cli (2.x) through an Executor and parses its JSON.
type CLI struct {
	Exec Executor
	Bin  string // "nvme"
	// SubsysClass is the sysfs class of NVMe subsystems. When list-subsys
	// fails and it does not exist, the nvme core module is not loaded and
	// there are no controllers (nvme-cli 2.3 then exits 1 with "Failed to
	// scan topology"). Empty disables that check.
	SubsysClass string
}

// DefaultSubsysClass is where the kernel lists NVMe subsystems.
const DefaultSubsysClass = "/sys/class/nvme-subsystem"

// ListControllers runs `nvme list-subsys -o json`.
func (c *CLI) ListControllers(ctx context.Context) ([]Controller, error) {
	out, err := c.Exec.Run(ctx, c.Bin, "list-subsys", "-o", "json")
	if err != nil {
		if c.SubsysClass != "" {
			if _, serr := os.Stat(c.SubsysClass); errors.Is(serr, fs.ErrNotExist) {
				return nil, nil
			}
		}
		return nil, err
	}
	return parseListSubsys(out)
}

// Connect runs `nvme connect` for p and returns the new device name. It
// refuses (without running anything) a path whose NQNs fail
// inof.ValidateWireNQN or whose other fields hold a blank, ',' or '=':
// nvme-cli writes them into the kernel's /dev/nvme-fabrics option string,
// where such a value would add options of its sender's choosing.
func (c *CLI) Connect(ctx context.Context, p Path, cp ConnectParams) (string, error) {
	if err := connectSafe(p, cp); err != nil {
		return "", fmt.Errorf("nvme connect refused: %w", err)
	}
	args := []string{"connect", "-t", p.Transport, "-a", p.TrAddr, "-s", p.TrSvcID, "-w", p.HostTrAddr,
		"-n", p.SubNQN, "-q", cp.HostNQN}
	for _, o := range []struct {
		flag string
		v    int
	}{{"-k", cp.KeepAliveTmo}, {"-c", cp.ReconnectDelay}, {"-l", cp.CtrlLossTmo}} {
		if o.v > 0 {
			args = append(args, o.flag, strconv.Itoa(o.v))
		}
	}
	if cp.HostSecret != "" {
		args = append(args, "--dhchap-secret", cp.HostSecret)
	}
	if cp.CtrlSecret != "" {
		args = append(args, "--dhchap-ctrl-secret", cp.CtrlSecret)
	}
	out, err := c.Exec.Run(ctx, c.Bin, append(args, "-o", "json")...)
	var r struct {
		Device string `json:"device"`
	}
	if err != nil {
		// nvme-cli 2.3 (Debian 12) exits 1 after a successful connect
		// with -o json, having printed the new controller: it exists, so
		// that is a success (found by integration/vm's real guests).
		if jerr := json.Unmarshal(bytes.TrimSpace(out), &r); jerr == nil && validDevice(r.Device) {
			return r.Device, nil
		}
		return "", err
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		return "", fmt.Errorf("nvme connect: output %q: %w", truncate(out), err)
	}
	if !validDevice(r.Device) {
		return "", fmt.Errorf("nvme connect: output %q names no controller", truncate(out))
	}
	return r.Device, nil
}

// redacted returns args with the values of secret options replaced, for
// errors and logs.
func redacted(args []string) []string {
	out := slices.Clone(args)
	for i := 1; i < len(out); i++ {
		if out[i-1] == "--dhchap-secret" || out[i-1] == "--dhchap-ctrl-secret" {
			out[i] = "(secret)"
		}
	}
	return out
}

// connectSafe checks what Connect hands to the kernel's option parser.
func connectSafe(p Path, cp ConnectParams) error {
	if err := inof.ValidateWireNQN(p.SubNQN); err != nil {
		return fmt.Errorf("subsystem: %w", err)
	}
	if err := inof.ValidateWireNQN(cp.HostNQN); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	for _, f := range []struct{ name, v string }{{"transport", p.Transport}, {"traddr", p.TrAddr},
		{"trsvcid", p.TrSvcID}, {"host_traddr", p.HostTrAddr}} {
		if f.v == "" || strings.ContainsAny(f.v, ",= \t\n") {
			return fmt.Errorf("%w: %s %s", inof.ErrText, f.name, inof.Quote(f.v, 64))
		}
	}
	return nil
}

// Discover runs `nvme discover` against a discovery controller and returns
// its log entries.
func (c *CLI) Discover(ctx context.Context, transport, traddr, trsvcid, hostTraddr, hostNQN string) ([]DiscoveryRecord, error) {
	out, err := c.Exec.Run(ctx, c.Bin, "discover", "-t", transport, "-a", traddr, "-s", trsvcid,
		"-w", hostTraddr, "-q", hostNQN, "-o", "json")
	if err != nil {
		return nil, err
	}
	var r struct {
		Records []DiscoveryRecord `json:"records"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		return nil, fmt.Errorf("nvme discover: output %q: %w", truncate(out), err)
	}
	return r.Records, nil
}

// Disconnect runs `nvme disconnect -d DEV`.
func (c *CLI) Disconnect(ctx context.Context, device string) error {
	if !validDevice(device) {
		return fmt.Errorf("nvme disconnect: invalid device %q", device)
	}
	_, err := c.Exec.Run(ctx, c.Bin, "disconnect", "-d", device)
	return err
}

// validDevice accepts controller names "nvmeN" only, so nothing else ever
// reaches a command line.
func validDevice(s string) bool {
	n, ok := strings.CutPrefix(s, "nvme")
	if !ok || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 32)
	return err == nil
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// listSubsysPath is one controller entry of list-subsys.
type listSubsysPath struct {
	Name      string `json:"Name"`
	Transport string `json:"Transport"`
	Address   string `json:"Address"`
	State     string `json:"State"`
}

type listSubsysEntry struct {
	Name  string           `json:"Name"`
	NQN   string           `json:"NQN"`
	Paths []listSubsysPath `json:"Paths"`
}

type listSubsysHost struct {
	HostNQN    string            `json:"HostNQN"`
	Subsystems []listSubsysEntry `json:"Subsystems"`
}

// parseListSubsys reads `nvme list-subsys -o json`. nvme-cli 2.x prints an
// array of hosts, each with its subsystems and their controllers ("Paths");
// 1.x printed one object with "Subsystems". Some 2.x releases print a
// subsystem's "Paths" as a separate array element after it; those paths
// belong to the subsystem before them.
func parseListSubsys(out []byte) ([]Controller, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return nil, nil
	}
	var hosts []listSubsysHost
	if out[0] == '{' {
		var one listSubsysHost
		if err := json.Unmarshal(out, &one); err != nil {
			return nil, fmt.Errorf("nvme list-subsys: %w", err)
		}
		hosts = []listSubsysHost{one}
	} else if err := json.Unmarshal(out, &hosts); err != nil {
		return nil, fmt.Errorf("nvme list-subsys: %w", err)
	}
	var cs []Controller
	for _, h := range hosts {
		nqn := ""
		for _, s := range h.Subsystems {
			if s.NQN != "" {
				nqn = s.NQN
			}
			for _, p := range s.Paths {
				c := Controller{Device: p.Name, State: p.State, Path: parseAddress(p.Address)}
				c.Transport, c.SubNQN = p.Transport, nqn
				cs = append(cs, c)
			}
		}
	}
	return cs, nil
}

// parseAddress reads the kernel's controller address attribute
// (nvmeaddr.Parse).
func parseAddress(s string) Path {
	a := nvmeaddr.Parse(s)
	return Path{TrAddr: a.TrAddr, TrSvcID: a.TrSvcID, HostTrAddr: a.HostTrAddr}
}
