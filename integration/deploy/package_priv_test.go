//go:build privileged

package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openinof/inof/integration/clab"
	"github.com/openinof/inof/integration/topo"
	"github.com/openinof/inof/internal/cmdtest"
	"github.com/openinof/inof/internal/packaging"
)

// baseImage is the clean Debian the packages are installed in: bookworm,
// mmdebstrap's minbase with what the packages depend on (nvme-cli;
// procps, whose /bin/kill the units' ExecReload runs) and systemd
// (systemd-analyze, systemd-sysusers), made locally because no registry
// can be reached.
const baseImage = "inof-test/debian:bookworm"

// requireRoot fails under CI and skips elsewhere when not root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (docker, mmdebstrap)")
		}
		t.Skip("needs root (docker, mmdebstrap); run as root")
	}
}

// debianImage makes baseImage unless Docker has it: mmdebstrap from the
// machine's Debian mirror, its tar straight into docker import
// (mmdebstrap fetches and unpacks in parallel: 107 s on this machine at
// load 13, against about 8 min for debootstrap).
func debianImage(t *testing.T) {
	t.Helper()
	if exec.Command("docker", "image", "inspect", baseImage).Run() == nil {
		return
	}
	requireTool(t, "mmdebstrap", "mmdebstrap")
	mirror := os.Getenv("INOF_DEBIAN_MIRROR")
	if mirror == "" {
		mirror = "http://deb.debian.org/debian"
	}
	start := time.Now()
	script := fmt.Sprintf("set -o pipefail; mmdebstrap --quiet --variant=minbase --include=nvme-cli,systemd,procps bookworm - %s | docker import - %s",
		mirror, baseImage)
	if out, err := exec.Command("bash", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("mmdebstrap | docker import: %v\n%s", err, tail(out))
	}
	t.Logf("made %s with mmdebstrap from %s in %s", baseImage, mirror, time.Since(start).Round(time.Second))
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// container is one running container of the test.
type container struct {
	t    *testing.T
	name string
}

// sh runs a shell command in the container and returns its output; want
// is the exit code expected.
func (c container) sh(want int, script string) string {
	c.t.Helper()
	out, err := exec.Command("docker", "exec", c.name, "sh", "-c", script).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("docker exec: %v", err)
	}
	if code != want {
		c.t.Fatalf("in the container: %s\nexit %d, want %d:\n%s", script, code, want, out)
	}
	return string(out)
}

