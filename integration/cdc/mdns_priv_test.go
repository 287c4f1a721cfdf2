//go:build privileged

package cdc

import (
	"bufio"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/netns"
)

// browse runs python3-zeroconf's DNS-SD browser for _nvme-disc._tcp inside
// a namespace for seconds and returns the services it found, one line each
// ("FOUND name port addresses txt").
func browse(t *testing.T, ns *netns.NS, seconds int) []string {
	t.Helper()
	// Debian's python3, where the python3-zeroconf package installs.
	py := netns.RequireTool(t, "/usr/bin/python3")
	if err := exec.Command(py, "-c", "import zeroconf").Run(); err != nil {
		netns.Missing(t, "python3-zeroconf")
	}
	_, file, _, _ := runtime.Caller(0)
	out, err := ns.Command(py, filepath.Join(filepath.Dir(file), "testdata", "browse.py"), fmt.Sprint(seconds)).CombinedOutput()
	if err != nil {
		t.Fatalf("browse in %s: %v\n%s", ns.Name, err, out)
	}
	var found []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "FOUND") || strings.HasPrefix(l, "UNRESOLVED") {
			found = append(found, l)
		}
	}
	return found
}

// watcher streams a python3-zeroconf browser's ADDED/REMOVED lines from a
// namespace.
type watcher struct {
	lines chan string
	cmd   *exec.Cmd
}

func watch(t *testing.T, ns *netns.NS) *watcher {
	t.Helper()
	py := netns.RequireTool(t, "/usr/bin/python3")
	_, file, _, _ := runtime.Caller(0)
	cmd := ns.Command(py, filepath.Join(filepath.Dir(file), "testdata", "browse.py"), "120", "watch")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &watcher{lines: make(chan string, 16), cmd: cmd}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return w
}

// next waits for the next line with prefix (ADDED or REMOVED).
func (w *watcher) next(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case l, ok := <-w.lines:
			if !ok {
				t.Fatalf("the browser ended before a %s line", prefix)
			}
			if strings.HasPrefix(l, prefix+" ") {
				return l
			}
		case <-timeout:
			t.Fatalf("no %s line from the browser within %s", prefix, wait)
		}
	}
}

// TestPrivMDNSAdvertisement (TP 8009): a host on an access port of a switch
// that serves discovery finds the controller with a stock DNS-SD browser
// (python3-zeroconf, nothing of ours): one _nvme-disc._tcp service with the
// discovery port, TXT p=tcp and the discovery NQN, at the switch's address
// on that port. Browsing from the fabric side (the switch's uplink) finds
// nothing, and a switch without discovery advertises nothing. A reload
// that takes the port out of access_ports withdraws the service there (a
// goodbye the browser sees as a removal), one that puts it back
// advertises it again, and so does the switch's stop: a goodbye.
func TestPrivMDNSAdvertisement(t *testing.T) {
	requireRoles(t)
	f := topo.Start(t, spec())
	h1 := f.Node("h1")
	hl := h1.Links[0]
	gw := hl.Prefix.Masked().Addr().Next()
	hl.Switch.NS.Addr(hl.Port, netip.PrefixFrom(gw, hl.Prefix.Bits()).String())
	if err := f.WaitEstablished(wait); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := topo.Poll(wait, func() (bool, error) {
		got = browse(t, h1.NS, 4)
		return len(got) == 1, fmt.Errorf("found %q", got)
	}); err != nil {
		t.Fatalf("access port: %v", err)
	}
	want := fmt.Sprintf("FOUND iNOF discovery 10-0-0-11._nvme-disc._tcp.local. %d %s nqn=nqn.2014-08.org.nvmexpress.discovery;p=tcp", port, gw)
	if got[0] != want {
		t.Fatalf("access port: %q\nwant %q", got[0], want)
	}
	if up := browse(t, f.Bridge(), 4); len(up) != 0 {
		t.Fatalf("the uplink side found %q", up)
	}
	// leaf2 serves no discovery: its hosts find nothing.
	t1 := f.Node("t1")
	tl := t1.Links[0]
	tl.Switch.NS.Addr(tl.Port, netip.PrefixFrom(tl.Prefix.Masked().Addr().Next(), tl.Prefix.Bits()).String())
	if other := browse(t, t1.NS, 4); len(other) != 0 {
		t.Fatalf("leaf2's port found %q", other)
	}

	// The advertisement follows access_ports on a reload.
	leaf1 := hl.Switch
	w := watch(t, h1.NS)
	w.next(t, "ADDED")
	var ports []any
	for _, l := range leaf1.Links {
		ports = append(ports, l.Port)
	}
	others := slices.DeleteFunc(slices.Clone(ports), func(p any) bool { return p == hl.Port })
	if len(others) == 0 {
		t.Fatal("leaf1 needs a second access port for the reload")
	}
	mark, err := leaf1.Reload(func(cfg map[string]any) { cfg["access_ports"] = others })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf1.WaitLog(mark, `msg="configuration reloaded"`, wait); err != nil {
		t.Fatal(err)
	}
	w.next(t, "REMOVED")
	if got := browse(t, h1.NS, 4); len(got) != 0 {
		t.Fatalf("a port taken out of access_ports still advertises: %q", got)
	}
	if _, err := leaf1.Reload(func(cfg map[string]any) { cfg["access_ports"] = ports }); err != nil {
		t.Fatal(err)
	}
	w.next(t, "ADDED")
	// Stopping the switch says goodbye.
	if err := leaf1.Stop(wait); err != nil {
		t.Fatal(err)
	}
	w.next(t, "REMOVED")
}
