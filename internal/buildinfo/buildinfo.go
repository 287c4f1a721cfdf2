// Package buildinfo tells what a binary was built from: the module version,
// the VCS revision and time, and the Go version, as the Go toolchain
// records them in every binary (runtime/debug.ReadBuildInfo), or as the
// build declared them with the linker (make build, make package):
//
//	go build -ldflags "-X github.com/openinof/inof/internal/buildinfo.version=1.2.0
//	    -X github.com/openinof/inof/internal/buildinfo.revision=0123abcd..."
//
// It is what `--version`, `inofctl version`, the manual pages' footers and
// the inof_build_info metric print.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// version and revision are set by the linker (-X): the version and commit
// the build declares, e.g. the Debian package's version. They win over the
// toolchain's "(devel)" and fill in a revision it did not record
// (-buildvcs=false, or a work tree git cannot read).
var version, revision string

// Info describes one build.
type Info struct {
	// Version is the version the build declared with the linker (a
	// package's 1.2.0 or 0.0.0~git20261130120000.0123456789ab), else the
	// main module's: a release tag (v1.2.3), a pseudo-version, or
	// "(devel)" for a build from a work tree.
	Version string
	// Revision is the VCS commit ("" when built without VCS information,
	// e.g. with -buildvcs=false); Modified says the work tree had
	// uncommitted changes.
	Revision string
	Modified bool
	// Time is the commit time, RFC 3339 ("" when unknown).
	Time string
	// GoVersion is the toolchain that built the binary ("go1.26.8").
	GoVersion string
}

// Read returns the running binary's build information. A binary built
// without module support (never, with today's toolchain) reports
// "unknown" for every field.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown", GoVersion: "unknown"}
	}
	return fromBuildInfo(bi, version, revision)
}

// fromBuildInfo reads bi; linkVersion and linkRevision are what the linker
// set ("" when nothing).
func fromBuildInfo(bi *debug.BuildInfo, linkVersion, linkRevision string) Info {
	in := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if linkVersion != "" {
		in.Version = linkVersion
	}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	if in.Revision == "" {
		in.Revision = linkRevision
	}
	return in
}

// ShortRevision is the first 12 characters of the revision, with "+dirty"
// when the work tree was modified; "unknown" without a revision.
func (i Info) ShortRevision() string {
	r := i.Revision
	if r == "" {
		return "unknown"
	}
	if len(r) > 12 {
		r = r[:12]
	}
	if i.Modified {
		r += "+dirty"
	}
	return r
}

// String is the one-line form `--version` prints after the program name:
// "v1.2.3 (revision 0123456789ab, 2026-11-30T10:00:00Z, go1.26.8)".
func (i Info) String() string {
	parts := []string{"revision " + i.ShortRevision()}
	if i.Time != "" {
		parts = append(parts, i.Time)
	}
	parts = append(parts, i.GoVersion)
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(parts, ", "))
}

// Line is what `PROGRAM --version` prints: the program name and String,
// ending in a newline.
func (i Info) Line(program string) string { return program + " " + i.String() + "\n" }

// LinkerFlags are the -ldflags that declare a build's version and revision
// (either may be empty), for `go build -ldflags`.
func LinkerFlags(version, revision string) string {
	const pkg = "github.com/openinof/inof/internal/buildinfo"
	var flags []string
	if version != "" {
		flags = append(flags, "-X "+pkg+".version="+version)
	}
	if revision != "" {
		flags = append(flags, "-X "+pkg+".revision="+revision)
	}
	return strings.Join(flags, " ")
}
