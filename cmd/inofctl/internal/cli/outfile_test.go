package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinof/inof/app/api"
	"github.com/openinof/inof/app/api/apitest"
	"github.com/openinof/inof/cmd/inofctl/internal/cli"
)

// TestOutputFiles: backup and zoning export write "-" to standard output;
// a file is created mode 0600 (backup) through a new file beside it that
// leaves nothing behind; an existing file is overwritten only when the
// user says yes or with --force; a file planted at the old temporary
// names is left alone.
func TestOutputFiles(t *testing.T) {
	_, sock := apitest.Serve(t, apitest.NewBackend(t), api.ServeOptions{})
	run := func(stdin string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := cli.Main(context.Background(), append([]string{"--server", "unix://" + sock}, args...),
			cli.IO{In: strings.NewReader(stdin), Out: &out, Err: &errb, Environ: []string{"HOME=" + t.TempDir()}})
		return code, out.String(), errb.String()
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if code, out, errs := run("", "zone", "create", "web", "10.0.0.1", "--yes"); code != 0 {
		t.Fatalf("zone create: %d %s %s", code, out, errs)
	}
	code, out, errs := run("", "backup", "-")
	if code != 0 || !strings.HasPrefix(out, "INOFBAK1") {
		t.Fatalf("backup -: exit %d, %q…: %s", code, out[:min(len(out), 16)], errs)
	}
	code, out, errs = run("", "zoning", "export", "-f", "-")
	if code != 0 || !strings.Contains(out, "# inofctl zoning export: revision") {
		t.Fatalf("export -f -: exit %d:\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); !os.IsNotExist(err) {
		t.Fatalf("a file named - was written: %v", err)
	}

	backup := filepath.Join(dir, "zones.backup")
	planted := map[string]string{backup + ".partial": "planted", filepath.Join(dir, ".zones.backup.tmp"): "planted"}
	for p, c := range planted {
		if err := os.WriteFile(p, []byte(c), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errs := run("", "backup", backup); code != 0 {
		t.Fatalf("backup: %d %s", code, errs)
	}
	st, err := os.Stat(backup)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", st.Mode(), err)
	}
	first, _ := os.ReadFile(backup)
	if code, _, errs := run("", "zone", "add", "web", "10.0.0.2", "--yes"); code != 0 {
		t.Fatal(errs)
	}
	code, _, errs = run("", "backup", backup)
	if now, _ := os.ReadFile(backup); code != 1 || !strings.Contains(errs, "exists: not overwritten (--force overwrites it)") || !bytes.Equal(now, first) {
		t.Fatalf("backup over an existing file, no answer: exit %d: %s", code, errs)
	}
	if code, _, errs := run("n\n", "backup", backup); code != 1 || !strings.Contains(errs, "Overwrite it? [y/N]") {
		t.Fatalf("backup, answered no: exit %d: %s", code, errs)
	}
	if code, _, errs := run("y\n", "backup", backup); code != 0 {
		t.Fatalf("backup, answered yes: exit %d: %s", code, errs)
	}
	if now, _ := os.ReadFile(backup); bytes.Equal(now, first) {
		t.Fatal("the answered backup did not replace the file")
	}
	if code, _, errs := run("", "backup", backup, "--force"); code != 0 {
		t.Fatalf("backup --force: exit %d: %s", code, errs)
	}
	export := filepath.Join(dir, "zoning.yaml")
	if code, _, errs := run("", "zoning", "export", "-f", export); code != 0 {
		t.Fatalf("export: %d %s", code, errs)
	}
	if code, _, errs := run("", "zoning", "export", "-f", export); code != 1 || !strings.Contains(errs, "not overwritten") {
		t.Fatalf("export over an existing file: exit %d: %s", code, errs)
	}
	if code, _, errs := run("", "zoning", "export", "-f", export, "--force"); code != 0 {
		t.Fatalf("export --force: exit %d: %s", code, errs)
	}
	for p, c := range planted {
		if b, err := os.ReadFile(p); err != nil || string(b) != c {
			t.Errorf("planted %s: %q %v", p, b, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 4 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("files left: %v", names)
	}
}
