package buildinfo

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"}}}
	in := fromBuildInfo(bi, "", "")
	if got, want := in.Line("inofd"), "inofd v1.2.3 (revision 0123456789ab+dirty, 2026-11-30T10:00:00Z, go1.26.8)\n"; got != want {
		t.Fatalf("line %q, want %q", got, want)
	}
	in = fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8"}, "", "")
	if got, want := in.String(), "(devel) (revision unknown, go1.26.8)"; got != want {
		t.Fatalf("without VCS: %q, want %q", got, want)
	}
	// make package: the linker's version and revision, without VCS stamping.
	in = fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
		"0.0.0~git20261206065000.0123456789ab", "0123456789abcdef")
	if got, want := in.String(), "0.0.0~git20261206065000.0123456789ab (revision 0123456789ab, go1.26.8)"; got != want {
		t.Fatalf("linked: %q, want %q", got, want)
	}
	// The linker's version wins; the toolchain's revision stays.
	in = fromBuildInfo(bi, "1.2.0", "ffff")
	if got, want := in.String(), "1.2.0 (revision 0123456789ab+dirty, 2026-11-30T10:00:00Z, go1.26.8)"; got != want {
		t.Fatalf("linked over VCS: %q, want %q", got, want)
	}
}

// TestLinkerFlags builds a program with the -X flags make package passes
// and runs it: the names the flags set exist and are read.
func TestLinkerFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "x")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", LinkerFlags("1.2.0~rc1", "fedcba9876543210"), "-o", bin, "./testdata/linked")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "x 1.2.0~rc1 (revision fedcba987654, go") {
		t.Fatalf("--version of a linked build: %q", out)
	}
}

// TestReadThisBinary: the test binary has build information with the
// running toolchain's version.
func TestReadThisBinary(t *testing.T) {
	in := Read()
	if in.GoVersion != runtime.Version() || in.Version == "" {
		t.Fatalf("%+v", in)
	}
	if !regexp.MustCompile(`^\S+ \(revision \S+(, \S+)?, go\S+\)$`).MatchString(in.String()) {
		t.Fatalf("shape: %q", in.String())
	}
}
