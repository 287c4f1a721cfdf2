package e2e

import (
	"testing"
	"time"
)

func TestParseLoadavg(t *testing.T) {
	l, err := parseLoadavg("1.25 0.50 3.00 4/130 14311\n")
	if err != nil {
		t.Fatal(err)
	}
	if l != [3]float64{1.25, 0.5, 3} {
		t.Errorf("got %v", l)
	}
	for _, bad := range []string{"", "1.0 2.0", "1.0 x 2.0"} {
		if _, err := parseLoadavg(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestCPUModel(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nprocessor\t: 1\nmodel name\t: other\n"
	if got := cpuModel(info); got != "Intel(R) Xeon(R) Processor" {
		t.Errorf("got %q", got)
	}
	if got := cpuModel("processor: 0\n"); got != "unknown" {
		t.Errorf("got %q", got)
	}
}

func TestMachineRow(t *testing.T) {
	r := Machine{NProc: 2, CPU: "X", Load: [3]float64{1.5, 2, 3}}.Row("start")
	if r.Group != "machine" || r.Value != 1.5 || r.Note != "nproc 2, X, load 1/5/15 min 1.50 2.00 3.00" {
		t.Errorf("row %+v", r)
	}
}

func TestStatCPU(t *testing.T) {
	// pid (comm with spaces) state ppid … utime=250 stime=50 …
	stat := "1234 (ino fd) S 1 1234 1234 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 12 0 100 0 0"
	d, err := statCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if d != 3*time.Second {
		t.Errorf("got %v, want 3s", d)
	}
	for _, bad := range []string{"1234 no parens", "1 (x) S 1 2", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 5 0"} {
		if _, err := statCPU(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestNodeOf(t *testing.T) {
	cmd := "/bin/inofd\x00--role\x00switch\x00--config\x00/tmp/inof-topo-1/leaf1/leaf1.yaml\x00"
	if n, ok := nodeOf(cmd, "/tmp/inof-topo-1"); !ok || n != "leaf1" {
		t.Errorf("got %q %v", n, ok)
	}
	if _, ok := nodeOf(cmd, "/tmp/inof-topo-2"); ok {
		t.Error("matched another fabric")
	}
	if _, ok := nodeOf("/bin/inofd\x00--config\x00/tmp/inof-topo-1/leaf1/other.yaml", "/tmp/inof-topo-1/"); ok {
		t.Error("matched a file that is not the node's configuration")
	}
}
