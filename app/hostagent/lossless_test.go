package hostagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apitest"
	"github.com/openinof/inof/lossless"
	"github.com/openinof/inof/lossless/dcbnl"
)

// dcbHost wraps the fake nvme: it records the dcb commands it receives
// (under the configured binary name) and answers them as a NIC without DCB
// ops would, or successfully.
type dcbHost struct {
	*fakeNVMe
	mu       sync.Mutex
	dcb      [][]string
	fail     bool
	wantBin  string
	wrongBin []string
}

func (d *dcbHost) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if name == "nvme" {
		return d.fakeNVMe.Run(ctx, name, args...)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if name != d.wantBin {
		d.wrongBin = append(d.wrongBin, name)
	}
	d.dcb = append(d.dcb, append([]string{name}, args...))
	if d.fail {
		return []byte("Error: Operation not supported"), errors.New("exit status 1")
	}
	return nil, nil
}

func (d *dcbHost) calls() [][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]string(nil), d.dcb...)
}

// noDCB is a DCB reader for a device without DCB ops.
type noDCB struct{}

func (noDCB) Get(string) (dcbnl.State, error) {
	return dcbnl.State{}, errors.New("operation not supported")
}

// countingBackend counts the profile fetches.
type countingBackend struct {
	*apitest.Backend
	fetches atomic.Int32
}

func (b *countingBackend) LosslessProfile(ctx context.Context) (lossless.Profile, error) {
	b.fetches.Add(1)
	return b.Backend.LosslessProfile(ctx)
}

// losslessAgent serves profile p on a real admin API socket and starts an
// agent following it.
func losslessAgent(t *testing.T, p lossless.Profile, apply bool, d *dcbHost) (*harness, *fakeClock, *countingBackend) {
	t.Helper()
	b := &countingBackend{Backend: apitest.NewBackend(t)}
	if err := b.SetLosslessProfile(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	_, sock := apitest.Serve(t, b, api.ServeOptions{ReadOnly: true})
	o := testOptions(t)
	o.Lossless.Server = sock
	o.Lossless.Apply = apply
	o.Lossless.DCBPath = "/usr/sbin/dcb"
	// A name no machine has: /sys/class/net/inoftest0/ecn cannot exist, so
	// nothing real is written.
	o.Lossless.Interfaces = []string{"inoftest0"}
	d.wantBin = o.Lossless.DCBPath
	clk := newFakeClock()
	h := startFull(t, o, clk, d.fakeNVMe, d, noDCB{}, true)
	return h, clk, b
}

// outcomes reads inof_host_lossless_profiles_total for one outcome.
func (h *harness) outcomes(outcome string) float64 {
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "inof_host_lossless_profiles_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLosslessApplyFromAPI(t *testing.T) {
	d := &dcbHost{fakeNVMe: newFakeNVMe()}
	h, clk, b := losslessAgent(t, lossless.Default(), true, d)
	// inoftest0 in the server class: 5 dcb commands (apptrust, app, ets,
	// pfc, buffer); the ECN writes are skipped (no mlx5 ecn/ directory).
	waitFor(t, "the profile to be applied", func() bool {
		return h.outcomes("applied") == 1
	})
	got := d.calls()
	if len(got) != 5 {
		t.Fatalf("%d dcb commands, want 5: %v", len(got), got)
	}
	if len(d.wrongBin) > 0 {
		t.Fatalf("dcb ran as %v, not lossless.dcb_path", d.wrongBin)
	}
	if line := strings.Join(got[3], " "); line != "/usr/sbin/dcb pfc set dev inoftest0 prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off delay 5" {
		t.Fatalf("pfc command %q", line)
	}
	// The same profile fetched again is not applied again; a changed one
	// is, at the next fetch.
	clk.Advance(time.Minute)
	waitFor(t, "a second fetch", func() bool { return b.fetches.Load() >= 2 })
	p := lossless.Default()
	p.Ports[0].CableMeters = 10
	if err := b.SetLosslessProfile(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	waitFor(t, "the changed profile to be applied", func() bool { return h.outcomes("applied") == 2 })
	got = d.calls()
	if len(got) != 10 {
		t.Fatalf("%d dcb commands after the change, want 10 (the unchanged profile must not be applied twice)", len(got))
	}
	if line := strings.Join(got[8], " "); !strings.HasSuffix(line, "delay 10") {
		t.Fatalf("pfc command after the change %q", line)
	}
}

func TestLosslessPlanOnlyByDefault(t *testing.T) {
	d := &dcbHost{fakeNVMe: newFakeNVMe()}
	h, _, _ := losslessAgent(t, lossless.Default(), false, d)
	waitFor(t, "the profile to be planned", func() bool { return h.outcomes("planned") == 1 })
	if c := d.calls(); len(c) != 0 {
		t.Fatalf("lossless.apply off, yet commands ran: %v", c)
	}
}

func TestLosslessFailuresCounted(t *testing.T) {
	d := &dcbHost{fakeNVMe: newFakeNVMe(), fail: true}
	h, _, _ := losslessAgent(t, lossless.Default(), true, d)
	waitFor(t, "the failure to be counted", func() bool { return h.outcomes("apply-failed") == 1 })
	if n := len(d.calls()); n != 5 {
		t.Fatalf("%d commands tried, want all 5 despite failures", n)
	}
}

func TestLosslessPlanFromFile(t *testing.T) {
	p := lossless.Default()
	p.Name = "from-file"
	y, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(file, y, 0o644); err != nil {
		t.Fatal(err)
	}
	o := testOptions(t)
	o.Lossless.File = file
	o.Lossless.Interfaces = []string{"ens1f0", "ens1f1"}
	pl, err := LosslessPlan(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	s := pl.Script()
	for _, want := range []string{`"from-file"`, "dcb ets set dev ens1f1", "echo 48 > /sys/class/net/ens1f0/ecn/roce_np/cnp_dscp"} {
		if !strings.Contains(s, want) {
			t.Errorf("plan lacks %q:\n%s", want, s)
		}
	}
	o.Lossless.PortClass = "nosuch"
	if _, err := LosslessPlan(context.Background(), o); err == nil {
		t.Fatal("an unknown port class was planned")
	}
}

func TestLosslessOptionsValidate(t *testing.T) {
	o := testOptions(t)
	o.Lossless.Apply = true
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "lossless.apply") {
		t.Fatalf("apply without a source: %v", err)
	}
	o.Lossless.Server, o.Lossless.File = "/run/inof.sock", "/etc/p.yaml"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Fatalf("server and file: %v", err)
	}
}