// TestPrivPackages builds the .deb packages (make package) and installs
// them in a clean Debian container without a network (--network none):
// dpkg installs all three; the system user exists and reads its
// configuration (root:inofd 0640); the units verify with the installed
// binaries; the manual pages are there with the package's version in their
// footers, every page and document they refer to installed too; the
// binaries' --version names the package's version; the shell completions
// (bash loads them), the examples and the monitoring files are under
// /usr/share; inofd --role reflector starts from
// the packaged configuration as that user with the unit's one capability
// and serves the packaged inofctl (version, a zone created and listed);
// SIGTERM stops it cleanly; dpkg removes, then purges, the packages and
// leaves none of their files.
func TestPrivPackages(t *testing.T) {
	requireRoot(t)
	requireTool(t, "dpkg-deb", "dpkg")
	requireTool(t, "docker", "docker.io")
	clab.EnsureDocker(t)
	debianImage(t)
	dist := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	debs, err := packaging.Build(ctx, packaging.Options{Root: "../..", Out: dist})
	if err != nil {
		t.Fatal(err)
	}
	if len(debs) != 3 {
		t.Fatalf("packages %v", debs)
	}
	name := fmt.Sprintf("inof-pkg-test-%d", os.Getpid())
	// --init: something reaps the daemon started by docker exec.
	run := exec.Command("docker", "run", "-d", "--rm", "--init", "--name", name, "--network", "none",
		"-v", dist+":/debs:ro", baseImage, "sleep", "infinity")
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
	c := container{t: t, name: name}

	c.sh(0, "dpkg -i /debs/inofctl_*.deb /debs/inofd_*.deb /debs/inof-host_*.deb")
	if out := c.sh(0, "dpkg-query -W -f '${Package} ${Status}\\n' inofd inof-host inofctl"); strings.Count(out, "install ok installed") != 3 {
		t.Fatalf("installed: %s", out)
	}
	if out := c.sh(0, "getent passwd inofd; stat -c '%U:%G %a' /etc/inof/inofd-reflector.yaml /etc/inof/inofd-switch.yaml"); !strings.Contains(out, ":/nonexistent:/usr/sbin/nologin") ||
		strings.Count(out, "root:inofd 640") != 2 {
		t.Fatalf("system user and configuration modes:\n%s", out)
	}
	c.sh(0, "systemd-analyze verify --man=no /lib/systemd/system/inofd-reflector.service /lib/systemd/system/inofd-switch.service /lib/systemd/system/inof-host.service")
	version := strings.TrimSpace(c.sh(0, "dpkg-query -W -f '${Version}' inofd"))
	if out := c.sh(0, "zcat /usr/share/man/man8/inofd.8.gz /usr/share/man/man8/inof-host.8.gz /usr/share/man/man1/inofctl-zone-create.1.gz | grep '^.TH'"); strings.Count(out, ".TH") != 3 ||
		strings.Count(out, `"inof `+version+`"`) != 3 {
		t.Fatalf("manual pages (footer \"inof %s\"): %s", version, out)
	}
	// Every page a page refers to is installed, and so is every document
	// it names (none of the repository's docs/).
	c.sh(0, `set -e; n=0; for p in /usr/share/man/man*/inof*.gz; do n=$((n+1)); zcat $p > /tmp/page
		if grep -n 'docs/' /tmp/page; then echo "$p names the repository's docs"; exit 1; fi
		for ref in $(grep -o '\\fB[a-z0-9-]*([18])\\fP' /tmp/page | sed 's/^.fB//; s/.fP$//'); do
			name=${ref%(*}; sec=${ref#*(}; sec=${sec%)}
			test -f /usr/share/man/man$sec/$name.$sec.gz || { echo "$p refers to $ref, not installed"; exit 1; }
		done
		for doc in $(grep -o '/usr/share/doc/[a-z/.-]*' /tmp/page); do
			test -f $doc || { echo "$p names $doc, not installed"; exit 1; }
		done
	done; test $n -gt 60`)
	if out := c.sh(0, "zcat /usr/share/man/man8/inofd.8.gz"); !strings.Contains(out, "inofd-restore(8)") ||
		!strings.Contains(out, "/usr/share/doc/inofd/operations.md") {
		t.Fatalf("inofd(8) names neither inofd-restore(8) nor the installed operations.md:\n%s", out)
	}
	if out := c.sh(0, "inofd --version; inof-host --version; inofctl --version"); strings.Count(out, " "+version+" (revision ") != 3 {
		t.Fatalf("versions (want %s): %s", version, out)
	}
	// Shell completions generated by the binaries: bash loads them.
	c.sh(0, "grep -q '^#compdef inofctl' /usr/share/zsh/vendor-completions/_inofctl && "+
		"grep -q '^#compdef inofd' /usr/share/zsh/vendor-completions/_inofd && "+
		"grep -q 'complete -c inofctl' /usr/share/fish/vendor_completions.d/inofctl.fish && "+
		"grep -q 'complete -c inofd' /usr/share/fish/vendor_completions.d/inofd.fish")
	if out := c.sh(0, "bash -c '. /usr/share/bash-completion/completions/inofctl; . /usr/share/bash-completion/completions/inofd; complete -p inofctl inofd'"); strings.Count(out, "complete -o default -F __start_") != 2 {
		t.Fatalf("bash completions: %s", out)
	}
	// Examples and monitoring under /usr/share/doc.
	c.sh(0, "cd /usr/share/doc/inofd && test -s examples/inofd-switch-direct.yaml && test -s monitoring/grafana/inof-fabric.json && test -s monitoring/prometheus/inof-alerts.yml && "+
		"test -s monitoring/prometheus/inof-alerts.test.yml && test -s monitoring/prometheus/scrape.yml && "+
		"test -s examples/inofd-switch-on-reflector.yaml && test -s /usr/share/doc/inof-host/host-agent.md")

	// As the unit runs it: user inofd with CAP_NET_BIND_SERVICE, the state
	// and runtime directories systemd would make. BFD stays off: the
	// example's local_address is no address of this container.
	c.sh(0, "install -d -m 0700 -o inofd -g inofd /var/lib/inofd-reflector /run/inofd")
	c.sh(0, "INOF_BFD_ENABLED=false setpriv --reuid inofd --regid inofd --init-groups --inh-caps +net_bind_service "+
		"--ambient-caps +net_bind_service inofd --role reflector --config /etc/inof/inofd-reflector.yaml "+
		"> /tmp/inofd.log 2>&1 & echo $! > /tmp/inofd.pid")
	if err := topo.Poll(60*time.Second, func() (bool, error) {
		out, err := exec.Command("docker", "exec", name, "inofctl", "version").CombinedOutput()
		return err == nil, fmt.Errorf("inofctl version: %v: %s", err, out)
	}); err != nil {
		t.Fatalf("%v\ninofd log:\n%s", err, c.sh(0, "cat /tmp/inofd.log"))
	}
	if out := c.sh(0, "inofctl version"); !strings.Contains(out, "role reflector") {
		t.Fatalf("inofctl version: %s", out)
	}
	c.sh(0, "inofctl zone create red 10.0.0.5 10.0.1.5 --yes")
	if out := c.sh(0, "inofctl zone list -o json"); !cmdtest.HasZone(out, "red", "10.0.0.5", "10.0.1.5") {
		t.Fatalf("zone list: %s", out)
	}
	c.sh(0, "p=$(cat /tmp/inofd.pid); kill -TERM $p; for i in $(seq 300); do "+
		"grep -qs '^State:.*[^Z] ' /proc/$p/status || exit 0; sleep 0.1; done; exit 1")
	if out := c.sh(0, "cat /tmp/inofd.log; cat /var/lib/inofd-reflector/reflector.state"); !strings.Contains(out, `"state":"clean"`) ||
		strings.Contains(out, "level=ERROR") {
		t.Fatalf("after SIGTERM:\n%s", out)
	}

	c.sh(0, "dpkg -r inof-host inofd inofctl")
	gone := func(paths string) string {
		return "for f in " + paths + "; do if test -e $f; then echo $f left; exit 1; fi; done"
	}
	c.sh(0, gone("/usr/bin/inofd /usr/bin/inofctl /usr/bin/inof-host /lib/systemd/system/inofd-reflector.service /usr/share/man/man8/inofd.8.gz "+
		"/usr/share/man/man8/inofd-restore.8.gz /usr/share/bash-completion/completions/inofctl /usr/share/doc/inofd/examples"))
	c.sh(0, "test -f /etc/inof/inofd-reflector.yaml") // a removed package keeps its conffiles
	c.sh(0, "dpkg -P inof-host inofd inofctl")
	c.sh(0, gone("/etc/inof /var/lib/inofd-reflector"))
	if out := c.sh(0, "dpkg-query -W -f '${db:Status-Abbrev} ${Package}\\n' 'inof*' 2>/dev/null || true; dpkg --audit"); strings.Contains(out, "ii ") {
		t.Fatalf("after purge: %s", out)
	}
}
