package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinof/inof/cmd/inofctl/internal/cli"
	"github.com/openinof/inof/lossless"
)

// offline runs inofctl against an API address where nothing listens: a
// command that needed the server would fail with Unavailable.
func offline(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	dead := "unix://" + filepath.Join(t.TempDir(), "no-inofd.sock")
	code = cli.Main(context.Background(), append([]string{"--server", dead}, args...),
		cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb, Environ: []string{"HOME=" + t.TempDir()}})
	return code, out.String(), errb.String()
}

// profileFile writes p as YAML and returns its path.
func profileFile(t *testing.T, p lossless.Profile) string {
	t.Helper()
	y, err := p.YAML()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "lossless.yaml")
	if err := os.WriteFile(f, y, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// `render -f`, `table -f`, `check -f`, `validate FILE` and `platforms` work
// with no inofd.
func TestLosslessOffline(t *testing.T) {
	p := lossless.Default()
	p.Ports[0].Interfaces = []string{"e1"}
	p.Ports[1].Interfaces = []string{"e2"}
	p.Ports[2].Interfaces = []string{"e3"}
	file := profileFile(t, p)
	for _, c := range []struct {
		args       []string
		stdout     string
		stderr     string
		wantStatus int
	}{
		{[]string{"lossless", "render", "huawei", "-f", file, "--platform", "ce6866"}, "dcb pfc deadlock-detect timer 200", "", 0},
		{[]string{"lossless", "render", "sonic", "-f", file}, `"PFC_WD"`, "# note (sonic/spectrum-2): BUFFER_PROFILE pool", 0},
		{[]string{"lossless", "render", "linux", "-f", file}, "default_roce_tos", "", 0},
		{[]string{"lossless", "table", "-f", file}, "400G", "", 0},
		{[]string{"lossless", "check", "-f", file}, "nvue/spectrum-2", "", 0},
		{[]string{"lossless", "check", "-f", file, "-o", "json"}, `"differs": false`, "", 0},
		{[]string{"lossless", "validate", file}, "valid", "", 0},
		{[]string{"lossless", "platforms"}, "ce6855 (default)", "", 0},
		{[]string{"lossless", "render", "junos", "-f", file}, "", "invalid argument", 2},
		{[]string{"lossless", "render", "huawei", "-f", file, "--platform", "ce12800"}, "", "no platform \"ce12800\"", 1},
		{[]string{"lossless", "check", "-f", file, "--platform", "huawei"}, "", "want TARGET=NAME", 2},
	} {
		code, out, errs := offline(t, c.args...)
		if code != c.wantStatus || !strings.Contains(out, c.stdout) || !strings.Contains(errs, c.stderr) {
			t.Errorf("inofctl %s: exit %d (want %d)\nstdout:\n%.600s\nstderr:\n%s", strings.Join(c.args, " "), code, c.wantStatus, out, errs)
		}
	}
}

// A profile with a problem fails validate (offline) with the problem, and a
// profile a target cannot follow fails check with the difference.
func TestLosslessOfflineFailures(t *testing.T) {
	bad := lossless.Default()
	bad.Watchdog.PollMs = 2000
	code, out, _ := offline(t, "lossless", "validate", profileFile(t, bad))
	if code != 1 || !strings.Contains(out, "watchdog.poll_ms") {
		t.Errorf("validate: exit %d\n%s", code, out)
	}
	differ := lossless.Default()
	differ.Watchdog.RestorationMs = 1000
	code, out, errs := offline(t, "lossless", "check", "-f", profileFile(t, differ))
	if code != 1 || !strings.Contains(out, "≠ 200/200 ms drop") || !strings.Contains(errs, "does something else than the profile") {
		t.Errorf("check: exit %d\n%s\n%s", code, out, errs)
	}
}
