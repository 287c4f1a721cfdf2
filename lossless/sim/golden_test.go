package sim

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openinof/inof/lossless"
)

// TestGoldenSVG keeps testdata/incast8to1.svg, the example picture
// docs/simulator.md explains, in step with the code. Regenerate it with
// SIM_UPDATE_GOLDEN=1.
func TestGoldenSVG(t *testing.T) {
	p := lossless.Default()
	s, err := FromProfile(p, p.Ports[0], 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Duration, s.Warmup, s.SampleEvery = 2*time.Millisecond, 500*time.Microsecond, 10*time.Microsecond
	var got bytes.Buffer
	if err := mustRun(t, s).WriteSVG(&got); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "incast8to1.svg")
	if os.Getenv("SIM_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with SIM_UPDATE_GOLDEN=1)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("%s differs from this run; regenerate with SIM_UPDATE_GOLDEN=1 if the change is intended", path)
	}
}
