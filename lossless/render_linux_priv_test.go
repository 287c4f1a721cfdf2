//go:build privileged

package lossless

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// needPriv skips without root or the tool, or fails under CI=true.
func needPriv(t *testing.T, tools ...string) {
	t.Helper()
	miss := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	if os.Geteuid() != 0 {
		miss("needs root (network namespaces)")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			miss(tool + " not found")
		}
	}
}

// Every dcb line of the Linux rendering, run with this machine's real dcb
// (iproute2) on a veth in a fresh network namespace. A veth has no DCB
// operations, and dcb reads the current value before it parses a set
// command's arguments, so the kernel's "Operation not supported" proves the
// object, command and device parsed and the request reached rtnetlink;
// the arguments are checked by TestLinuxCommandsParse against dcb's
// grammar. apptrust is the exception this test exists for: before
// iproute2 6.2 dcb refuses the object itself, and the step is optional.
func TestPrivLinuxCommandsReachKernel(t *testing.T) {
	needPriv(t, "ip", "dcb")
	ns := fmt.Sprintf("inofdcb%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	if out, err := exec.Command("ip", "-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1").CombinedOutput(); err != nil {
		t.Fatalf("veth: %v: %s", err, out)
	}
	dcb := func(args ...string) (string, error) {
		out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "dcb"}, args...)...).CombinedOutput()
		return string(out), err
	}
	version, _ := exec.Command("dcb", "-V").CombinedOutput()
	t.Logf("dcb: %s", strings.TrimSpace(string(version)))
	// The control: a parse error reads differently from the kernel's answer.
	if out, err := dcb("nosuchobject", "set", "dev", "v0"); err == nil || !strings.Contains(out, "is unknown") {
		t.Fatalf("dcb nosuchobject: %v %q", err, out)
	}
	p := withInterfaces(Default(), TargetLinux)
	plan, err := PlanPort(p, p.Ports[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range LinuxSteps(p, plan, "v0") {
		if s.Argv == nil {
			continue
		}
		out, err := dcb(s.Argv[1:]...)
		switch {
		case err == nil:
			t.Errorf("%q succeeded on a veth", s.Argv)
		case strings.Contains(out, "Operation not supported"):
		case s.Argv[1] == "apptrust" && strings.Contains(out, `Object "apptrust" is unknown`):
			if s.Optional == "" {
				t.Errorf("this dcb has no apptrust, and the step is not optional: a set -e script stops here")
			}
			t.Logf("this iproute2 has no apptrust (before 6.2): the optional step fails as expected")
		default:
			t.Errorf("%q: dcb refused it before the kernel: %s", s.Argv, out)
		}
	}
}
