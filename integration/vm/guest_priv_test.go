//go:build privileged

package vm_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/integration/vm"
	"github.com/openinof/inof/internal/netns"
)

// image builds (or finds in the cache) the guest image once per test
// binary; it skips the test when a needed tool is missing outside CI.
func image(t *testing.T) vm.Image {
	t.Helper()
	topo.RequireVM(t)
	img, err := imageOnce()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

var imageOnce = sync.OnceValues(func() (vm.Image, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return vm.BuildImage(ctx, vm.ImageOptions{})
})

// boot starts a guest whose NICs are taps in the given namespaces and
// stops it when the test ends.
func boot(t *testing.T, img vm.Image, name string, dir string, nics ...vm.NIC) *vm.Guest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := vm.Boot(ctx, vm.Config{Name: name, Dir: dir, Image: img, NICs: nics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Close()
		if t.Failed() {
			t.Logf("console of %s:\n%s", name, tailLines(g.Console(), 40))
		}
	})
	return g
}

func tailLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func tap(t *testing.T, ns *netns.NS, name string) *vm.Tap {
	t.Helper()
	tp, err := vm.CreateTap(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return tp
}

func sh(t *testing.T, g *vm.Guest, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := g.Sh(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPrivGuestNVMeTCP: two guests on one bridge in a namespace; the
// target guest serves null_blk over kernel nvmet, the host guest's kernel
// initiator connects (live controller, 1 GB block device, reads work), the
// control channel reports exit codes and streams background output, and
// QMP set_link takes the guest's carrier away and back.
func TestPrivGuestNVMeTCP(t *testing.T) {
	img := image(t)
	ns := netns.New(t, "vm")
	ns.MustIP("link", "add", "br0", "type", "bridge")
	ns.MustIP("link", "set", "br0", "up")
	dir := t.TempDir()
	taps := []*vm.Tap{tap(t, ns, "tapT"), tap(t, ns, "tapH")}
	for _, tp := range taps {
		ns.MustIP("link", "set", tp.Name, "master", "br0")
	}
	var tgt, hst *vm.Guest
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		tgt = boot(t, img, "tgt", dir, vm.NIC{Tap: taps[0], MAC: vm.MAC(0x66, 0, 0x10)})
	}()
	go func() {
		defer wg.Done()
		hst = boot(t, img, "hst", dir, vm.NIC{Tap: taps[1], MAC: vm.MAC(0x66, 0, 0x20)})
	}()
	wg.Wait()
	if tgt == nil || hst == nil {
		t.FailNow()
	}
	t.Logf("boot: tgt %s, hst %s", tgt.BootDuration(), hst.BootDuration())

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Exit codes and output of the control channel.
	r, err := hst.Run(ctx, "sh", "-c", "echo out; echo err >&2; exit 3")
	if err != nil || r.Code != 3 || string(r.Stdout) != "out\n" || string(r.Stderr) != "err\n" {
		t.Fatalf("run: %+v, %v", r, err)
	}
	if _, err := hst.Run(ctx, "/no/such/program"); err == nil {
		t.Error("running a missing program reported no error")
	}
	if err := hst.WriteFile(ctx, "/tmp/x/y", []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, hst, "cat /tmp/x/y; stat -c %a /tmp/x/y"); got != "hello600\n" {
		t.Errorf("written file reads %q", got)
	}

	tAddr, hAddr := netip.MustParseAddr("10.66.0.10"), netip.MustParseAddr("10.66.0.20")
	sh(t, tgt, "ip addr add 10.66.0.10/24 dev eth0 && ip link set eth0 up")
	sh(t, hst, "ip addr add 10.66.0.20/24 dev eth0 && ip link set eth0 up")
	const nqn = "nqn.2026-11.io.openinof:vmtest"
	if err := tgt.SetupTarget(ctx, vm.Target{NQN: nqn, Addrs: []netip.Addr{tAddr}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := hst.Connect(ctx, tAddr, hAddr, 4420, nqn, 2, 1, 5); err != nil {
		t.Fatal(err)
	}
	t.Logf("nvme connect returned after %s", time.Since(start))
	cs, err := hst.Controllers(ctx)
	if err != nil || len(cs) != 1 || cs[0].State != "live" || cs[0].TrAddr != tAddr.String() || cs[0].SubNQN != nqn {
		t.Fatalf("controllers after connect: %+v, %v", cs, err)
	}
	nss, err := hst.Namespaces(ctx)
	if err != nil || len(nss) != 1 {
		t.Fatalf("namespaces: %v, %v", nss, err)
	}
	if got := sh(t, hst, "cat /sys/block/"+nss[0]+"/size"); strings.TrimSpace(got) != "2097152" {
		t.Errorf("%s has %s sectors, want 2097152 (1 GB null_blk)", nss[0], got)
	}

	// The stall meter reads through the controller.
	st, err := hst.StartIOStall(ctx, "/dev/"+nss[0])
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	rep, err := st.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reads == 0 || rep.Errors != 0 {
		t.Errorf("iostall: %+v\n%s", rep, st.Output())
	}
	t.Logf("iostall over %.1f s: %d reads, longest gap %.0f ms", rep.Seconds, rep.Reads, rep.MaxGapMS)

	// QMP set_link: the guest loses carrier, and gets it back.
	if _, err := hst.SetLink(ctx, 0, false); err != nil {
		t.Fatal(err)
	}
	waitCarrier(t, hst, "0")
	if _, err := hst.SetLink(ctx, 0, true); err != nil {
		t.Fatal(err)
	}
	waitCarrier(t, hst, "1")

	if _, err := hst.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := hst.Run(ctx, "true"); !errors.Is(err, vm.ErrGuestGone) {
		t.Errorf("a killed guest answered: %v, want ErrGuestGone", err)
	}
}

func waitCarrier(t *testing.T, g *vm.Guest, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := strings.TrimSpace(sh(t, g, "cat /sys/class/net/eth0/carrier"))
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s eth0 carrier %s, want %s", g.Name, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
