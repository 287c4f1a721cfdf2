// Package buildinfo tells what a binary was built from: the module version,
// the VCS revision and time, and the Go version, as the Go toolchain
// records them in every binary (runtime/debug.ReadBuildInfo). It is what
// `--version`, `inofctl version` and the inof_build_info metric print.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info describes one build.
type Info struct {
	// Version is the main module's version: a release tag (v1.2.3), a
	// pseudo-version, or "(devel)" for a build from a work tree.
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
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
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
