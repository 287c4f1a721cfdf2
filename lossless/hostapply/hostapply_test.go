package hostapply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/lossless/dcbnl"
)

// fakeHost plays a NIC with DCB ops: it interprets the dcb commands it is
// given into a DCB state (as the kernel would store them) and returns that
// state to the read back, so a test sees whether the commands the plan runs
// produce what readback expects.
type fakeHost struct {
	mu    sync.Mutex
	st    dcbnl.State
	ran   []string
	fail  string // a command starting with this fails
	calls int
}

func (h *fakeHost) Get(ifname string) (dcbnl.State, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.st
	st.Ifname = ifname
	return st, nil
}

func (h *fakeHost) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	line := strings.Join(append([]string{name}, args...), " ")
	h.ran = append(h.ran, line)
	if h.fail != "" && strings.HasPrefix(line, h.fail) {
		return []byte("Error: Operation not supported"), errors.New("exit status 1")
	}
	if name != "dcb" || len(args) < 4 || args[2] != "dev" {
		return nil, fmt.Errorf("fake host: cannot run %q", line)
	}
	return nil, h.dcb(args[0], args[4:])
}

// pairs reads "k:v" arguments until the next keyword.
func pairs(args []string) (map[int]string, []string) {
	out := map[int]string{}
	for len(args) > 0 {
		k, v, ok := strings.Cut(args[0], ":")
		n, err := strconv.Atoi(k)
		if !ok || err != nil {
			break
		}
		out[n] = v
		args = args[1:]
	}
	return out, args
}

func atou8(s string) uint8 { n, _ := strconv.Atoi(s); return uint8(n) }

func (h *fakeHost) dcb(object string, args []string) error {
	switch object {
	case "apptrust": // order dscp
		if len(args) != 2 || args[1] != "dscp" {
			return fmt.Errorf("apptrust %v", args)
		}
		h.st.Trust = []uint8{dcbnl.SelDSCP}
	case "app": // dscp-prio d:p ...
		m, _ := pairs(args[1:])
		h.st.Apps = nil
		for d := range 64 {
			if p, ok := m[d]; ok {
				h.st.Apps = append(h.st.Apps, dcbnl.App{Selector: dcbnl.SelDSCP, Priority: atou8(p), Protocol: uint16(d)})
			}
		}
	case "ets": // tc-tsa ... tc-bw ... prio-tc ...
		ets := &dcbnl.ETS{}
		for len(args) > 0 {
			kw := args[0]
			var m map[int]string
			m, args = pairs(args[1:])
			for i, v := range m {
				switch kw {
				case "tc-tsa":
					ets.TSA[i] = map[string]uint8{"ets": dcbnl.TSAETS, "strict": dcbnl.TSAStrict}[v]
				case "tc-bw":
					ets.TCTxBW[i] = atou8(v)
				case "prio-tc":
					ets.PrioTC[i] = atou8(v)
				}
			}
		}
		h.st.ETS = ets
	case "pfc": // prio-pfc ... delay N
		pfc := &dcbnl.PFC{}
		m, rest := pairs(args[1:])
		for i, v := range m {
			if v == "on" {
				pfc.Enabled |= 1 << i
			}
		}
		if len(rest) == 2 && rest[0] == "delay" {
			n, _ := strconv.Atoi(rest[1])
			pfc.Delay = uint16(n)
		}
		h.st.PFC = pfc
	case "buffer": // prio-buffer ...
		b := &dcbnl.Buffer{}
		m, _ := pairs(args[1:])
		for i, v := range m {
			b.PrioBuffer[i] = atou8(v)
		}
		h.st.Buffer = b
	default:
		return fmt.Errorf("dcb %s: unknown object", object)
	}
	return nil
}

