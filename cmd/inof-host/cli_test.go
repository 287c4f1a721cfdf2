package main

import (
	"flag"
	"testing"

	"github.com/openinof/inof/app/daemon"
	"github.com/openinof/inof/internal/cmdtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestCommandLine runs the real binary as a user would: --version prints
// the build, and a misspelt flag or a stray argument is a usage error
// (exit 64) that says what is wrong and shows the usage line (it used to
// exit 1 with no word at all). Output is compared with golden files.
func TestCommandLine(t *testing.T) {
	bin := cmdtest.Build(t, ".", "inof-host")
	r := cmdtest.Run(t, bin, nil, "--version")
	if r.Code != 0 || !cmdtest.VersionShape("inof-host", r.Stdout) || r.Stderr != "" {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	cmdtest.Golden(t, *update, "version", cmdtest.Normalize(r.Stdout))
	for name, args := range map[string][]string{
		"unknown-flag":   {"--bogus"},
		"misspelt-flag":  {"--confg", "x"},
		"stray-argument": {"extra"},
		"bad-value":      {"--restrain-time", "soon"},
	} {
		r := cmdtest.Run(t, bin, nil, args...)
		if r.Code != daemon.ExitUsage || r.Stdout != "" {
			t.Errorf("%s: exit %d (want %d), stdout %q", name, r.Code, daemon.ExitUsage, r.Stdout)
		}
		cmdtest.Golden(t, *update, name, r.Stderr)
	}
}
