//go:build privileged

package demo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/openinof/inof/internal/cmdtest"
	"github.com/openinof/inof/internal/netns"
)

// quickstartDir is the working directory docs/quickstart.md uses.
const quickstartDir = "/tmp/inof-qs"

// shBlocks returns the fenced blocks of a Markdown text whose info string
// is "sh", in order, each without its fences.
func shBlocks(md string) []string {
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !in && line == "```sh":
			in, cur = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

func TestShBlocks(t *testing.T) {
	md := "text\n```sh\na\nb\n```\n```\nnot sh\n```\n```yaml\nk: v\n```\n```sh\nc\n```\n"
	if got := shBlocks(md); len(got) != 2 || got[0] != "a\nb\n" || got[1] != "c\n" {
		t.Fatalf("shBlocks = %q", got)
	}
}

// TestPrivQuickstart runs the sh blocks of docs/quickstart.md as written,
// one after the other in one bash (-e: the first failing command fails the
// test), with the freshly built inofd, inofctl and inof-host first in
// PATH. The script runs in a network namespace of its own (its "this
// shell" side of the management link) and a mount namespace with a
// private /run/netns, so its namespace names meet no one else's. Every
// process it leaves is killed with its process group; what the page says
// to expect is checked in its output.
func TestPrivQuickstart(t *testing.T) {
	netns.RequireRoot(t)
	if _, err := os.Stat(quickstartDir); err == nil {
		t.Fatalf("%s exists: another quickstart is running or one was left behind", quickstartDir)
	}
	md, err := os.ReadFile(filepath.Join("..", "..", "docs", "quickstart.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := shBlocks(string(md))
	if len(blocks) < 8 {
		t.Fatalf("docs/quickstart.md has %d sh blocks, want its 8 steps", len(blocks))
	}
	bin := t.TempDir()
	for _, name := range []string{"inofd", "inofctl", "inof-host"} {
		b := cmdtest.Build(t, "../../cmd/"+name, name)
		if err := os.Rename(b, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	// On a failure, the daemons' logs before the page's clean-up (never
	// reached then) would remove them.
	script := "trap 'rc=$?; if [ $rc -ne 0 ]; then for f in " + quickstartDir + "/*/log; do echo \"== $f\"; tail -n 40 \"$f\"; done; fi' EXIT\n" +
		strings.Join(blocks, "")
	path := filepath.Join(t.TempDir(), "quickstart.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	setup := "set -e; mkdir -p /run/netns; mount -t tmpfs quickstart /run/netns; ip link set lo up; exec bash -e " + path
	cmd := exec.Command("unshare", "--mount", "--net", "--propagation", "private", "--", "bash", "-c", setup)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	// The daemons the page starts in the background share the group; the
	// page's clean-up ended them unless a step failed before it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	t.Cleanup(func() { os.RemoveAll(quickstartDir) })
	if err != nil {
		t.Fatalf("docs/quickstart.md's commands failed: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		`10\.0\.0\.11\s+client\s+established`,
		`10\.1\.0\.10\s+host\s+tcp\s+10\.0\.0\.11\s+swp1\s+active\s+\(default\)`,
		`10\.1\.0\.20\s+target\s+tcp\s+10\.0\.0\.11\s+swp2\s+active\s+\(default\)\s+nqn\.2014-08\.org\.example:qs-t1`,
		`10\.1\.0\.10 sees 10\.1\.0\.20: default zone: both are in no custom zone\n` +
			`committed: revision [0-9a-f]+, 1 record\(s\) written, 1 visibility change\(s\)\n` +
			`10\.1\.0\.10 does not see 10\.1\.0\.20: default zone disabled: both are in no custom zone\n` +
			`committed: revision [0-9a-f]+, 1 record\(s\) written, 1 visibility change\(s\)\n` +
			`10\.1\.0\.10 sees 10\.1\.0\.20: same zone qs\n`,
		`Switch:\s+10\.0\.0\.11 port swp2`,
		`10\.1\.0\.10\s+yes\s+same zone qs`,
		`10\.1\.0\.20\s+target\s+tcp\s+10\.0\.0\.11\s+swp2\s+active\s+\S+Z\s+\(default\)\s+4420\s+nqn\.2014-08\.org\.example:qs-t1`,
		`(?m)^200$`,
		`(?m)^qs\s+2\s+10\.1\.0\.10, 10\.1\.0\.20$`,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("the output lacks what docs/quickstart.md says to expect (%s):\n%s", want, got)
		}
	}
	if _, err := os.Stat(quickstartDir); !os.IsNotExist(err) {
		t.Errorf("the page's clean-up left %s: %v", quickstartDir, err)
	}
}
