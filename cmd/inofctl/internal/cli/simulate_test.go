package cli_test

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `lossless simulate` runs locally with a fixed seed, so its output is
// the same on every run. The scenarios are small (at most 8 senders, 1 ms
// simulated) to keep the test fast; stderr is not a terminal here, so no
// progress bar may appear in the transcript.
func TestLosslessSimulate(t *testing.T) {
	e := newEnv(t)
	steps := []string{
		"lossless simulate --senders 4 --duration 1ms --seed 3",
		"lossless simulate --senders 2 --tcp-senders 2 --duration 500us --warmup 100us -o json",
		"lossless simulate --senders 1 --tcp-senders 1 --speed 25G --cable 40 --duration 500us -o yaml",
		"lossless simulate --from-server --senders 2 --duration 500us",
		// XOFF threshold under Kmax: PFC pauses the senders.
		"lossless simulate --profile testdata/simulate_profile.yaml --port leaf --duration 1ms",
	}
	for _, args := range steps {
		if code := e.run("", strings.Fields(args)...); code != 0 {
			t.Errorf("inofctl %s: exit %d, want 0", args, code)
		}
	}
	e.golden("simulate")
}

// --plot writes a well-formed SVG document with the two panels' lines.
func TestLosslessSimulatePlot(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(t.TempDir(), "incast.svg")
	if code := e.run("", "lossless", "simulate", "--senders", "3", "--duration", "500us", "--plot", path); code != 0 {
		t.Fatalf("exit %d:\n%s", code, e.out.String())
	}
	if !strings.Contains(e.out.String(), "3 RoCE + 0 TCP to 1") {
		t.Errorf("no result table printed:\n%s", e.out.String())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var root string
	polylines := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Space + " " + se.Name.Local
			}
			if se.Name.Local == "polyline" {
				polylines++
			}
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Errorf("root element %q, want svg in the SVG namespace", root)
	}
	// One line for the queue, one per flow.
	if polylines != 1+3 {
		t.Errorf("%d polylines, want 4", polylines)
	}
}

// Bad flags are usage errors (exit 2) reported before anything runs; a
// profile that cannot be read or a plot that cannot be written fails the
// command (exit 1) and leaves no file behind.
func TestLosslessSimulateErrors(t *testing.T) {
	e := newEnv(t)
	steps := []struct {
		args string
		code int
	}{
		{"lossless simulate --plot incast.png", 2},
		{"lossless simulate --plot incast.pdf", 2},
		{"lossless simulate --speed 30G", 2},
		{"lossless simulate --speed fast", 2},
		{"lossless simulate --senders 0", 2},
		{"lossless simulate --senders -1", 2},
		{"lossless simulate --senders 1000 --tcp-senders 25", 2},
		{"lossless simulate --duration 0s", 2},
		{"lossless simulate --duration 10xs", 2},
		{"lossless simulate --duration 1ms --warmup 1ms", 2},
		{"lossless simulate --profile testdata/simulate_profile.yaml --from-server", 2},
		{"lossless simulate --profile testdata/simulate_profile.yaml --port spine", 2},
		{"lossless simulate extra", 2},
		{"lossless simulate --profile testdata/missing.yaml", 1},
		{"lossless simulate --profile testdata/walkthrough.golden", 1},
		{"lossless simulate --duration 100us --plot testdata/missing/incast.svg", 1},
	}
	for _, s := range steps {
		if code := e.run("", strings.Fields(s.args)...); code != s.code {
			t.Errorf("inofctl %s: exit %d, want %d", s.args, code, s.code)
		}
	}
	for _, name := range []string{"incast.png", "incast.pdf"} {
		if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("refused --plot %s: the file exists (%v)", name, err)
		}
	}
	e.golden("simulate_errors")
}