// ecnTree makes /sys/class/net/DEV/ecn with every file the profile writes,
// holding 0.
func ecnTree(t *testing.T, p lossless.Profile, dev string) string {
	t.Helper()
	root := t.TempDir()
	for _, s := range p.ECNSysfs() {
		f := filepath.Join(root, dev, "ecn", s.Path)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// rdmaTree gives DEV under root an RDMA device (device/infiniband/mlx5_0),
// an MTU and dev_port 0, and returns a fake RDMA-CM configfs whose mlx5_0
// group has port 1's attribute files (the kernel creates them on mkdir).
func rdmaTree(t *testing.T, root, dev string, mtu int) string {
	t.Helper()
	files := map[string]string{
		filepath.Join(root, dev, "device", "infiniband", "mlx5_0", "node_type"): "1: CA",
		filepath.Join(root, dev, "mtu"):                                         strconv.Itoa(mtu),
		filepath.Join(root, dev, "dev_port"):                                    "0",
	}
	cm := t.TempDir()
	for _, attr := range []string{"default_roce_mode", "default_roce_tos"} {
		files[filepath.Join(cm, "mlx5_0", "ports", "1", attr)] = "0"
	}
	for f, v := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cm
}

// serverPlan plans the default profile's server class on one mlx5-like
// interface: its ECN tree, an RDMA device with the given MTU and a fake
// RDMA-CM configfs.
func serverPlan(t *testing.T, mtu int) (pl Plan, root, cm string) {
	t.Helper()
	p := lossless.Default()
	pl, err := NewPlan(p, "server", []string{"ens1f0"})
	if err != nil {
		t.Fatal(err)
	}
	root = ecnTree(t, p, "ens1f0")
	return pl, root, rdmaTree(t, root, "ens1f0", mtu)
}

// stepKinds counts a plan's dcb commands, ECN writes and RDMA-CM/MTU steps.
func stepKinds(steps []lossless.LinuxStep) (dcb, ecn, rdma int) {
	for _, s := range steps {
		switch {
		case s.SysfsPath != "":
			ecn++
		case s.RDMAAttr != "" || s.RoCEMTU != 0:
			rdma++
		default:
			dcb++
		}
	}
	return dcb, ecn, rdma
}

func TestApplyBringsHostToProfile(t *testing.T) {
	p := lossless.Default()
	pl, root, cm := serverPlan(t, 9000)
	h := &fakeHost{}
	res, err := Apply(context.Background(), Options{Exec: h, SysfsNet: root, RDMACM: cm, DCB: h}, pl)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("%d results, want 1", len(res))
	}
	r := res[0]
	t.Log(r)
	if r.ReadErr != nil || len(r.Before) == 0 {
		t.Fatalf("a blank host read back with no differences (err %v)", r.ReadErr)
	}
	if len(r.After) != 0 {
		t.Fatalf("after applying, the host still differs: %v", r.After)
	}
	if r.Ran != len(pl.Interfaces[0].Steps) || len(r.Failed) != 0 || r.NoECN || r.NoRDMA {
		t.Fatalf("ran %d of %d, failed %v, noECN %v, noRDMA %v", r.Ran, len(pl.Interfaces[0].Steps), r.Failed, r.NoECN, r.NoRDMA)
	}
	for file, want := range map[string]string{
		filepath.Join(root, "ens1f0", "ecn", "roce_np", "cnp_dscp"):    strconv.Itoa(int(p.CNP.DSCP)),
		filepath.Join(cm, "mlx5_0", "ports", "1", "default_roce_mode"): "RoCE v2",
		// ToS = DSCP 24 << 2: RDMA-CM connections without their own ToS go out lossless.
		filepath.Join(cm, "mlx5_0", "ports", "1", "default_roce_tos"): "96",
	} {
		got, err := os.ReadFile(file)
		if err != nil || strings.TrimSpace(string(got)) != want {
			t.Fatalf("%s holds %q (%v), want %q", file, got, err, want)
		}
	}
	// Applying again changes nothing and finds nothing to change.
	res, err = Apply(context.Background(), Options{Exec: h, SysfsNet: root, RDMACM: cm, DCB: h}, pl)
	if err != nil || len(res[0].Before) != 0 || len(res[0].After) != 0 {
		t.Fatalf("second apply: before %v after %v err %v", res[0].Before, res[0].After, err)
	}
}

func TestApplyReportsFailuresAndGoesOn(t *testing.T) {
	p := lossless.Default()
	pl, err := NewPlan(p, "server", []string{"eth0", "eth1"})
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{fail: "dcb buffer"}
	root := ecnTree(t, p, "eth0") // eth1 has no ecn/: not an mlx5 NIC
	res, err := Apply(context.Background(), Options{Exec: h, SysfsNet: root}, pl)
	if err == nil || !strings.Contains(err.Error(), "Operation not supported") {
		t.Fatalf("error %v does not carry the command's output", err)
	}
	dcbSteps, ecn, rdma := stepKinds(pl.Interfaces[0].Steps)
	// Neither has an RDMA device: the RDMA-CM steps are skipped, not failed.
	if r := res[0]; r.Ran != dcbSteps-1+ecn || len(r.Failed) != 1 || r.NoECN || !r.NoRDMA || r.Skipped != rdma {
		t.Fatalf("eth0: %v", r)
	}
	if r := res[1]; r.Ran != dcbSteps-1 || len(r.Failed) != 1 || !r.NoECN || r.Skipped != ecn+rdma {
		t.Fatalf("eth1: %v", r)
	}
	if h.calls != 2*dcbSteps {
		t.Fatalf("%d commands ran, want %d (the steps after a failure must still run)", h.calls, 2*dcbSteps)
	}
	if s := res[1].String(); !strings.Contains(s, "not an mlx5 NIC") || !strings.Contains(s, "read back unavailable") {
		t.Fatalf("summary %q", s)
	}
}

// mlx5 has no apptrust operation (and iproute2 before 6.2 no apptrust
// object): the step fails, is reported as unsupported, and the host still
// counts as set up.
func TestApplyOptionalAppTrust(t *testing.T) {
	pl, root, cm := serverPlan(t, 9100)
	h := &fakeHost{fail: "dcb apptrust"}
	res, err := Apply(context.Background(), Options{Exec: h, SysfsNet: root, RDMACM: cm}, pl)
	if err != nil {
		t.Fatalf("a failing optional step failed the apply: %v", err)
	}
	r := res[0]
	if len(r.Unsupported) != 1 || len(r.Failed) != 0 || r.Ran != len(pl.Interfaces[0].Steps)-1 {
		t.Fatalf("%v", r)
	}
	if !strings.Contains(r.String(), `unsupported "dcb apptrust set dev ens1f0 order dscp"`) {
		t.Errorf("summary %q", r.String())
	}
}

// A 1500-byte MTU gives RDMA-CM a RoCE path MTU of 1024, not the profile's
// 4096: the check fails and says both.
func TestApplyRoCEMTUChecked(t *testing.T) {
	pl, root, cm := serverPlan(t, 1500)
	h := &fakeHost{}
	_, err := Apply(context.Background(), Options{Exec: h, SysfsNet: root, RDMACM: cm}, pl)
	if err == nil || !strings.Contains(err.Error(), "MTU 1500 gives RDMA-CM a RoCE path MTU of 1024, the profile says 4096") {
		t.Fatalf("err = %v", err)
	}
}

func TestNewPlanErrors(t *testing.T) {
	p := lossless.Default()
	if _, err := NewPlan(p, "nosuch", []string{"eth0"}); err == nil || !strings.Contains(err.Error(), "server, leaf, spine") {
		t.Fatalf("unknown class: %v", err)
	}
	if _, err := NewPlan(p, "server", nil); err == nil {
		t.Fatal("no interfaces accepted")
	}
	bad := lossless.Default()
	bad.LosslessPriorities = nil
	if _, err := NewPlan(bad, "server", []string{"eth0"}); err == nil {
		t.Fatal("an invalid profile was planned")
	}
}

func TestScriptMatchesRenderer(t *testing.T) {
	p := lossless.Default()
	pl, err := NewPlan(p, "server", []string{"ens1f0"})
	if err != nil {
		t.Fatal(err)
	}
	p.Ports = []lossless.Port{p.Ports[0]}
	p.Ports[0].Interfaces = []string{"ens1f0"}
	rendered, err := lossless.Render(p, lossless.TargetLinux)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(pl.Script(), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(string(rendered), line+"\n") {
			t.Errorf("dry-run line %q is not in the Linux rendering", line)
		}
	}
}
