//go:build privileged

package bfd

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openinof/inof/internal/netns"
)

// frrBFD runs FRR's bfdd in a namespace, in a directory owned by frr
// (spec/peers.md).
type frrBFD struct {
	ns   *netns.NS
	dir  string
	conf string
	cmd  *exec.Cmd
}

func newFRR(t *testing.T, ns *netns.NS, local, peer netip.Addr, ms int) *frrBFD {
	t.Helper()
	netns.RequireTool(t, "/usr/lib/frr/bfdd")
	netns.RequireTool(t, "vtysh")
	dir, err := os.MkdirTemp("", "inof-frr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	u, err := user.Lookup("frr")
	if err != nil {
		t.Fatalf("user frr: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	conf := filepath.Join(dir, "bfdd.conf")
	text := fmt.Sprintf(`frr defaults traditional
hostname inoftest
log file %s/bfdd.log debugging
bfd
 peer %s local-address %s
  receive-interval %d
  transmit-interval %d
  detect-multiplier 3
`, dir, peer, local, ms, ms)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, conf} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	f := &frrBFD{ns: ns, dir: dir, conf: conf}
	t.Cleanup(func() {
		f.kill()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "bfdd.log"))
			t.Logf("bfdd log (tail):\n%s", tail(string(b), 3000))
		}
	})
	return f
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (f *frrBFD) start(t *testing.T) {
	t.Helper()
	d := f.dir
	f.cmd = f.ns.Command("/usr/lib/frr/bfdd", "-f", f.conf, "-i", d+"/bfdd.pid", "--vty_socket", d,
		"-z", d+"/zserv.api", "--bfdctl", d+"/bfdd.sock", "-P", "0")
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := f.cmd.Start(); err != nil {
		t.Fatalf("bfdd: %v", err)
	}
}

func (f *frrBFD) kill() {
	if f.cmd != nil && f.cmd.ProcessState == nil {
		f.cmd.Process.Signal(syscall.SIGKILL)
		f.cmd.Wait()
	}
}

// peers returns `show bfd peers` from vtysh.
func (f *frrBFD) peers() string {
	out, _ := f.ns.Command("vtysh", "--vty_socket", f.dir, "-c", "show bfd peers").CombinedOutput()
	return string(out)
}

// TestPrivFRRInterop: our session and FRR bfdd's come Up (FRR shows ours
// Up); FRR killed with SIGKILL is detected as Down within the detection
// time plus one interval; FRR restarted brings the session Up again.
func TestPrivFRRInterop(t *testing.T) {
	ours := netns.New(t, "bfd-ours")
	theirs := netns.New(t, "bfd-frr")
	netns.Veth(t, ours, "v0", theirs, "v1")
	a, b := netip.MustParseAddr("10.88.0.1"), netip.MustParseAddr("10.88.0.2")
	ours.Addr("v0", "10.88.0.1/24")
	theirs.Addr("v1", "10.88.0.2/24")

	m := NewManager(ManagerOptions{})
	defer m.Close()
	ch := watch(m)
	key := SessionKey{Local: a, Peer: b}
	const ms = 50
	if err := ours.Do(func() error {
		_, err := m.Add(Config{Key: key, DesiredMinTx: ms * time.Millisecond, RequiredMinRx: ms * time.Millisecond, DetectMult: 3})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	frr := newFRR(t, theirs, b, a, ms)
	frr.start(t)

	_, next := ch.waitFor(t, key, Up, 0)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(frr.peers(), "Status: up") {
		if time.Now().After(deadline) {
			t.Fatalf("FRR never shows the session up:\n%s", frr.peers())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Let the Poll sequence settle the fast timers.
	for s, _ := m.Session(key); s.Status().TxInterval != ms*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("timers never negotiated: %+v", s.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}

	killed := time.Now()
	frr.kill()
	down, next := ch.waitFor(t, key, Down, next)
	took := down.At.Sub(killed)
	t.Logf("FRR killed: Down after %s (%s)", took, down.Diag)
	if down.Diag != DiagControlExpired {
		t.Fatalf("diag %s, want control-detection-time-expired", down.Diag)
	}
	if bound := 4 * ms * time.Millisecond; took > bound+500*time.Millisecond {
		// Detection time (3 × 50 ms) plus one interval, with slack for a
		// loaded machine; a missed detection would take seconds.
		t.Fatalf("detection took %s", took)
	}

	frr.start(t)
	ch.waitFor(t, key, Up, next)
}
