// Package cmdtest runs the project's binaries in tests as a user runs
// them: built with go build, started as processes, their output compared
// with golden files (go test -update rewrites them).
package cmdtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// Build builds the command in dir (a package path such as "." or
// "../inofctl") into a temporary directory and returns the binary's path.
func Build(t testing.TB, dir, name string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH to build %s: %v", name, err)
	}
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(goBin, "build", "-o", bin, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", dir, err, out)
	}
	return bin
}

// Result is what one run printed and how it ended.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Run runs bin with args and the environment env (nil: an empty one) and
// waits for it.
func Run(t testing.TB, bin string, env []string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s: %v", bin, err)
	}
	return Result{Code: cmd.ProcessState.ExitCode(), Stdout: out.String(), Stderr: errOut.String()}
}

// versionText matches the build part of a --version line (internal/
// buildinfo's String): the module version, then revision, time and Go
// version in parentheses.
var versionText = regexp.MustCompile(`\S+ \(revision (?:[0-9a-f]{12}(?:\+dirty)?|unknown)(?:, [0-9TZ:+-]+)?, go[0-9.a-z-]+\)`)

// VersionShape reports whether line is PROGRAM's --version line.
func VersionShape(program, line string) bool {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(program) + ` ` + versionText.String() + "\n$").MatchString(line)
}

// Normalize replaces the build text (which changes with every commit) by
// VERSION.
func Normalize(s string) string { return versionText.ReplaceAllString(s, "VERSION") }

// Golden compares got with testdata/NAME.golden; with update (the test
// package's -update flag) it writes the file instead.
func Golden(t testing.TB, update bool, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\n--- got\n%s--- want\n%s", name, path, got, want)
	}
}

// HasZone reports whether out, the output of `inofctl zone list -o json`,
// shows the zone name with exactly these members.
func HasZone(out, name string, members ...string) bool {
	var zl struct {
		Items []struct {
			Name    string   `json:"name"`
			Members []string `json:"members"`
		} `json:"items"`
	}
	if json.Unmarshal([]byte(out), &zl) != nil {
		return false
	}
	for _, z := range zl.Items {
		if z.Name == name && slices.Equal(z.Members, members) {
			return true
		}
	}
	return false
}
