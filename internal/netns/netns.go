package netns

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// RequireRoot stops the test unless it runs as root. Outside CI it skips with
// a message that says why; under CI (CI set in the environment) a missing root
// is a failure, because CI runs as root and a skip there would hide a test.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		tb.Fatal("privileged test needs root, and CI is expected to run as root")
	}
	tb.Skip("privileged test needs root (network namespaces, AF_PACKET); run `sudo make test`")
}

var seq atomic.Uint32

// NS is one network namespace created for a test.
type NS struct {
	Name string
	tb   testing.TB
}

// New creates a namespace named after prefix, the process id and a counter,
// brings its loopback up and deletes it (with every link inside) when the test
// ends. It calls RequireRoot first.
func New(tb testing.TB, prefix string) *NS {
	tb.Helper()
	RequireRoot(tb)
	name := fmt.Sprintf("inof-%s-%d-%d", prefix, os.Getpid(), seq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		tb.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	ns := &NS{Name: name, tb: tb}
	tb.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			tb.Logf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	ns.MustIP("link", "set", "lo", "up")
	return ns
}

// IP runs `ip -n NAME args...` and returns its combined output.
func (n *NS) IP(args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"-n", n.Name}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip -n %s %s: %w: %s", n.Name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// MustIP is IP that fails the test on error.
func (n *NS) MustIP(args ...string) string {
	n.tb.Helper()
	out, err := n.IP(args...)
	if err != nil {
		n.tb.Fatal(err)
	}
	return out
}

// Command returns a command that runs argv inside the namespace
// (`ip netns exec NAME argv...`).
func (n *NS) Command(argv ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Name}, argv...)...)
}

// Do runs fn on an OS thread switched into the namespace. Sockets opened by
// fn stay in the namespace after Do returns, so a test can open AF_PACKET or
// UDP sockets inside a namespace from its own process.
func (n *NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: if switching back failed it must not
		// be reused, and an exiting locked goroutine takes its thread along.
		runtime.LockOSThread()
		errc <- n.doLocked(fn)
	}()
	return <-errc
}

func (n *NS) doLocked(fn func() error) error {
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return fmt.Errorf("open own netns: %w", err)
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + n.Name)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", n.Name, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter netns %s: %w", n.Name, err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("leave netns %s: %w", n.Name, err)
	}
	return ferr
}

// Veth joins namespace a (interface aIf) and b (interface bIf) with a veth
// pair created directly inside them, so the names only need to be unique
// within each namespace. Both ends are set up.
func Veth(tb testing.TB, a *NS, aIf string, b *NS, bIf string) {
	tb.Helper()
	a.MustIP("link", "add", aIf, "type", "veth", "peer", "name", bIf, "netns", b.Name)
	a.MustIP("link", "set", aIf, "up")
	b.MustIP("link", "set", bIf, "up")
}

// Addr adds an address in CIDR form to an interface inside the namespace.
func (n *NS) Addr(ifname, cidr string) {
	n.tb.Helper()
	n.MustIP("addr", "add", cidr, "dev", ifname)
}

// RequireTool stops the test unless the named program is on PATH. Like
// RequireRoot, it skips outside CI and fails under CI, where .ci/run
// installs every tool the tests use.
func RequireTool(tb testing.TB, name string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	Missing(tb, name)
	return ""
}

// Missing stops the test for a tool or package that is not installed: it
// fails under CI (.ci/run installs everything the tests use) and skips
// elsewhere.
func Missing(tb testing.TB, what string) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf("%s not installed; .ci/run should have installed it", what)
	}
	tb.Skipf("%s not installed (apt-get install it to run this test)", what)
}
