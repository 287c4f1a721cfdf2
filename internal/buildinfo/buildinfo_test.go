package buildinfo

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"}}}
	in := fromBuildInfo(bi)
	if got, want := in.Line("inofd"), "inofd v1.2.3 (revision 0123456789ab+dirty, 2026-11-30T10:00:00Z, go1.26.8)\n"; got != want {
		t.Fatalf("line %q, want %q", got, want)
	}
	in = fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8"})
	if got, want := in.String(), "(devel) (revision unknown, go1.26.8)"; got != want {
		t.Fatalf("without VCS: %q, want %q", got, want)
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
