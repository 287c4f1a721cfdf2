package readback

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/lossless/dcbnl"
)

// fakeDCB returns a fixed state, as a device with DCB ops would.
type fakeDCB struct {
	st  dcbnl.State
	err error
}

func (f fakeDCB) Get(string) (dcbnl.State, error) { return f.st, f.err }

// fullApps is the APP table `dcb app replace … dscp-prio` leaves for the
// default profile: all 64 DSCPs, 24 at 3, 48 at 6, the rest at 0.
func fullApps() []dcbnl.App {
	var apps []dcbnl.App
	for d := range uint16(64) {
		prio := map[uint16]uint8{24: 3, 48: 6}[d]
		apps = append(apps, dcbnl.App{Selector: dcbnl.SelDSCP, Priority: prio, Protocol: d})
	}
	return apps
}

// configured is the DCB state the Linux renderer's commands produce for the
// default profile on a 5 m server port.
func configured() dcbnl.State {
	ets := &dcbnl.ETS{PrioTC: [8]uint8{0, 0, 0, 3, 0, 0, 6, 0}}
	ets.TCTxBW[0], ets.TCTxBW[3] = 50, 50
	for i := range ets.TSA {
		ets.TSA[i] = dcbnl.TSAETS
	}
	ets.TSA[6] = dcbnl.TSAStrict
	return dcbnl.State{
		Ifname: "ens1f0",
		ETS:    ets,
		PFC:    &dcbnl.PFC{Enabled: 1 << 3, Delay: 5},
		Apps:   fullApps(),
		Trust:  []uint8{dcbnl.SelDSCP},
		Buffer: &dcbnl.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}},
	}
}

// fakeSysfs writes a sysfs tree with the profile's ECN values, then applies
// overrides (a value "" removes the file).
func fakeSysfs(t *testing.T, p lossless.Profile, ifname string, override map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for _, s := range p.ECNSysfs() {
		v, ok := override[s.Path]
		if !ok {
			v = strconv.FormatUint(uint64(s.Value), 10)
		}
		if v == "" {
			continue
		}
		file := filepath.Join(root, ifname, "ecn", s.Path)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func profile() lossless.Profile {
	p := lossless.Default()
	p.Ports[0].Interfaces = []string{"ens1f0"}
	return p
}

func TestMatchingHostHasNoDifferences(t *testing.T) {
	p := profile()
	root := fakeSysfs(t, p, "ens1f0", nil)
	h, err := Read(fakeDCB{st: configured()}, root, "ens1f0", p)
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(p, h); len(d) != 0 {
		t.Errorf("differences on a matching host:\n%s", Format("ens1f0", d))
	}
	if got := Format("ens1f0", nil); got != "ens1f0: matches the profile\n" {
		t.Errorf("Format(none) = %q", got)
	}
}

func TestDifferencesReported(t *testing.T) {
	p := profile()
	st := configured()
	st.PFC.Enabled = 1 << 4 // PFC on 4 instead of 3
	st.PFC.Delay = 7        // mlx5 default cable length, not the 5 m of the profile
	st.ETS.TCTxBW[0], st.ETS.TCTxBW[3] = 60, 40
	st.ETS.TSA[6] = dcbnl.TSAETS
	st.Apps = slices.DeleteFunc(st.Apps, func(a dcbnl.App) bool { return a.Protocol == 48 })
	st.Apps[26].Priority = 3
	st.Trust = []uint8{dcbnl.SelPCP}
	st.Buffer.PrioBuffer[3] = 0
	root := fakeSysfs(t, p, "ens1f0", map[string]string{
		"roce_np/cnp_dscp":     "46",
		"roce_rp/enable/3":     "0",
		"roce_rp/rpg_min_rate": "",
	})
	h, err := Read(fakeDCB{st: st}, root, "ens1f0", p)
	if err != nil {
		t.Fatal(err)
	}
	got := Format("ens1f0", Diff(p, h))
	for _, want := range []string{
		"apptrust first selector: want dscp, have pcp",
		"app dscp-prio 48: want 6, have (none)",
		"app dscp-prio 26: want 0, have 3",
		"ets tc-tsa 6: want strict, have ets",
		"ets tc-bw 0: want 50, have 60",
		"ets tc-bw 3: want 50, have 40",
		"pfc prio-pfc 3: want on, have off",
		"pfc prio-pfc 4: want off, have on",
		"pfc delay (mlx5: cable metres): want 5, have 7",
		"buffer prio-buffer 3: want 1, have 0",
		"ecn/roce_np/cnp_dscp: want 48, have 46",
		"ecn/roce_rp/enable/3: want 1, have 0",
		"ecn/roce_rp/rpg_min_rate: want 1, have (missing)",
		"13 difference(s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

// A device without DCB reporting still diffs: every DCB part is "(not
// reported)", and the trust follows the (missing) DSCP APP entries as on
// mlx5.
func TestTrustInferredWithoutAppTrust(t *testing.T) {
	p := profile()
	root := fakeSysfs(t, p, "ens1f0", nil)
	st := configured()
	st.Trust = nil // mlx5: no dcbnl_getapptrust
	h, err := Read(fakeDCB{st: st}, root, "ens1f0", p)
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(p, h); len(d) != 0 {
		t.Errorf("mlx5 host with the full DSCP table differs: %v", d)
	}
	p.RoCE.Trust = "pcp"
	d := Format("ens1f0", Diff(p, h))
	for _, want := range []string{"trust: want pcp, have dscp (no APP trust reported, DSCP APP entries)", "app dscp-prio 24: want (none), have 3"} {
		if !strings.Contains(d, want) {
			t.Errorf("missing %q in:\n%s", want, d)
		}
	}
}

// A device without DCB reporting still diffs: every DCB part is "(not reported)".
func TestUnreportedParts(t *testing.T) {
	p := profile()
	root := fakeSysfs(t, p, "ens1f0", nil)
	h, err := Read(fakeDCB{st: dcbnl.State{}}, root, "ens1f0", p)
	if err != nil {
		t.Fatal(err)
	}
	got := Format("ens1f0", Diff(p, h))
	for _, want := range []string{"ets: want configured, have (not reported)", "pfc: want configured, have (not reported)",
		"trust: want dscp, have pcp (no APP trust reported, no DSCP APP entries)"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func TestReadErrors(t *testing.T) {
	p := profile()
	if _, err := Read(fakeDCB{err: errors.New("operation not supported")}, t.TempDir(), "veth0", p); err == nil {
		t.Error("DCB read error swallowed")
	}
	root := fakeSysfs(t, p, "ens1f0", map[string]string{"roce_np/cnp_dscp": "forty-eight"})
	if _, err := ReadECN(root, "ens1f0", []string{"roce_np/cnp_dscp"}); err == nil {
		t.Error("a non-numeric sysfs value was accepted")
	}
	got, err := ReadECN(t.TempDir(), "nodev", []string{"roce_np/cnp_dscp"})
	if err != nil || len(got) != 0 {
		t.Errorf("missing tree: %v, %v", got, err)
	}
}
